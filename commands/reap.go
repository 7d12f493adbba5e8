package commands

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"agt/spawn"
	"agt/state"
	"agt/stream"
	"agt/workspace"
)

func reapCommand() *cli.Command {
	return &cli.Command{
		Name:  "reap",
		Usage: "finish agents whose supervisor is gone: kill what is left, record the end",
		UsageText: "agt reap [--dry-run] [--prune DURATION] [--json | --format T]\n\n" +
			"Ends every lost agent (its supervisor died: kill -9, OOM, reboot): kills what is left of\n" +
			"its tree and writes its final status.\n\n" +
			"EXAMPLES:\n" +
			"   agt reap\n" +
			"   agt reap --prune 7d\n" +
			"   */5 * * * * $HOME/.local/bin/agt reap >>\"$HOME/.local/state/agt/reap.log\" 2>&1   # crontab: agt's full path",
		Description: helpText("reap"),
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "dry-run", Usage: "say what would be reaped, change nothing"},
			&cli.StringFlag{Name: "prune", Usage: "also delete the records of agents ended more than `DURATION` ago (7d, 12h)"},
			jsonFlag(),
			formatFlag("reap", reapResult{}, "{{.name}} {{.action}}"),
		},
		Action: runReap,
	}
}

// reapResult is what reap did to one agent: the NDJSON fields, and what templates name.
type reapResult struct {
	Name   string `json:"name"`
	Action string `json:"action"`           // reap, prune, would reap, would prune
	From   string `json:"from,omitempty"`   // reap: the state it was lost in
	Reason string `json:"reason,omitempty"` // reap: supervisor-lost or reboot
	Killed *int   `json:"killed,omitempty"` // reap: processes of its tree it signalled
	State  string `json:"state,omitempty"`  // prune: the final state it had
	// Kept is the workspace of a pruned agent: it stays, for agt workspaces prune.
	Kept *workspace.Workspace `json:"kept,omitempty"`
}

// human is the line reap prints on a terminal.
func (r *reapResult) human() string {
	switch r.Action {
	case "reap":
		procs := "processes"
		if *r.Killed == 1 {
			procs = "process"
		}
		return fmt.Sprintf("reaped %s: was %s, %s; killed %d %s", r.Name, r.From, r.Reason, *r.Killed, procs)
	case "would reap":
		return fmt.Sprintf("would reap %s: %s", r.Name, r.Reason)
	case "would prune":
		return fmt.Sprintf("would prune %s (%s)", r.Name, r.State)
	}
	s := fmt.Sprintf("pruned %s (%s)", r.Name, r.State)
	if r.Kept != nil {
		s += "; kept " + r.Kept.String() + " ('agt workspaces prune' removes it)"
	}
	return s
}

func runReap(c *cli.Context) error {
	if c.Args().Len() > 0 {
		return usagef(c, "reap takes no arguments")
	}
	out, err := outputFor(c)
	if err != nil {
		return err
	}
	d, err := openRunDir(c)
	if err != nil {
		return err
	}
	agents, err := d.Agents()
	if err != nil {
		return err
	}
	var prune time.Duration
	if p := c.String("prune"); p != "" {
		if prune, err = parseAge(p); err != nil {
			return usagef(c, "--prune %q: want a duration such as 7d, 12h or 30m", p)
		}
	}
	reg, dry := registry(c), c.Bool("dry-run")
	failed := false
	// The lost are reaped together first: one read of /proc serves all their trees.
	reaped := make(map[string]spawn.ReapResult)
	if !dry {
		var lost []*state.Agent
		for _, a := range agents {
			if spawn.Observe(a).State == stream.Lost {
				lost = append(lost, a)
			}
		}
		for i, r := range spawn.ReapAll(lost) {
			reaped[lost[i].Name] = r
		}
	}
	for _, a := range agents {
		st := spawn.Observe(a)
		res, justReaped := reaped[a.Name]
		var r *reapResult
		switch {
		case prune > 0 && !justReaped && stream.IsFinal(st.State) && time.Since(st.Since) > prune:
			r = &reapResult{Name: a.Name, Action: "would prune", State: st.State}
			if !dry {
				// The workspace outlives the record: the registry keeps it for agt workspaces.
				ws, _ := recordWorkspace(a)
				if ws != nil && ws.Type != workspace.None {
					if err := reg.Add(a.Name, ws); err != nil {
						warn(c, "prune", a.Name, err)
						failed = true
						continue
					}
				}
				ok, err := spawn.Prune(a, prune)
				if err != nil {
					warn(c, "prune", a.Name, err)
					failed = true
					continue
				}
				if !ok {
					continue
				}
				r.Action = "prune"
				if ws != nil && ws.Type != workspace.None {
					r.Kept = ws
				}
			}
		case dry && st.State == stream.Lost:
			r = &reapResult{Name: a.Name, Action: "would reap", Reason: st.Reason}
		default:
			if !justReaped {
				continue
			}
			if res.Err != nil {
				warn(c, "reap", a.Name, res.Err)
				failed = true
				continue
			}
			if res.Reaped == nil {
				continue // a supervisor came back, or another reap got there first
			}
			r = &reapResult{Name: a.Name, Action: "reap", From: res.Reaped.From, Reason: res.Reaped.Reason, Killed: &res.Reaped.Killed}
		}
		if err := out.line(r, r.human()); err != nil {
			return err
		}
	}
	if failed {
		return cli.Exit("", 1)
	}
	return nil
}

// parseAge reads a duration that may also count days: 7d, 36h, 90m. More days than a duration
// holds (about 292 years) are the longest duration, not an overflow into the past or future.
func parseAge(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("bad days %q", s)
		}
		if n > int(math.MaxInt64/int64(24*time.Hour)) {
			return time.Duration(math.MaxInt64), nil
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("bad duration %q", s)
	}
	return d, nil
}
