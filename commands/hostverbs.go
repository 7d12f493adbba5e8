package commands

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/urfave/cli/v2"

	"agt/hosts"
	"agt/termsafe"
)

// hostVerb is how one command runs when hosts are in play: which of its arguments name agents,
// and how its answers are shown. One row per command; a command without one runs here only.
type hostVerb struct {
	// names is how many leading arguments are agent names: -1 all, 0 none, 1 the first.
	names int
	// table renders the places' NDJSON answers on a terminal, with a HOST column; nil: each
	// place prints its own lines for people (--format table), which pass through.
	table func(out *output, lines [][]byte) error
	// run replaces the generic way (spawn, tail, attach, send, logs).
	run func(c *cli.Context, plan *hostPlan) error
	// spread: a bare NAME may go to any of several hosts; the command picks one (spawn).
	spread bool
	// stream: it may take as long as an agent does (wait): a connection of its own, not one
	// of the host's few shared sessions.
	stream bool
	// flagOnly: only a --host on the command line moves it, not $AGT_HOST (version: agt
	// asks a host's agt its version with no --host, whatever that host's shell exports).
	flagOnly bool
	// again: it asks for what the host keeps (wait), so a link that drops is asked again.
	again bool
}

// hostVerbs are the commands that run across hosts, by their path.
var hostVerbs = map[string]hostVerb{
	"ps":               {names: -1, table: psHostTable},
	"permissions":      {names: -1, table: permissionsHostTable},
	"agents":           {table: columnsTable(agentColumns)},
	"doctor":           {table: columnsTable(doctorColumns)},
	"workspaces":       {table: columnsTable(workspaceColumns)},
	"workspaces prune": {},
	"reap":             {names: -1},
	"stop":             {names: -1},
	"rm":               {names: -1},
	"restart":          {names: -1},
	"wait":             {names: -1, stream: true, again: true},
	"inspect":          {names: -1},
	"approve":          {names: 1},
	"deny":             {names: 1},
	"interrupt":        {names: 1},
	"logs":             {names: 1, run: logsOnHosts},
	"send":             {names: 1, run: sendOnHosts},
	"attach":           {names: 1, run: attachOnHosts},
	"tail":             {names: -1, run: tailOnHosts},
	"spawn":            {names: 1, run: spawnOnPlaces, spread: true},
	"diff":             {names: -1, run: diffOnHosts},
	"merge":            {names: 1},
	"top":              {run: topOnHosts},
	"serve":            {run: serveOnHosts},
	"version":          {flagOnly: true},
}

// addHosts gives agt its --host: on agt itself and on each command of hostVerbs, whose action
// then runs the command on the hosts when they are in play, and as before when not.
func addHosts(app *cli.App) {
	app.Flags = append(app.Flags, hostFlag(), endOnEOFFlag())
	before := app.Before
	app.Before = func(c *cli.Context) error {
		if c.Bool("end-on-eof") {
			c.Context = endOnEOF(c.Context)
		}
		if before != nil {
			return before(c)
		}
		return nil
	}
	app.Commands = append(app.Commands, hostsCommand())
	var wrap func(path string, cmds []*cli.Command)
	wrap = func(path string, cmds []*cli.Command) {
		for _, cmd := range cmds {
			p := strings.TrimSpace(path + " " + cmd.Name)
			if v, ok := hostVerbs[p]; ok && cmd.Action != nil {
				cmd.Flags = append(cmd.Flags, hostFlag())
				cmd.Action = onHosts(v, cmd.Action)
			} else if cmd.Action != nil {
				cmd.Action = hereOnly(p, cmd.Action)
			}
			wrap(p, cmd.Subcommands)
		}
	}
	wrap("", app.Commands)
}

// onHosts is a command's action that runs it on the hosts when they are in play.
func onHosts(v hostVerb, here cli.ActionFunc) cli.ActionFunc {
	return func(c *cli.Context) error {
		if v.flagOnly && hostsArg(c) == os.Getenv("AGT_HOST") {
			return here(c)
		}
		plan, err := planHosts(c, c.Args().Slice(), v.names, v.spread)
		if err != nil || plan == nil {
			if err != nil {
				return err
			}
			return here(c)
		}
		withHostField(c)
		if v.run != nil {
			return v.run(c, plan)
		}
		return runVerb(c, plan, v)
	}
}

