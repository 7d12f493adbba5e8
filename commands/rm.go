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
		UsageText: "agt rm [--workspace] [--force] NAME... | --all\n\n" +
			"Removes the record of each agent that has ended, and with --workspace its workspace,\n" +
			"unless that would lose work.\n\n" +
			"EXAMPLES:\n" +
			"   agt rm fix-auth\n" +
			"   agt rm --workspace fix-auth\n" +
			"   agt rm --all --workspace\n" +
			"   agt rm --force --workspace runaway",
		Description: helpText("rm"),
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "workspace", Aliases: []string{"w"}, Usage: "also remove the agent's workspace (refused when it holds unsaved work)"},
			&cli.BoolFlag{Name: "force", Aliases: []string{"f"}, Usage: "stop a live agent first; remove its workspace even with unsaved work"},
			&cli.BoolFlag{Name: "all", Usage: "remove every agent that has ended (live and lost ones stay, even with --force)"},
			jsonFlag(),
			formatFlag("rm", rmResult{}, "{{.name}} {{.removed}}"),
		},
		Action: runRm,
	}
}

// rmResult is what rm did to one agent: the NDJSON fields, and what templates name.
type rmResult struct {
	Name    string               `json:"name"`
	Stopped bool                 `json:"stopped,omitempty"`
	Removed []string             `json:"removed"`
	Kept    *workspace.Workspace `json:"kept,omitempty"`
}

// rmOptions say what rmAgent removes.
type rmOptions struct {
	workspace bool // the workspace too
	force     bool // stop a live agent; remove a workspace even with unsaved work
	// keepUnsaved: a workspace holding unsaved work stays, and the record goes all the same
	// (spawn --rm), where rm --workspace keeps both.
	keepUnsaved bool
	grace       time.Duration // of the stop that force makes
	registry    *workspace.Registry
}

func runRm(c *cli.Context) error {
	out, err := outputFor(c)
	if err != nil {
		return err
	}
	all := c.Bool("all")
	if all && c.Args().Len() > 0 {
		return usagef(c, "--all takes no NAME")
	}
	agents, err := targets(c, "agt rm [--workspace] [--force] NAME... | --all", all)
	if err != nil {
		return err
	}
	opts := rmOptions{workspace: c.Bool("workspace"), force: c.Bool("force"), grace: grace(c), registry: registry(c)}
	failed := false
	for _, a := range agents {
		if all && !stream.IsFinal(spawn.Observe(a).State) {
			continue // --all is the ended ones: a live agent is not in it, even with --force
		}
		r, err := rmAgent(c.Context, a, opts)
		if c.Context.Err() != nil {
			return c.Context.Err() // interrupted: no further removals
		}
		if r != nil && (err == nil || len(r.Removed) > 0) {
			if perr := out.line(r, r.human()); perr != nil {
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
// supervisor starts meanwhile. What it removed before an error is in the result. A workspace
// left in place is remembered in the registry, so that agt workspaces still finds it.
func rmAgent(ctx context.Context, a *state.Agent, o rmOptions) (*rmResult, error) {
	r := &rmResult{Name: a.Name, Removed: []string{}}
	st := spawn.Observe(a)
	if !stream.IsFinal(st.State) {
		if !o.force {
			hint := fmt.Sprintf("stop it first ('agt stop %s'), or use --force", a.Name)
			if st.State == stream.Lost {
				hint = "run 'agt reap' first, or use --force"
			}
			return nil, withHint(fmt.Errorf("%s is %s, not ended", a.Name, st.State), hint)
		}
		if _, err := spawn.Stop(ctx, a, o.grace); err != nil {
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

	ws, err := recordWorkspace(a)
	if err != nil && o.workspace && !o.force {
		return nil, withHint(err, "without a readable record its workspace is unknown; --force removes the record alone")
	}
	if ws != nil && ws.Type != workspace.None {
		removed, err := []string(nil), error(nil)
		if o.workspace {
			removed, err = workspace.Remove(ctx, ws, o.force)
			r.Removed = append(r.Removed, removed...)
		}
		switch {
		case o.workspace && err == nil:
			o.registry.Forget(ws)
		case o.workspace && !(o.keepUnsaved && errors.Is(err, workspace.ErrUnsaved)):
			return r, err
		default:
			r.Kept = ws
			if err := o.registry.Add(a.Name, ws); err != nil {
				return r, err
			}
		}
	}
	if err := a.Remove(); err != nil {
		return r, err
	}
	r.Removed = append(r.Removed, "record")
	return r, nil
}

// recordWorkspace is the workspace in a's record: nil for none, or a record without one.
func recordWorkspace(a *state.Agent) (*workspace.Workspace, error) {
	spec, err := a.ReadSpec()
	if err != nil {
		return nil, err
	}
	if len(spec.Workspace) == 0 || string(spec.Workspace) == "null" {
		return nil, nil
	}
	return workspace.Parse(spec.Workspace)
}

// human is the line rm prints on a terminal.
func (r *rmResult) human() string {
	line := "removed " + r.Name
	if r.Stopped {
		line = "stopped and removed " + r.Name
	}
	if len(r.Removed) > 0 {
		line += ": " + strings.Join(r.Removed, ", ")
	}
	if r.Kept != nil {
		line += "; kept " + r.Kept.String() + " ('agt workspaces prune' removes it)"
	}
	return line
}
