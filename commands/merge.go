package commands

import (
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"agt/spawn"
	"agt/stream"
	"agt/workspace"
)

func mergeCommand() *cli.Command {
	return &cli.Command{
		Name:  "merge",
		Usage: "bring an agent's work into the branch (or jj change) it started from",
		UsageText: "agt merge [--squash] [--message M] [--stop] NAME\n\n" +
			"Brings an agent's work into the branch (or jj change) it started from, or refuses with nothing changed.\n\n" +
			"EXAMPLES:\n" +
			"   agt merge fix-auth\n" +
			"   agt merge --squash --message 'Fix the login bug' fix-auth\n" +
			"   agt merge --stop fix-auth",
		Description: helpText("merge"),
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "squash", Usage: "one new commit on your branch instead of a merge (git; jj always squashes)"},
			&cli.StringFlag{Name: "message", Aliases: []string{"m"}, Usage: "the `MESSAGE` of the merge or squash commit (git: a merge commit even where a fast-forward would do)"},
			&cli.BoolFlag{Name: "stop", Usage: "stop the agent first if it still runs"},
			durationFlag("timeout", "t", "with --stop: grace between SIGTERM and SIGKILL (a duration, or seconds)", "the agent's own"),
			jsonFlag(),
			formatFlag("merge", mergeResult{}, "{{.name}} {{.how}} {{.commit}}"),
		},
		Action: runMerge,
	}
}

// mergeResult is what merge did: the NDJSON fields, and what templates name.
type mergeResult struct {
	Name    string `json:"name"`
	Stopped bool   `json:"stopped,omitempty"`
	*workspace.Merged
}

func runMerge(c *cli.Context) error {
	out, err := outputFor(c)
	if err != nil {
		return err
	}
	agents, err := targets(c, "agt merge [--squash] [--message M] NAME", false)
	if err != nil {
		return err
	}
	if len(agents) != 1 {
		return usagef(c, "merge takes one NAME, got %d: merge one agent's work at a time", len(agents))
	}
	a := agents[0]
	ws, err := agentWorkspace(a)
	if err != nil {
		return err
	}
	res := mergeResult{Name: a.Name}
	if st := spawn.Observe(a); !stream.IsFinal(st.State) {
		// Whatever would refuse the merge refuses it before the agent is stopped for it.
		if err := workspace.CheckMerge(c.Context, ws, a.Name); err != nil {
			return fmt.Errorf("merge %s: %w", a.Name, err)
		}
		if !c.Bool("stop") {
			hint := fmt.Sprintf("stop it first (agt stop %s), or use agt merge --stop %s", a.Name, a.Name)
			if st.State == stream.Lost {
				hint = fmt.Sprintf("run 'agt reap' first, or use agt merge --stop %s", a.Name)
			}
			return withHint(fmt.Errorf("%s is %s: its work may still change, so it was not merged", a.Name, st.State), hint)
		}
		if _, err := spawn.Stop(c.Context, a, grace(c)); err != nil {
			return err
		}
		res.Stopped = true
	}
	res.Merged, err = workspace.Merge(c.Context, ws, workspace.MergeOptions{
		Agent: a.Name, Squash: c.Bool("squash"), Message: c.String("message"),
	})
	if err != nil {
		if errors.Is(err, workspace.ErrRefused) {
			return fmt.Errorf("merge %s: %w", a.Name, err)
		}
		return err
	}
	return out.line(res, res.human())
}

// human is the line merge prints on a terminal.
func (r *mergeResult) human() string {
	line := ""
	if r.Stopped {
		line = "stopped " + r.Name + "; "
	}
	switch r.How {
	case "none":
		line += fmt.Sprintf("nothing to merge: the work of %s is in %s already", r.Name, r.Into)
	case "fast-forward":
		line += fmt.Sprintf("merged %s into %s (fast-forward to %.12s)", r.Name, r.Into, r.Commit)
	default:
		line += fmt.Sprintf("merged %s into %s (%s commit %.12s)", r.Name, r.Into, r.How, r.Commit)
	}
	if r.Saved != "" {
		line += fmt.Sprintf("; its uncommitted work was committed first as %.12s", r.Saved)
	}
	return line
}
