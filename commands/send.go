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
			"Gives a conversation agent its next turn, or types into a terminal agent.\n\n" +
			"EXAMPLES:\n" +
			"   agt send fix-auth 'now add a regression test'\n" +
			"   agt send --wait fix-auth 'commit it' | jq -c 'select(.type==\"result\")'\n" +
			"   git diff | agt send --queue review -\n" +
			"   agt send --steer fix-auth 'leave the tests alone'\n" +
			"   agt send --keys editor 'ihello<Esc>:w<Enter>'",
		Description: helpText("send"),
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "wait", Usage: "print the turn's events and exit with how it ended"},
			&cli.BoolFlag{Name: "queue", Usage: "deliver it when the running turn ends instead of refusing"},
			&cli.BoolFlag{Name: "steer", Usage: "add it to the running turn instead of refusing (Codex)"},
			&cli.BoolFlag{Name: "keys", Usage: "type KEYS into a terminal agent (spawn --tty), <Enter> and the like for keys"},
			&cli.BoolFlag{Name: "seqs", Hidden: true, Usage: "with --wait, first where the agent's log stood when the message was taken (what agt asks of a host)"},
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
	var r *spawn.Reply
	if c.Bool("wait") && c.Bool("queue") {
		// Its own turn, however many wait before it: the supervisor says where it began.
		r, err = spawn.SendQueued(c.Context, a, spawn.Request{Op: spawn.OpSend, Text: msg, Queue: true})
		err = sendError(a, err)
	} else {
		r, err = sendMessage(c.Context, a, spawn.Request{Op: spawn.OpSend, Text: msg, Queue: c.Bool("queue"), Steer: c.Bool("steer")})
	}
	if err != nil {
		return err // sendError's already
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
	if c.Bool("seqs") && out.mode == modeJSON {
		// The agt that sent it over a link resumes the turn from here if the link drops.
		fmt.Fprintf(out.w, "{\"agent\":%s,\"last_seq\":%d}\n", stream.AppendString(nil, a.Name), r.Seq)
	}
	out.status = startStatus(c.App.ErrWriter, func() string { return "waiting for the turn of " + stateLine(a) })
	defer out.status.stop()
	return printTurn(c.Context, out, a, r.Seq)
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

// sendMessage sends a the message of req (its next turn; queued after the running one, or into
// it, as req says): agt send, and top's key.
func sendMessage(ctx context.Context, a *state.Agent, req spawn.Request) (*spawn.Reply, error) {
	r, err := spawn.Control(ctx, a, req)
	if err != nil {
		return nil, sendError(a, err)
	}
	return r, nil
}

// sendError is controlError, saying of a message sent without an answer that its delivery is
// unknown: it may well have been delivered (R38).
func sendError(a *state.Agent, err error) error {
	if errors.Is(err, spawn.ErrNoAnswer) {
		return withHint(fmt.Errorf("delivery unknown: %w", err), fmt.Sprintf("a state event to running in 'agt tail -n 20 %s' says its turn began; send it again only if none did", a.Name))
	}
	return controlError(a, err)
}

// sendKeys is send --keys: keystrokes into a terminal agent.
func sendKeys(c *cli.Context, args []string) error {
	if c.Bool("wait") || c.Bool("queue") || c.Bool("steer") {
		return usagef(c, "--keys types at once: it takes no --wait, --queue or --steer")
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

// printTurn prints a's events after seq until the result of a turn, or until the turn stops to
// ask its user, and says with its error how the turn ended: nil for an ok result, exit 1 for a
// failed one, exitNeedsYou with a hint for a question.
func printTurn(ctx context.Context, out *output, a *state.Agent, seq int64) error {
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
			if gjson.GetBytes(line, "to").Str == stream.Waiting && (why == stream.ReasonPermission || why == stream.ReasonPlan) {
				asks, done = why, true
			}
		case "result":
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
