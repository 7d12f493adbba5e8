package commands

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"agt/config"
	"agt/workspace"
)

// workspacePrepare returns what spawn runs, once the name is reserved, to make the agent's
// workspace for --workspace and --base; nil when the agent runs in dir itself. The hook
// returns the directory to run in, the workspace's JSON (null for a plain directory) and an
// undo that removes the workspace again when the agent cannot start. A plain command (plain)
// runs where it is typed unless a workspace is asked for (--workspace, --base, or a mode in
// agt.toml other than auto): in a worktree it would not see the uncommitted and ignored files
// a build needs, and a worktree of a large repository costs seconds.
func workspacePrepare(c *cli.Context, cfg config.Workspace, name, dir string, plain bool, status *liveStatus) (func() (string, json.RawMessage, func(), error), error) {
	mode, base := c.String("workspace"), c.String("base")
	if mode == "" {
		mode = cfg.Mode // agt.toml's [workspace] mode, auto by default
		if plain && !cfg.ModeSet && base == "" {
			mode = workspace.None // a plain command runs where it is typed, unless asked
		}
	}
	// $AGT_BASE is a default for when a workspace is made: not with none, nor in a directory
	// that auto finds in no repository.
	if b := os.Getenv("AGT_BASE"); base == "" && b != "" && mode != workspace.None {
		if (mode != "" && mode != workspace.Auto) || workspace.Detect(dir) != workspace.None {
			base = b
		}
	}
	switch mode {
	case workspace.None:
		// $AGT_BASE is a default for when there is a workspace; --base without one is an error.
		if base != "" {
			return nil, usagef(c, "--base %q needs a workspace: drop it, or use --workspace auto, jj or git", base)
		}
		return nil, nil
	case "", workspace.Auto, workspace.JJ, workspace.Git:
	default:
		return nil, usagef(c, "--workspace %q: want auto, jj, git or none", mode)
	}
	opts := workspace.Options{
		Mode: mode, Dir: dir, Name: name, Base: base,
		Root: cfg.Root, BranchPrefix: cfg.BranchPrefix, Setup: cfg.Setup, Copy: cfg.Copy,
	}
	if status != nil {
		opts.Output = status // the set-up's output, its last line in the status line
	}
	reg := registry(c)
	return func() (string, json.RawMessage, func(), error) {
		if kind := mode; isTerminal(c.App.ErrWriter) {
			if kind == "" || kind == workspace.Auto {
				kind = workspace.Detect(dir)
			}
			if what := map[string]string{workspace.Git: "a git worktree", workspace.JJ: "a jj workspace"}[kind]; what != "" {
				status.hide()
				fmt.Fprintf(c.App.ErrWriter, "agt: making %s for %s…\n", what, name)
			}
		}
		ws, err := workspace.Make(c.Context, opts)
		if err != nil {
			return "", nil, nil, existsHint(reg, err)
		}
		if ws.Type == workspace.None {
			return dir, nil, nil, nil
		}
		b, err := json.Marshal(ws)
		if err == nil && reg != nil {
			// Remembered apart from the record, which may go first (agt rm, reap --prune):
			// agt workspaces finds it then, and prune removes it.
			err = reg.Add(name, ws)
		}
		if err != nil {
			workspace.Discard(ws)
			return "", nil, nil, err
		}
		undo := func() {
			workspace.Discard(ws)
			reg.Forget(ws)
		}
		return ws.Workdir(dir), b, undo, nil
	}, nil
}

// registry is the run directory's list of the workspaces agt made; nil when the run directory
// cannot be opened (the command then fails on it anyway).
func registry(c *cli.Context) *workspace.Registry {
	d, err := openRunDir(c)
	if err != nil {
		return nil
	}
	return &workspace.Registry{Dir: filepath.Join(d.Root, "workspaces")}
}

// existsHint adds to a workspace that exists already (its directory, branch or jj name) what
// removes it: agt workspaces prune for one agt made and no record holds, else git or jj.
func existsHint(reg *workspace.Registry, err error) error {
	var ex *workspace.ExistsError
	if !errors.As(err, &ex) {
		return err
	}
	if reg != nil {
		if entries, lerr := reg.List(); lerr == nil {
			for _, e := range entries {
				if e.Workspace.Path == ex.Path || (ex.Branch != "" && e.Workspace.Branch == ex.Branch && e.Workspace.Repo == ex.Repo) ||
					(ex.JJName != "" && e.Workspace.Name == ex.JJName && e.Workspace.Repo == ex.Repo) {
					return withHint(err, fmt.Sprintf("it is left from an earlier agent %s: 'agt workspaces' shows it, 'agt workspaces prune' removes it (--force if it holds work); or pick another name", e.Agent))
				}
			}
		}
	}
	return withHint(err, "pick another name, or remove it: "+ex.Remedy())
}
