package commands

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

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
func workspacePrepare(c *cli.Context, cfg config.Workspace, name, dir string, plain bool, program string, status *liveStatus) (func() (string, json.RawMessage, func(), error), error) {
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
			if kind == workspace.Git && base == "" {
				noteUncommitted(c, dir, name)
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
		if err := programInWorkspace(ws, dir, program); err != nil {
			undo()
			return "", nil, nil, err
		}
		return ws.Workdir(dir), b, undo, nil
	}, nil
}

// programOf is the program an agent starts, as a path a workspace can lack: argv[0] of a
// plain command (agt doubles its $ signs), or of a kind whose start names a path; "" when
// argv[0] is a template token.
func programOf(argv []string, plain bool) string {
	if len(argv) == 0 {
		return ""
	}
	if plain {
		return strings.ReplaceAll(argv[0], "$$", "$")
	}
	if strings.Contains(argv[0], "$") {
		return ""
	}
	return argv[0]
}

// programInWorkspace checks that a program named by a relative path (./run-agent.sh,
// scripts/agent) is in the new workspace, where it runs: a worktree holds only what is
// committed, so a script the user has not committed is missing there. It says where it
// looked and why the file is not there.
func programInWorkspace(ws *workspace.Workspace, dir, program string) error {
	if !strings.Contains(program, "/") || filepath.IsAbs(program) {
		return nil
	}
	workdir := ws.Workdir(dir)
	if _, err := os.Stat(filepath.Join(workdir, program)); err == nil {
		return nil
	}
	made := fmt.Sprintf("a git worktree made from commit %.12s", ws.Base)
	if ws.Type == workspace.JJ {
		made = fmt.Sprintf("a jj workspace made from revision %.12s", ws.Base)
	}
	why := "which does not hold it either"
	hint := "give the program's absolute path, or check its name"
	if _, err := os.Stat(filepath.Join(dir, program)); err == nil {
		why = fmt.Sprintf("it is in %s but not committed, and a new workspace holds only what is", dir)
		hint = fmt.Sprintf("commit it, give its absolute path (%s), or spawn with --workspace none", filepath.Join(dir, program))
	}
	return withHint(fmt.Errorf("%s is not in the agent's new workspace %s (%s): %s", program, workdir, made, why), hint)
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

// noteUncommitted tells a person at a terminal that the changes they have not committed stay
// out of the new worktree, which is made from what is committed: an agent asked to finish
// their work would not see it.
func noteUncommitted(c *cli.Context, dir, name string) {
	files, err := workspace.Uncommitted(c.Context, dir)
	if err != nil || len(files) == 0 {
		return
	}
	fmt.Fprintf(c.App.ErrWriter, "agt: note: your uncommitted changes to %d file%s stay out of %s's worktree, which holds what is committed; commit them first, or spawn with --workspace none to work in your checkout\n",
		len(files), plural(len(files)), name)
}
