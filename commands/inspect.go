package commands

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tidwall/gjson"
	"github.com/urfave/cli/v2"

	"agt/hosts"
	"agt/spawn"
	"agt/state"
	"agt/stream"
	"agt/termsafe"
)

func inspectCommand() *cli.Command {
	return &cli.Command{
		Name:  "inspect",
		Usage: "show everything agt knows of agents: argv, environment, workspace, logs, restarts",
		UsageText: "agt inspect [--json | --format T] NAME...\n\n" +
			"Shows everything agt knows of each agent: a view on a terminal, one JSON object per agent\n" +
			"otherwise.\n\n" +
			"EXAMPLES:\n" +
			"   agt inspect fix-auth\n" +
			"   agt inspect fix-auth | jq -r .files.stdout\n" +
			"   agt inspect --format '{{.workspace.branch}}' fix-auth",
		Description: helpText("inspect"),
		Flags:       []cli.Flag{jsonFlag(), formatFlagOf("inspect", inspectFields(), "{{.name}} {{.cwd}}")},
		Action: func(c *cli.Context) error {
			out, err := outputFor(c)
			if err != nil {
				return err
			}
			agents, err := targets(c, "agt inspect NAME...", false)
			if err != nil {
				return err
			}
			for i, a := range agents {
				r := inspect(a)
				if out.mode != modeTable {
					if err := out.item(nil, r.appendJSON(nil)); err != nil {
						return err
					}
					continue
				}
				if i > 0 {
					fmt.Fprintln(out.w)
				}
				if err := r.print(out); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

// inspectResult is one agent as inspect shows it: its status (the fields statusFields shows
// inspect), and what its record adds.
type inspectResult struct {
	*state.Status
	inspectRecord
}

// inspectRecord is what inspect shows of an agent's record, after its status.
type inspectRecord struct {
	Argv        []string       `json:"argv"` // of the last start, as run; the record's template before any
	Cwd         string         `json:"cwd"`
	Env         []string       `json:"env"` // the names of the variables --env gave it (values stay in the record)
	Sandbox     *state.Sandbox `json:"sandbox,omitempty"`
	Restart     string         `json:"restart"`
	MaxRestarts int            `json:"max_restarts"`
	StopTimeout string         `json:"stop_timeout"`
	Files       inspectFiles   `json:"files"`
	// Conversation: it takes turns (--converse, ACP kinds): spawn --wait over a host waits
	// for its first turn, not its end.
	Conversation bool `json:"conversation,omitempty"`
}

// inspectFields are the fields inspect prints, for its --format help and templates.
func inspectFields() []string {
	return append(viewFields(inInspect), jsonFields(reflect.TypeOf(inspectRecord{}))...)
}

// appendJSON appends r as one JSON object: its status fields, then its record's.
func (r *inspectResult) appendJSON(b []byte) []byte {
	b = appendStatus(b, r.Name, r.Status, inInspect)
	rec, err := json.Marshal(&r.inspectRecord)
	if err != nil || len(rec) < 2 {
		return append(b, '}')
	}
	return append(append(b, ','), rec[1:]...)
}

// inspectFiles are the paths of an agent's record and logs.
type inspectFiles struct {
	Dir        string `json:"dir"`
	Spec       string `json:"spec"`
	Status     string `json:"status"`
	Events     string `json:"events"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	Supervisor string `json:"supervisor"`
}

func inspect(a *state.Agent) *inspectResult {
	st := spawn.Observe(a)
	r := &inspectResult{Status: st, inspectRecord: inspectRecord{
		Cwd: st.Dir, Env: []string{}, Conversation: conversation(a),
		Files: inspectFiles{
			Dir: a.Dir, Spec: a.Path(state.SpecFile), Status: a.Path(state.StatusFile),
			Events: a.Path(state.EventsFile), Stdout: a.Path(state.StdoutLog),
			Stderr: a.Path(state.StderrLog), Supervisor: a.Path(state.SupervisorLog),
		},
	}}
	if st.CostUSD != nil {
		st.CostUSD = roundUSD(*st.CostUSD)
	}
	if stream.IsFinal(st.State) || st.State == stream.Lost {
		st.PID, st.SupervisorPID = 0, 0
	}
	if spec, err := a.ReadSpec(); err == nil {
		st.Kind, r.Argv, r.Restart, r.MaxRestarts = spec.Kind, spec.Argv, spec.Restart, spec.MaxRestarts
		r.StopTimeout = time.Duration(spec.StopTimeout).String()
		if r.Cwd == "" {
			r.Cwd = spec.Cwd
		}
		if len(st.Workspace) == 0 {
			st.Workspace = spec.Workspace
		}
		r.Sandbox = spec.Sandbox
		for _, kv := range spec.Env {
			k, _, _ := strings.Cut(kv, "=")
			r.Env = append(r.Env, k)
		}
	}
	// The argv as run: the last spawned event's, with its tokens expanded.
	if line, _ := state.LastLine(a.Path(state.EventsFile), 8<<20, func(l []byte) bool {
		return gjson.GetBytes(l, "type").String() == stream.TypeSpawned
	}); line != nil {
		var argv []string
		for _, v := range gjson.GetBytes(line, "argv").Array() {
			argv = append(argv, v.String())
		}
		if len(argv) > 0 {
			r.Argv = argv
		}
	}
	if r.Argv == nil {
		r.Argv = []string{}
	}
	return r
}

// print writes the human view: one "key  value" line each.
func (r *inspectResult) print(out *output) error {
	home, _ := os.UserHomeDir()
	now := time.Now()
	tw := tabwriter.NewWriter(out.w, 0, 4, 2, ' ', 0)
	row := func(k, format string, args ...any) {
		fmt.Fprintf(tw, "%s\t%s\n", k, termsafe.Line(fmt.Sprintf(format, args...))) // a record holds what an agent wrote
	}
	state := r.State
	if r.Reason != "" {
		state += " (" + r.Reason + ")"
	}
	row("name", "%s", r.Name)
	row("kind", "%s", dash(r.Kind))
	row("state", "%s for %s", state, since(r.Since, now))
	if r.Error != "" && r.Error != r.Reason {
		row("error", "%s", firstLine(r.Error))
	}
	if r.PID > 0 {
		row("pid", "%d (supervisor %d)", r.PID, r.SupervisorPID)
	}
	row("argv", "%s", hosts.Words(r.Argv))
	row("dir", "%s", tildePath(r.Cwd, home))
	if where := workspaceLine(gjson.ParseBytes(r.Workspace)); where != "" {
		row("workspace", "%s", tildePath(where, home))
	}
	if len(r.Env) > 0 {
		row("env", "%s", strings.Join(r.Env, ", "))
	}
	if r.Sandbox != nil {
		row("sandbox", "%s", sandboxLine(r.Sandbox, home))
	}
	restarts := fmt.Sprintf("%d (policy %s, at most %d in a row; stop grace %s)", r.Restarts, dash(r.Restart), r.MaxRestarts, dash(r.StopTimeout))
	row("restarts", "%s", restarts)
	for i := len(r.History) - 1; i >= 0 && i >= len(r.History)-3; i-- {
		h := r.History[i]
		end := h.Signal
		if h.Code != nil {
			end = fmt.Sprintf("exit code %d", *h.Code)
		}
		row("", "ended %s ago: %s", since(h.At, now), end)
	}
	if r.SessionID != "" || r.Model != "" {
		row("session", "%s", strings.TrimSpace(dash(r.SessionID)+" "+modelNote(r.Model)))
	}
	if r.Turns > 0 || r.CostUSD != nil {
		usage := fmt.Sprintf("%d turn%s, %s in / %s out tokens", r.Turns, plural(r.Turns),
			thousands(r.Usage.InputTokens+r.Usage.CacheReadTokens+r.Usage.CacheWriteTokens), thousands(r.Usage.OutputTokens))
		if r.CostUSD != nil {
			usage += fmt.Sprintf(", $%.4f", *r.CostUSD)
		}
		row("usage", "%s", usage)
	}
	row("logs", "events  %s", tildePath(r.Files.Events, home))
	row("", "stdout  %s", tildePath(r.Files.Stdout, home))
	row("", "stderr  %s", tildePath(r.Files.Stderr, home))
	row("", "agt     %s", tildePath(r.Files.Supervisor, home))
	return tw.Flush()
}

func modelNote(model string) string {
	if model == "" {
		return ""
	}
	return "(model " + model + ")"
}
