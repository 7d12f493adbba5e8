package commands

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"agt/workspace"
)

func workspacesCommand() *cli.Command {
	return &cli.Command{
		Name:  "workspaces",
		Usage: "list the workspaces agt made, and prune those no agent holds",
		UsageText: "agt workspaces [--json | --format T]\n" +
			"agt workspaces prune [--force] [--dry-run]\n\n" +
			"Lists every jj workspace and git worktree that spawn made, the orphans included.\n\n" +
			"EXAMPLES:\n" +
			"   agt workspaces\n" +
			"   agt workspaces --format '{{.agent}} {{.path}} {{.orphan}}'\n" +
			"   agt workspaces prune\n" +
			"   agt workspaces prune --force",
		Description: helpText("workspaces"),
		Flags: []cli.Flag{
			jsonFlag(),
			formatFlag("workspaces", workspaceRow{}, "{{.agent}} {{.path}}"),
		},
		Action: func(c *cli.Context) error {
			if c.Args().Len() > 0 {
				return usagef(c, "unknown subcommand %q: want 'agt workspaces' or 'agt workspaces prune'", c.Args().First())
			}
			out, err := outputFor(c)
			if err != nil {
				return err
			}
			rows, err := listWorkspaces(c)
			if err != nil {
				return err
			}
			if out.mode != modeTable {
				for _, r := range rows {
					if err := out.item(r, nil); err != nil {
						return err
					}
				}
				return nil
			}
			home, _ := os.UserHomeDir()
			table := make([][]string, len(rows))
			for i, r := range rows {
				owner := "record"
				if r.Orphan {
					owner = "orphan"
				}
				changes := "clean"
				switch {
				case r.Missing:
					changes = "missing"
				case r.Dirty:
					changes = "dirty"
				}
				ahead := "-"
				if r.Ahead >= 0 {
					ahead = strconv.Itoa(r.Ahead)
				}
				branch := r.Branch
				if r.Type == workspace.JJ {
					branch = "jj:" + r.Name
				}
				table[i] = []string{r.Agent, owner, changes, ahead, dash(branch), tildePath(r.Path, home)}
			}
			return out.table([]string{"AGENT", "OWNER", "CHANGES", "AHEAD", "BRANCH", "PATH"}, table)
		},
		Subcommands: []*cli.Command{{
			Name:  "prune",
			Usage: "remove the workspaces that no agent's record holds",
			UsageText: "agt workspaces prune [--force] [--dry-run]\n\n" +
				"Removes every orphan workspace, keeping those that hold unsaved work unless --force.\n\n" +
				"EXAMPLES:\n" +
				"   agt workspaces prune --dry-run\n" +
				"   agt workspaces prune --force",
			Description: helpText("workspaces prune"),
			Flags: []cli.Flag{
				&cli.BoolFlag{Name: "force", Aliases: []string{"f"}, Usage: "remove orphans even when they hold unsaved work"},
				&cli.BoolFlag{Name: "dry-run", Usage: "say what would be removed, remove nothing"},
				jsonFlag(),
				formatFlag("workspaces_prune", pruneResult{}, "{{.path}} {{.action}}"),
			},
			Action: runWorkspacesPrune,
		}},
	}
}

// workspaceRow is a workspace as agt workspaces lists it: the NDJSON fields, and what
// templates name.
type workspaceRow struct {
	Agent string `json:"agent"`
	workspace.Workspace
	Orphan  bool `json:"orphan"`  // no agent's record holds it
	Missing bool `json:"missing"` // its directory is gone; its branch or jj name remains
	Dirty   bool `json:"dirty"`   // it holds uncommitted changes
	Ahead   int  `json:"ahead"`   // commits on top of its base; -1 unknown
}

// listWorkspaces finds the workspaces of the agents' records and of the registry (orphans
// among them), and checks each. A registry entry whose workspace is gone is dropped.
func listWorkspaces(c *cli.Context) ([]workspaceRow, error) {
	d, err := openRunDir(c)
	if err != nil {
		return nil, err
	}
	agents, err := d.Agents()
	if err != nil {
		return nil, err
	}
	var rows []workspaceRow
	held := map[string]bool{}
	for _, a := range agents {
		ws, err := recordWorkspace(a)
		if err != nil || ws == nil || ws.Type == workspace.None {
			continue
		}
		held[ws.Path] = true
		rows = append(rows, workspaceRow{Agent: a.Name, Workspace: *ws})
	}
	reg := registry(c)
	entries, err := reg.List()
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if !held[e.Workspace.Path] {
			held[e.Workspace.Path] = true
			rows = append(rows, workspaceRow{Agent: e.Agent, Workspace: e.Workspace, Orphan: true})
		}
	}
	kept := rows[:0]
	for _, r := range rows {
		cond := workspace.Check(c.Context, &r.Workspace)
		if cond.Gone {
			if r.Orphan {
				reg.Forget(&r.Workspace) // removed by other means: nothing left to list
				continue
			}
			r.Missing = true
		}
		r.Missing, r.Dirty, r.Ahead = r.Missing || cond.Missing, cond.Dirty, cond.Ahead
		kept = append(kept, r)
	}
	return kept, c.Context.Err()
}

// pruneResult is what prune did to one orphan.
type pruneResult struct {
	Agent   string   `json:"agent"`
	Path    string   `json:"path"`
	Action  string   `json:"action"` // removed, kept, would remove
	Removed []string `json:"removed,omitempty"`
	Why     string   `json:"why,omitempty"` // kept: the unsaved work
}

func runWorkspacesPrune(c *cli.Context) error {
	if c.Args().Len() > 0 {
		return usagef(c, "prune takes no arguments")
	}
	out, err := outputFor(c)
	if err != nil {
		return err
	}
	rows, err := listWorkspaces(c)
	if err != nil {
		return err
	}
	reg := registry(c)
	failed := false
	for _, r := range rows {
		if !r.Orphan {
			continue
		}
		res := pruneResult{Agent: r.Agent, Path: r.Path, Action: "would remove"}
		human := "would remove " + r.Workspace.String() + " (of " + r.Agent + ")"
		if !c.Bool("dry-run") {
			removed, err := workspace.Remove(c.Context, &r.Workspace, c.Bool("force"))
			res.Removed = removed
			switch {
			case err == nil:
				reg.Forget(&r.Workspace)
				res.Action = "removed"
				human = "removed " + r.Workspace.String() + " (of " + r.Agent + ")"
			case errors.Is(err, workspace.ErrUnsaved):
				why, _, _ := strings.Cut(err.Error(), "\n")
				res.Action, res.Why = "kept", why
				human = fmt.Sprintf("kept %s (of %s): %s; --force removes it", r.Workspace.String(), r.Agent, why)
			default:
				if c.Context.Err() != nil {
					return c.Context.Err()
				}
				warn(c, "prune", r.Path, err)
				failed = true
				continue
			}
		}
		if err := out.line(res, human); err != nil {
			return err
		}
	}
	if failed {
		return cli.Exit("", 1)
	}
	return nil
}
