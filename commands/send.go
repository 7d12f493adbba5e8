package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/urfave/cli/v2"

	"agt/spawn"
	"agt/state"
	"agt/stream"
)

func sendCommand() *cli.Command {
	return &cli.Command{
		Name:  "send",
		Usage: "give a conversation agent its next turn, or type into a terminal agent",
		UsageText: "agt send [--wait] [--queue|--steer] NAME MESSAGE|-\n" +
			"agt send --keys NAME KEYS\n\n" +
			"Delivers a user message to an agent spawned with --converse that waits for input: the next\n" +
			"turn of the same session. - reads the message from stdin. It refuses when the agent is busy,\n" +
			"unless --queue, which delivers it when the running turn ends, or --steer, which adds it to the\n" +
			"running turn (a Codex conversation takes it there; others refuse). The message is never written to\n" +
			"events or logs. --wait prints that turn's events and exits 0 on an ok result, 1 on a failed one,\n" +
			"4 when the turn stops to ask you (a permission, a plan: agt approve or deny answers).\n" +
			"To an agent spawned with --tty, MESSAGE is typed and Enter pressed (several lines as one\n" +
			"bracketed paste); it fails unless the agent shows something within 3s. --keys types KEYS as they\n" +
			"are, where <Enter> <Esc> <Tab> <BS> <Space> <Up> <Down> <Left> <Right> <Home> <End> <PgUp> <PgDn>\n" +
			"<Del> are those keys, <C-x> is Ctrl-X and <lt> a literal <.\n\n" +
			"EXAMPLES:\n" +
			"   agt send fix-auth 'now add a regression test'\n" +
			"   agt send --wait fix-auth 'commit it' | jq -c 'select(.type==\"result\")'\n" +
			"   git diff | agt send --queue review -\n" +
			"   agt send --steer fix-auth 'leave the tests alone'\n" +
			"   agt send --keys editor 'ihello<Esc>:w<Enter>'",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "wait", Usage: "print the turn's events and exit with how it ended"},
			&cli.BoolFlag{Name: "queue", Usage: "deliver it when the running turn ends instead of refusing"},
			&cli.BoolFlag{Name: "steer", Usage: "add it to the running turn instead of refusing (Codex)"},
			&cli.BoolFlag{Name: "keys", Usage: "type KEYS into a terminal agent (spawn --tty), <Enter> and the like for keys"},
			jsonFlag(),
		},
		Action: runSend,
	}
}

func runSend(c *cli.Context) error {
	// Flags after NAME were moved before it (Args); what follows NAME now is the message,
	// which may start with a dash after --.
	args := c.Args().Slice()
	if len(args) > 1 && args[1] == "--" {
		args = append(args[:1:1], args[2:]...)
	}
	if c.Bool("keys") {
		return sendKeys(c, args)
	}
	if len(args) != 2 {
		return usagef(c, "want NAME and MESSAGE: agt send [--wait] [--queue] NAME MESSAGE|-")
	}
	if c.Bool("queue") && c.Bool("steer") {
		return usagef(c, "--queue and --steer do not mix: the message waits for the turn's end, or goes into the turn")
	}
	msg, err := readMessage(c, args[1])
	if err != nil {
		return err
	}
	a, err := oneAgent(c, args[0])
	if err != nil {
		return err
	}
	if err := checkBudget(c); err != nil {
		return err
	}
	if spec, err := a.ReadSpec(); err == nil && spec.TTY && (c.Bool("wait") || c.Bool("queue") || c.Bool("steer")) {
		return usagef(c, "%s runs on a terminal, which has no turns to --wait, --queue or --steer for; agt send %s MESSAGE types it now", a.Name, a.Name)
	}
	r, err := spawn.Control(c.Context, a, spawn.Request{Op: spawn.OpSend, Text: msg, Queue: c.Bool("queue"), Steer: c.Bool("steer")})
	if err != nil {
		return controlError(a, err)
	}
	if !c.Bool("wait") {
		if isTerminal(c.App.ErrWriter) {
			how := "sent to"
			if r.Queued {
				how = "queued for"
			}
			fmt.Fprintf(c.App.ErrWriter, "%s %s (%d bytes)\n", how, a.Name, len(msg))
		}
		return nil
	}
	out, err := outputFor(c)
	if err != nil {
		return err
	}
	skip := 0
	if r.Queued {
		skip = 1 // the running turn's result comes first
	}
	out.status = startStatus(c.App.ErrWriter, func() string { return "waiting for the turn of " + stateLine(a) })
	defer out.status.stop()
	return printTurn(c.Context, out, a, r.Seq, skip)
}

// readMessage is send's MESSAGE: as given, or read from stdin for -; never empty.
func readMessage(c *cli.Context, msg string) (string, error) {
	if msg == "-" {
		b, err := io.ReadAll(io.LimitReader(os.Stdin, 16<<20))
		if err != nil {
			return "", fmt.Errorf("read the message from stdin: %w", err)
		}
		msg = string(b)
	}
	if strings.TrimSpace(msg) == "" {
		return "", usagef(c, "the message is empty; say something, or give it on stdin with -")
	}
	return msg, nil
}

