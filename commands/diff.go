package commands

import (
	"bytes"
	"fmt"
	"io"
	"strconv"

	"github.com/tidwall/gjson"
	"github.com/urfave/cli/v2"

	"agt/spawn"
	"agt/state"
	"agt/stream"
	"agt/workspace"
)

func diffCommand() *cli.Command {
	return &cli.Command{
		Name:  "diff",
		Usage: "show what an agent changed in its workspace, or compare several agents' changes",
		UsageText: "agt diff [--stat] [--json | --format T] NAME|PATTERN...\n\n" +
			"Shows what an agent changed in its workspace, as a Git diff, or compares several (--stat).\n\n" +
			"EXAMPLES:\n" +
			"   agt diff fix-auth\n" +
			"   agt diff fix-auth | git apply --check\n" +
			"   agt diff --stat 'fix-*'\n" +
			"   agt diff --json fix-auth | jq '.files[].path'",
		Description: helpText("diff"),
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "stat", Usage: "one row per agent: files, insertions, deletions, commits, merged, cost, result"},
			jsonFlag(),
			formatFlag("diff", diffRow{}, "{{.name}} {{.insertions}} {{.deletions}}"),
		},
		Action: runDiff,
	}
}

// diffRow is one agent's change as diff --stat and --json show it.
type diffRow struct {
	Name   string `json:"name"`
	State  string `json:"state"`
	Type   string `json:"type"` // git or jj
	Path   string `json:"path"`
	Branch string `json:"branch,omitempty"`
	Into   string `json:"into,omitempty"` // the branch the work merges into (git)
	Merged bool   `json:"merged"`
	*workspace.Change
	Result         string   `json:"result,omitempty"` // the first line of the agent's last result
	CostUSD        *float64 `json:"cost_usd"`
	Patch          *string  `json:"patch,omitempty"`
	PatchTruncated bool     `json:"patch_truncated,omitempty"`
}

// maxJSONPatch bounds the patch that diff --json carries.
const maxJSONPatch = 8 << 20

func runDiff(c *cli.Context) error {
	out, err := outputFor(c)
	if err != nil {
		return err
	}
	agents, err := targets(c, "agt diff [--stat] NAME...", false)
	if err != nil {
		return err
	}
	stat := c.Bool("stat")
	// The patch itself, in a pipe too (agt diff x | git apply), unless asked for JSON or a template.
	patchText := !stat && (out.mode == modeTable || out.mode == modeJSON && !c.Bool("json") && c.String("format") != "json")
	var rows []diffRow
	failed := false
	for i, a := range agents {
		ws, err := agentWorkspace(a)
		if err != nil {
			warn(c, "diff", a.Name, err)
			failed = true
			continue
		}
		var w io.Writer
		var buf *bytes.Buffer
		switch {
		case patchText:
			if len(agents) > 1 {
				if i > 0 {
					fmt.Fprintln(c.App.Writer)
				}
				fmt.Fprintf(c.App.Writer, "# agt diff %s: %s\n", a.Name, ws)
			}
			w = c.App.Writer
			if isTerminal(c.App.Writer) {
				w = &terminalSafe{w: c.App.Writer}
			}
		case !stat:
			buf = &bytes.Buffer{}
			w = &limitedBuffer{buf: buf, max: maxJSONPatch}
		}
		ch, err := workspace.Diff(c.Context, ws, w)
		if ts, ok := w.(*terminalSafe); ok {
			ts.Flush()
		}
		if err != nil {
			if c.Context.Err() != nil {
				return c.Context.Err()
			}
			warn(c, "diff", a.Name, err)
			failed = true
			continue
		}
		if patchText {
			continue
		}
		row := diffRowOf(c, a, ws, ch)
		if buf != nil {
			p := buf.String()
			row.Patch, row.PatchTruncated = &p, w.(*limitedBuffer).cut
		}
		if out.mode == modeTable {
			rows = append(rows, row)
		} else if err := out.item(row, nil); err != nil {
			return err
		}
	}
	if len(rows) > 0 {
		if err := out.table(diffTable(rows)); err != nil {
			return err
		}
	}
	if failed {
		return cli.Exit("", 1)
	}
	return nil
}

// agentWorkspace is a's workspace, or why it has none to compare.
func agentWorkspace(a *state.Agent) (*workspace.Workspace, error) {
	ws, err := recordWorkspace(a)
	if err != nil {
		return nil, err
	}
	if ws == nil || ws.Type == workspace.None {
		hint := "spawn agents with --workspace auto (the default for agent kinds) to get their work back with agt diff and agt merge"
		if spec, err := a.ReadSpec(); err == nil && workspace.Detect(spec.Cwd) == workspace.None {
			// auto found no repository: --workspace auto would have made none either.
			hint = fmt.Sprintf("%s is in no git or jj repository: spawn agents in one (git init) to get their work back with agt diff and agt merge", spec.Cwd)
		}
		return nil, withHint(fmt.Errorf("%s runs in a plain directory, not a workspace of its own: there is no base to compare with", a.Name), hint)
	}
	return ws, nil
}

func diffRowOf(c *cli.Context, a *state.Agent, ws *workspace.Workspace, ch *workspace.Change) diffRow {
	st := spawn.Observe(a)
	cond := workspace.Check(c.Context, ws)
	row := diffRow{
		Name: a.Name, State: st.State, Type: ws.Type, Path: ws.Path, Branch: ws.Branch,
		Into: cond.Target, Merged: cond.Merged, Change: ch, Result: lastResult(a),
	}
	if st.CostUSD != nil {
		row.CostUSD = roundUSD(*st.CostUSD)
	}
	return row
}

// lastResult is the first line of the text of a's last result event, "" for none.
func lastResult(a *state.Agent) string {
	line, _ := state.LastLine(a.Path(state.EventsFile), 8<<20, func(l []byte) bool {
		return gjson.GetBytes(l, "type").String() == stream.TypeResult && gjson.ValidBytes(l)
	})
	if line == nil {
		return ""
	}
	return oneLine(gjson.GetBytes(line, "text").String(), 200)
}

// diffTable is the compare view: one row per agent.
func diffTable(rows []diffRow) ([]string, [][]string) {
	header := []string{"NAME", "STATE", "FILES", "+", "-", "COMMITS", "UNCOMMITTED", "MERGED", "COST", "RESULT"}
	out := make([][]string, len(rows))
	for i, r := range rows {
		merged, cost := "no", "-"
		if r.Merged {
			merged = "yes"
		}
		if r.CostUSD != nil {
			cost = fmt.Sprintf("$%.2f", *r.CostUSD)
		}
		out[i] = []string{r.Name, r.State, strconv.Itoa(len(r.Files)), "+" + strconv.Itoa(r.Insertions),
			"-" + strconv.Itoa(r.Deletions), count(r.Commits), strconv.Itoa(len(r.Uncommitted)), merged, cost,
			dash(oneLine(r.Result, 60))}
	}
	return header, out
}

// limitedBuffer keeps the first max bytes written to it and drops the rest, noting the cut.
type limitedBuffer struct {
	buf *bytes.Buffer
	max int
	cut bool
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.buf.Len(); room < len(p) {
		l.cut = true
		l.buf.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return l.buf.Write(p)
}
