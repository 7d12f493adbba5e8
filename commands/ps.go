package commands

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"agt/spawn"
	"agt/state"
	"agt/stream"
	"agt/termsafe"
)

func psCommand() *cli.Command {
	return &cli.Command{
		Name:  "ps",
		Usage: "list agents and their states",
		UsageText: "agt ps [--state STATE] [-q] [--json | --format TEMPLATE] [NAME...]\n\n" +
			"Lists agents, a table on a terminal and one JSON object per agent otherwise; it never\n" +
			"starts a process and never waits, so it fits in a shell prompt.\n\n" +
			"EXAMPLES:\n" +
			"   agt ps\n" +
			"   agt ps --state waiting -q\n" +
			"   agt ps --format '{{.name}} {{.state}}'",
		Description: helpText("ps"),
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "state", Usage: "only agents in this `STATE` (repeatable)"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print names only"},
			jsonFlag(),
			&cli.BoolFlag{Name: "watch", Hidden: true, Usage: "stream the rows as they change (what agt top asks of a host)"},
			formatFlagOf("ps", append(viewFields(inPs), "waiting_for"), "{{.name}} {{.state}}"),
		},
		Action: runPs,
	}
}

// psRow is one agent as ps shows it: its name and its status (nil for ps -q, which needs no
// status). Which fields ps shows, under which names, is statusFields'.
type psRow struct {
	Name string
	*state.Status
	// WaitingFor is what the agent waits on a person for (spawn.WaitingFor), null when nobody:
	// read from its inbox, not its status.
	WaitingFor *spawn.Waiting
}

func runPs(c *cli.Context) error {
	if c.Bool("watch") {
		return runPsWatch(c)
	}
	states := map[string]bool{}
	for _, s := range c.StringSlice("state") {
		if !addStates(states, s) {
			return usagef(c, "--state %q: not a state; want one of starting, running, waiting, stale, restarting, stopping, stopped, exited, failed, lost, unknown", s)
		}
	}
	out, err := outputFor(c)
	if err != nil {
		return err
	}
	agents, err := targets(c, "", true)
	if err != nil {
		return err
	}
	return listAgents(out, agents, states, c.Bool("quiet"))
}

// addStates adds the comma-separated states in s to set; false when one is not a state.
func addStates(set map[string]bool, s string) bool {
	for _, s := range strings.Split(s, ",") {
		if !stream.Known(s) && s != spawn.Unknown {
			return false
		}
		set[s] = true
	}
	return true
}

// FastPs runs the everyday forms of ps without the CLI library: agt [--host local] [--run-dir
// DIR] ps [-q|--quiet] [--json] [--state STATE]... [NAME...]. It returns false, having done nothing,
// for anything else (help, --format, a bad state or name, a flag after a name), which the CLI
// library then runs, and reports. Setting the library up costs about a tenth of a ps in a
// shell prompt, against the same listing code.
func FastPs(args []string) (bool, error) {
	return fastPs(args, os.Stdout, os.Getenv)
}

func fastPs(args []string, w io.Writer, getenv func(string) string) (bool, error) {
	i, runDir, host := 1, getenv("AGT_RUN_DIR"), getenv("AGT_HOST")
	// agt on another host runs agt --host local --run-dir DIR ps --json here.
	if i+1 < len(args) && args[i] == "--host" {
		host, i = args[i+1], i+2
	}
	if i < len(args) && args[i] == "--run-dir" && i+1 < len(args) {
		runDir, i = args[i+1], i+2
	} else if i < len(args) && strings.HasPrefix(args[i], "--run-dir=") {
		runDir, i = strings.TrimPrefix(args[i], "--run-dir="), i+1
	}
	if i >= len(args) || args[i] != "ps" || getenv("AGT_PS_FORMAT") != "" || host != "" && host != "local" {
		return false, nil
	}
	jsonOut := false
	if v := getenv("AGT_JSON"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return false, nil
		}
		jsonOut = b
	}
	states, quiet := map[string]bool{}, false
	var names []string
	for i++; i < len(args); i++ {
		a := args[i]
		switch {
		case len(names) > 0 && strings.HasPrefix(a, "-"):
			return false, nil // a flag after a name: the library's usage error
		case a == "-q" || a == "--quiet":
			quiet = true
		case a == "--json":
			jsonOut = true
		case a == "--state" && i+1 < len(args) && addStates(states, args[i+1]):
			i++
		case strings.HasPrefix(a, "--state=") && addStates(states, strings.TrimPrefix(a, "--state=")):
		case strings.HasPrefix(a, "-") || state.ValidateName(a) != nil:
			return false, nil
		default:
			names = append(names, a)
		}
	}
	out := &output{w: w, mode: modeJSON}
	if !jsonOut && isTerminal(w) {
		out.mode, out.color = modeTable, getenv("NO_COLOR") == ""
	}
	root, err := state.ResolveRoot(runDir)
	if err != nil {
		return true, err
	}
	d, err := state.Open(root)
	if err != nil {
		return true, err
	}
	agents, err := agentsNamed(d, names)
	if err != nil {
		return true, err
	}
	return true, listAgents(out, agents, states, quiet)
}