// sendMessage gives a its next turn, msg (queued after the running one when queue is set):
// agt send, and top's key.
func sendMessage(ctx context.Context, a *state.Agent, msg string, queue bool) (*spawn.Reply, error) {
	r, err := spawn.Control(ctx, a, spawn.Request{Op: spawn.OpSend, Text: msg, Queue: queue})
	if err != nil {
		return nil, controlError(a, err)
	}
	return r, nil
}

// sendKeys is send --keys: keystrokes into a terminal agent.
func sendKeys(c *cli.Context, args []string) error {
	if c.Bool("wait") || c.Bool("queue") {
		return usagef(c, "--keys types at once: it takes no --wait or --queue")
	}
	if len(args) != 2 {
		return usagef(c, "want NAME and KEYS: agt send --keys NAME KEYS")
	}
	keys, err := parseKeys(args[1])
	if err != nil {
		return usagef(c, "%v", err)
	}
	a, err := oneAgent(c, args[0])
	if err != nil {
		return err
	}
	if _, err := spawn.Control(c.Context, a, spawn.Request{Op: spawn.OpKeys, Text: string(keys)}); err != nil {
		return controlError(a, err)
	}
	return nil
}

// errTurnFailed ends send --wait with exit 1 after a failed turn, quietly: its events say why.
var errTurnFailed = cli.Exit("", 1)

// exitNeedsYou is the exit status of send --wait and spawn --wait when the turn stopped to ask
// its user (a permission, a plan): agt permissions lists what, agt approve and deny answer.
const exitNeedsYou = 4

// printTurn prints a's events after seq until the result of a turn (after skip results), or
// until the turn stops to ask its user, and says with its error how the turn ended: nil for an
// ok result, exit 1 for a failed one, exitNeedsYou with a hint for a question.
func printTurn(ctx context.Context, out *output, a *state.Agent, seq int64, skip int) error {
	var ok, done bool
	asks := ""
	fn := func(line []byte) error {
		if done || gjson.GetBytes(line, "seq").Int() <= seq {
			return nil
		}
		if err := printEvent(out, line); err != nil {
			return err
		}
		switch gjson.GetBytes(line, "type").Str {
		case "state":
			why := gjson.GetBytes(line, "reason").Str
			if gjson.GetBytes(line, "to").Str == stream.Waiting && (why == stream.ReasonPermission || why == stream.ReasonPlan) && skip == 0 {
				asks, done = why, true
			}
		case "result":
			if skip > 0 {
				skip--
				return nil
			}
			ok, done = gjson.GetBytes(line, "ok").Bool(), true
		}
		// An exit is no end: a conversation of turn processes runs one per turn. An agent
		// that ends without the turn's result ends the follow below.
		return nil
	}
	path := a.Path(state.EventsFile)
	cursor, _, err := state.ReadLogCursor(path, fn)
	if err != nil {
		return err
	}
	if !done {
		err = state.FollowLogFrom(ctx, path, cursor, fn, nil, func() bool { return done || ended(a) })
		if err != nil {
			return err
		}
	} else {
		cursor.Close()
	}
	if asks != "" {
		return cli.Exit(fmt.Sprintf("%s waits for you (%s)\nhint: 'agt permissions %s' shows what it asks; 'agt approve %s' or 'agt deny %s' answers", a.Name, asks, a.Name, a.Name, a.Name), exitNeedsYou)
	}
	if !ok {
		return errTurnFailed
	}
	return nil
}

// checkBudget refuses a new turn once the run directory's agents spent max_cost_total.
func checkBudget(c *cli.Context) error {
	d, err := openRunDir(c)
	if err != nil {
		return err
	}
	return budgetLeft(d)
}

// oneAgent opens the agent name names.
func oneAgent(c *cli.Context, name string) (*state.Agent, error) {
	if err := state.ValidateName(name); err != nil {
		return nil, cli.Exit(err, 2)
	}
	d, err := openRunDir(c)
	if err != nil {
		return nil, err
	}
	agents, err := agentsNamed(d, []string{name})
	if err != nil {
		return nil, err
	}
	return agents[0], nil
}

// controlError adds what to do to a refusal of the control channel.
func controlError(a *state.Agent, err error) error {
	if errors.Is(err, spawn.ErrNotRunning) {
		return withHint(err, fmt.Sprintf("run 'agt ps %s' to see how it ended", a.Name))
	}
	return err
}

// flagAfterName is flagsAfterName for the commands whose words after NAME are text (a message
// may start with a dash): only the command's own flags written after NAME count.
func flagAfterName(c *cli.Context, args []string) error {
	if len(args) == 0 {
		return nil
	}
	var flags, words []string
	for i := 1; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || lookupFlag(c.Command, a) == nil {
			words = append(words, a)
			continue
		}
		flags = append(flags, a)
		if takesValue(c.Command, a) && !strings.Contains(a, "=") && i+1 < len(args) {
			i++
			flags = append(flags, args[i])
		}
	}
	return misplacedFlags(c, flags, append([]string{args[0]}, words...))
}
