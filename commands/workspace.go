package commands

import (
	"encoding/json"
	"os"

	"github.com/urfave/cli/v2"

	"agt/config"
	"agt/workspace"
)

// workspacePrepare returns what spawn runs, once the name is reserved, to make the agent's
// workspace for --workspace and --base; nil when the agent runs in dir itself. The hook
// returns the directory to run in, the workspace's JSON (null for a plain directory) and an
// undo that removes the workspace again when the agent cannot start.
func workspacePrepare(c *cli.Context, cfg config.Workspace, name, dir string) (func() (string, json.RawMessage, func(), error), error) {
	mode, base := c.String("workspace"), c.String("base")
	if mode == "" {
		mode = cfg.Mode // agt.toml's [workspace] mode, auto by default
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
	return func() (string, json.RawMessage, func(), error) {
		ws, err := workspace.Make(c.Context, opts)
		if err != nil {
			return "", nil, nil, err
		}
		if ws.Type == workspace.None {
			return dir, nil, nil, nil
		}
		b, err := json.Marshal(ws)
		if err != nil {
			workspace.Discard(ws)
			return "", nil, nil, err
		}
		return ws.Workdir(dir), b, func() { workspace.Discard(ws) }, nil
	}, nil
}