// listAgents prints the agents, those in states only when states is not empty: their names
// only when quiet, else as out says.
func listAgents(out *output, agents []*state.Agent, states map[string]bool, quiet bool) error {
	rows := make([]psRow, 0, len(agents))
	for _, a := range agents {
		if quiet && len(states) == 0 {
			rows = append(rows, psRow{Name: a.Name}) // names of all: no status to read
			continue
		}
		st := spawn.Observe(a)
		if len(states) > 0 && !states[st.State] {
			continue
		}
		if st.CostUSD != nil {
			st.CostUSD = roundUSD(*st.CostUSD) // sums of the agents' floats carry noise
		}
		rows = append(rows, psRow{a.Name, st, spawn.WaitingFor(a, st)})
	}
	if quiet {
		var b strings.Builder
		for _, r := range rows {
			b.WriteString(termsafe.Line(r.Name))
			b.WriteByte('\n')
		}
		_, err := io.WriteString(out.w, b.String())
		return err
	}
	if out.mode == modeTable {
		header, table := psTable(rows, out.color)
		return out.table(header, table)
	}
	// One buffered write for all rows: ps runs in shell prompts.
	buf := make([]byte, 0, 512*len(rows))
	for i := range rows {
		if out.mode == modeTemplate {
			if err := out.item(nil, rows[i].appendJSON(nil)); err != nil {
				return err
			}
			continue
		}
		buf = append(rows[i].appendJSON(buf), '\n')
	}
	_, err := out.w.Write(buf)
	return err
}

// appendJSON appends r as ps shows it (statusFields, then what it waits for), without
// reflection: ps runs in shell prompts.
func (r *psRow) appendJSON(b []byte) []byte {
	b = appendStatus(b, r.Name, r.Status, inPs)
	b = append(b, `,"waiting_for":`...)
	if w := r.WaitingFor; w == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"reason":`...)
		b = stream.AppendString(b, w.Reason)
		if w.ID != "" {
			b = append(b, `,"id":`...)
			b = stream.AppendString(b, w.ID)
			b = append(b, `,"tool":`...)
			b = stream.AppendString(b, w.Tool)
			if len(w.Input) > 0 {
				b = stream.AppendCompact(append(b, `,"input":`...), w.Input)
			}
			b = append(b, `,"pending":`...)
			b = strconv.AppendInt(b, int64(w.Pending), 10)
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

// psTable renders the rows; a COST column appears when any agent reports a cost.
func psTable(rows []psRow, color bool) ([]string, [][]string) {
	header := []string{"NAME", "KIND", "STATE", "REASON", "FOR", "PID", "RESTARTS"}
	withCost, withGroup := false, false
	for _, r := range rows {
		withCost = withCost || r.CostUSD != nil || r.MaxCost > 0
		withGroup = withGroup || r.Group != ""
	}
	if withCost {
		header = append(header, "COST")
	}
	if withGroup {
		header = append(header, "GROUP") // spawn --count: the tries at one task, NAME-1…NAME-N
	}
	header = append(header, "DIR")
	home, _ := os.UserHomeDir()
	now := time.Now()
	out := make([][]string, len(rows))
	for i, r := range rows {
		pid := "-"
		if r.PID > 0 && !stream.IsFinal(r.State) && r.State != stream.Lost && r.State != stream.Restarting {
			pid = strconv.Itoa(r.PID)
		}
		dir := tildePath(r.Dir, home)
		line := []string{r.Name, dash(r.Kind), stateCell(r.State, color), dash(r.why(now)), since(r.Since, now), pid, strconv.Itoa(r.Restarts)}
		if withCost {
			cost := "-"
			if r.CostUSD != nil {
				cost = usd(*r.CostUSD)
			}
			if r.MaxCost > 0 {
				cost += "/" + usd(r.MaxCost) // spent against the budget
			}
			line = append(line, cost)
		}
		if withGroup {
			line = append(line, dash(r.Group))
		}
		out[i] = append(line, dash(dir))
	}
	return header, out
}

// idleShown is the silence after which ps shows a running agent's idle time.
const idleShown = time.Minute

// reasonWidth bounds the REASON column: an agent's message can be long.
const reasonWidth = 60

// why is the REASON column: the reason, with the agent's own message for a failure, what a
// stalled turn was doing, or how long a running command has been quiet.
func (r *psRow) why(now time.Time) string {
	s := r.Reason
	switch {
	case r.WaitingFor != nil && r.WaitingFor.Tool != "":
		s = waitingLine(r.WaitingFor)
		if n := r.WaitingFor.Pending - 1; n > 0 {
			s = fmt.Sprintf("%s (+%d more)", s, n)
		}
	case r.State == stream.Stale && r.Reason == stream.ReasonStalled && !r.Activity.IsZero():
		s += ": no output for " + since(r.Activity, now)
		if r.Doing != "" {
			s += " during " + r.Doing
		}
	case r.Error != "" && wordIndex(r.Reason, r.Error) < 0 && (r.State == stream.Failed || r.State == stream.Restarting):
		if s != "" {
			s += ": "
		}
		s += r.Error
	case r.State == stream.Running && s == "" && !r.Activity.IsZero() && now.Sub(r.Activity) >= idleShown:
		s = "idle " + since(r.Activity, now)
	}
	return safeLine(s, reasonWidth) // whatever the agent wrote
}

// stateCell is the STATE column, coloured on a terminal: yellow for an agent that needs a
// person, red for a failure, green at work, the terminal's own colour otherwise. Every cell
// gets escapes of the same length, so that the table's columns still line up.
func stateCell(st string, color bool) string {
	if !color {
		return st
	}
	sgr := "\x1b[39m"
	switch st {
	case stream.Waiting, stream.Stale:
		sgr = sgrYellow
	case stream.Failed, stream.Lost:
		sgr = sgrRed
	case stream.Running:
		sgr = sgrGreen
	}
	return sgr + st + sgrReset
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// since renders the time since t the way ps does: 42s, 5m, 3h, 2d.
func since(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}