// hereOnly is the action of a command that runs on this machine only: agt's --host given to
// it on the command line is refused, not ignored. $AGT_HOST is a default for the commands
// that take a host, and these run here whatever it says.
func hereOnly(path string, here cli.ActionFunc) cli.ActionFunc {
	return func(c *cli.Context) error {
		if arg := hostsArg(c); arg != "" && arg != hosts.Local && arg != os.Getenv("AGT_HOST") {
			if strings.HasPrefix(path, "hosts") {
				return usagef(c, "--host %s: name the hosts as arguments, as in agt %s %s", arg, path, strings.ReplaceAll(arg, ",", " "))
			}
			return usagef(c, "--host %s: agt %s runs on this machine only; on a host, run ssh HOST agt %s", arg, path, path)
		}
		return here(c)
	}
}

// runVerb is the generic way: each place runs the command with its own names, in parallel;
// their NDJSON comes back tagged with "host", or on a terminal each place's own lines for
// people, prefixed by the host when there are several.
func runVerb(c *cli.Context, plan *hostPlan, v hostVerb) error {
	out, err := outputFor(c)
	if err != nil {
		return err
	}
	flags, err := forwardFlags(c, "json", "format", "quiet")
	if err != nil {
		return err
	}
	rest := c.Args().Slice()
	if v.names >= 0 && v.names <= len(rest) {
		rest = rest[v.names:]
	} else {
		rest = nil
	}
	// A command without --json (approve) prints for people only.
	human := out.mode == modeTable && v.table == nil || lookupFlag(c.Command, "json") == nil
	mode := []string{"--json"}
	if human {
		mode = nil
		if lookupFlag(c.Command, "format") != nil {
			mode = []string{"--format=table"}
		}
	}
	if v.again {
		for i := range plan.groups {
			p := againPlace{Place: plan.groups[i].place, errw: c.App.ErrWriter}
			p.timeout, p.timed = againTimeout(c)
			plan.groups[i].place = p
		}
	}
	outs := runEach(c.Context, c.App.ErrWriter, plan.groups, !human, func(i int) *hosts.Call {
		return &hosts.Call{Args: joinArgs(c, flags, mode, plan.groups[i].names, rest), Stream: v.stream}
	})
	if human {
		for i, o := range outs {
			printPrefixed(out, o.place.Name(), o.raw, plan.groups[i].names, len(outs) > 1)
		}
		return hostExit(c, outs)
	}
	var lines [][]byte
	for _, o := range outs {
		lines = append(lines, o.lines...)
	}
	switch {
	case c.Bool("quiet") && lookupFlag(c.Command, "quiet") != nil:
		for _, l := range lines {
			fmt.Fprintln(out.w, qualified(hostOf(l), nameOf(l)))
		}
	case out.mode == modeTable:
		if err := v.table(out, lines); err != nil {
			return err
		}
	default:
		for _, l := range lines {
			if err := out.item(nil, l); err != nil {
				return err
			}
		}
	}
	return hostExit(c, outs)
}

// againTimeout is the time limit of a command asked again (wait --timeout), if it has one.
func againTimeout(c *cli.Context) (time.Duration, bool) {
	if lookupFlag(c.Command, "timeout") != nil && c.IsSet("timeout") {
		return flagDuration(c, "timeout"), true
	}
	return 0, false
}

// printPrefixed writes a place's lines for people: the agent it names (one of names) as
// HOST:NAME, with one host as with several; a line that names none after the host's name when
// several places answer. What a host prints is escaped: its agents' words never command the
// terminal.
func printPrefixed(out *output, host string, raw []byte, names []string, prefix bool) {
	for _, line := range strings.SplitAfter(string(raw), "\n") {
		if line == "" {
			continue
		}
		text, named := hostLine(termsafe.Text(strings.TrimSuffix(line, "\n")), host, names)
		if prefix && !named {
			text = host + ": " + text
		}
		fmt.Fprintln(out.w, text)
	}
}

