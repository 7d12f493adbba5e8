package commands

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"agt/spawn"
	"agt/state"
	"agt/stream"
	"agt/workspace"
)

func rmCommand() *cli.Command {
	return &cli.Command{
		Name:  "rm",
		Usage: "forget ended agents; with --workspace, remove their workspaces too",
		UsageText: "agt rm [--workspace] [--force] NAME...\n\n" +
			"Removes the record of each agent that has ended. --workspace also removes the jj\n" +
			"workspace or git worktree (and its branch) that spawn made for it, unless that would\n" +
			"lose work. --force stops a live agent first and removes whatever it holds.\n\n" +
			"EXAMPLES:\n" +
			"   agt rm fix-auth\n" +
			"   agt rm --workspace fix-auth\n" +
			"   agt rm --workspace $(agt ps -q --state exited)\n" +
			"   agt rm --force --workspace runaway",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "workspace", Aliases: []string{"w"}, Usage: "also remove the agent's workspace (refused when it holds unsaved work)"},
			&cli.BoolFlag{Name: "force", Aliases: []string{"f"}, Usage: "stop a live agent first; remove its workspace even with unsaved work"},
			jsonFlag(),
			formatFlag("{{.Name}} {{.Removed}}"),
		},
		Action: runRm,
	}
}

// rmResult is what rm did to one agent; the JSON names are the NDJSON fields, the Go names
// the template fields.
type rmResult struct {
	Name    string               `json:"name"`
	Stopped bool                 `json:"stopped,omitempty"`
	Removed []string             `json:"removed"`
	Kept    *workspace.Workspace `json:"kept,omitempty"`
}

func runRm(c *cli.Context) error {
	out, err := outputFor(c)
	if err != nil {
		return err
	}
	agents, err := targets(c, "agt rm [--workspace] [--force] NAME...", false)
	if err != nil {
		return err
	}
	failed := false
	for _, a := range agents {
		r, err := rmAgent(c.Context, a, c.Bool("workspace"), c.Bool("force"), grace(c))
		if c.Context.Err() != nil {
			return c.Context.Err() // interrupted: no further removals
		}
		if r != nil && (err == nil || len(r.Removed) > 0) {
			if perr := printRm(out, r); perr != nil {
				return perr
			}
		}
		if err != nil {
			warn(c, "rm", a.Name, err)
			failed = true
		}
	}
	if failed {
		return cli.Exit("", 1)
	}
	return nil
}

// rmAgent removes a's workspace (when asked) and then its record, holding its lock so that no
// supervisor starts meanwhile. What it removed before an error is in the result.
func rmAgent(ctx context.Context, a *state.Agent, withWorkspace, force bool, grace time.Duration) (*rmResult, error) {
	r := &rmResult{Name: a.Name, Removed: []string{}}
	st := spawn.Observe(a)
	if !stream.IsFinal(st.State) {
		if !force {
			hint := fmt.Sprintf("stop it first ('agt stop %s'), or use --force", a.Name)
			if st.State == stream.Lost {
				hint = "run 'agt reap' first, or use --force"
			}
			return nil, withHint(fmt.Errorf("%s is %s, not ended", a.Name, st.State), hint)
		}
		if _, err := spawn.Stop(ctx, a, grace); err != nil {
			return nil, err
		}
		r.Stopped = true
	}
	// A supervisor that wrote its final status may take a moment more to exit.
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err := a.WaitFree(wctx)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("supervisor of %s still running: %w", a.Name, err)
	}
	lock, err := a.Lock()
	if errors.Is(err, state.ErrLocked) {
		return nil, withHint(fmt.Errorf("%s was started again meanwhile", a.Name), "run 'agt ps' to see it")
	}
	if err != nil {
		return nil, err
	}
	defer lock.Close()

	var ws *workspace.Workspace
	if spec, err := a.ReadSpec(); err == nil && len(spec.Workspace) > 0 && string(spec.Workspace) != "null" {
		if ws, err = workspace.Parse(spec.Workspace); err != nil {
			return nil, err
		}
	} else if err != nil && withWorkspace && !force {
		return nil, withHint(err, "without a readable record its workspace is unknown; --force removes the record alone")
	}
	if ws != nil && ws.Type != workspace.None {
		if withWorkspace {
			removed, err := workspace.Remove(ctx, ws, force)
			r.Removed = append(r.Removed, removed...)
			if err != nil {
				return r, err
			}
		} else {
			r.Kept = ws
		}
	}
	if err := a.Remove(); err != nil {
		return r, err
	}
	r.Removed = append(r.Removed, "record")
	return r, nil
}

func printRm(out *output, r *rmResult) error {
	if out.mode != modeTable {
		return out.item(r, nil)
	}
	line := "removed " + r.Name
	if r.Stopped {
		line = "stopped and removed " + r.Name
	}
	if len(r.Removed) > 0 {
		line += ": " + strings.Join(r.Removed, ", ")
	}
	if r.Kept != nil {
		line += "; kept " + r.Kept.String()
	}
	_, err := fmt.Fprintln(out.w, line)
	return err
}