// psHostTable is ps's table with a HOST column.
func psHostTable(out *output, lines [][]byte) error {
	rows := make([]psRow, 0, len(lines))
	hostsOf := make([]string, 0, len(lines))
	for _, l := range lines {
		var r psRow
		if json.Unmarshal(l, &r) != nil || r.Status == nil {
			continue
		}
		// "name" is the status's field in JSON, and waiting_for is written by hand: the row's
		// own fields have no tags.
		r.Name, r.WaitingFor = r.Status.Name, nil
		if w := gjson.GetBytes(l, "waiting_for"); w.IsObject() {
			json.Unmarshal([]byte(w.Raw), &r.WaitingFor)
		}
		for _, f := range []*string{&r.Name, &r.Kind, &r.State, &r.Reason, &r.Error, &r.Doing, &r.Dir, &r.SessionID, &r.Model, &r.Group} {
			*f = cell(*f)
		}
		rows = append(rows, r)
		hostsOf = append(hostsOf, hostOf(l))
	}
	header, table := psTable(rows, out.color)
	header, table = hostColumn(header, table, hostsOf)
	return out.table(header, table)
}

// permissionsHostTable is permissions' table with a HOST column, oldest request first.
func permissionsHostTable(out *output, lines [][]byte) error {
	sort.SliceStable(lines, func(i, j int) bool {
		return gjson.GetBytes(lines[i], "ts").Time().Before(gjson.GetBytes(lines[j], "ts").Time())
	})
	now := time.Now()
	table := make([][]string, 0, len(lines))
	hostsOf := make([]string, 0, len(lines))
	for _, l := range lines {
		var r permissionRow
		if json.Unmarshal(l, &r) != nil {
			continue
		}
		table = append(table, []string{cell(r.Agent), cell(r.ID), cell(r.Tool), cell(oneLine(string(r.Input), 60)), since(r.TS, now)})
		hostsOf = append(hostsOf, hostOf(l))
	}
	header, table := hostColumn([]string{"AGENT", "ID", "TOOL", "INPUT", "FOR"}, table, hostsOf)
	return out.table(header, table)
}

// column is one column of a table drawn from NDJSON objects.
type column struct {
	header string
	cell   func(gjson.Result) string
}

func field(path string) func(gjson.Result) string {
	return func(r gjson.Result) string { return dash(oneLine(r.Get(path).String(), 80)) }
}

func yesNo(path, yes, no string) func(gjson.Result) string {
	return func(r gjson.Result) string {
		if r.Get(path).Bool() {
			return yes
		}
		return no
	}
}

var agentColumns = []column{
	{"KIND", field("name")}, {"FORMAT", field("format")}, {"INSTALLED", yesNo("installed", "yes", "no")},
	{"PROMPT", field("prompt")}, {"FROM", yesNo("builtin", "built-in", "agt.toml")},
	{"ARGV", func(r gjson.Result) string {
		var argv []string
		for _, a := range r.Get("start").Array() {
			argv = append(argv, a.String())
		}
		return dash(oneLine(strings.Join(argv, " "), 80))
	}},
}

var doctorColumns = []column{{"CHECK", field("check")}, {"OK", yesNo("ok", "yes", "NO")}, {"WHAT IT MEANS", field("detail")}}

var workspaceColumns = []column{
	{"AGENT", field("agent")}, {"OWNER", yesNo("orphan", "orphan", "record")},
	{"CHANGES", func(r gjson.Result) string {
		switch {
		case r.Get("missing").Bool():
			return "missing"
		case r.Get("dirty").Bool():
			return "dirty"
		}
		return "clean"
	}},
	{"AHEAD", func(r gjson.Result) string {
		if n := r.Get("ahead"); n.Exists() && n.Int() >= 0 {
			return n.String()
		}
		return "-"
	}},
	{"BRANCH", func(r gjson.Result) string {
		if r.Get("type").String() == "jj" {
			return "jj:" + oneLine(r.Get("name").String(), 60)
		}
		return field("branch")(r)
	}},
	{"PATH", func(r gjson.Result) string {
		home, _ := os.UserHomeDir()
		return dash(tildePath(oneLine(r.Get("path").String(), 200), home))
	}},
}

// columnsTable renders NDJSON objects as a table of the given columns, after a HOST column.
func columnsTable(cols []column) func(out *output, lines [][]byte) error {
	return func(out *output, lines [][]byte) error {
		header := make([]string, len(cols))
		for i, col := range cols {
			header[i] = col.header
		}
		table := make([][]string, len(lines))
		hostsOf := make([]string, len(lines))
		for i, l := range lines {
			r := gjson.ParseBytes(l)
			for _, col := range cols {
				table[i] = append(table[i], cell(col.cell(r)))
			}
			hostsOf[i] = hostOf(l)
		}
		header, table = hostColumn(header, table, hostsOf)
		return out.table(header, table)
	}
}
