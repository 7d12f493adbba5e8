package commands

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"agt/spawn"
	"agt/state"
	"agt/stream"
	"agt/workspace"
)

func workspacesCommand() *cli.Command {
	return &cli.Command{
		Name:  "workspaces",
		Usage: "list the workspaces agt made, whether their work is merged, and prune them",
		UsageText: "agt workspaces [--json | --format T]\n" +
			"agt workspaces prune [--merged] [--force] [--dry-run]\n\n" +
			"Lists every jj workspace and git worktree that spawn made, the orphans included, and\n" +
			"whether their work is merged into the branch it started from.\n\n" +
			"EXAMPLES:\n" +
			"   agt workspaces\n" +
			"   agt workspaces --format '{{.agent}} {{.merged}} {{.ahead}} {{.behind}}'\n" +
			"   agt workspaces prune --merged --dry-run\n" +
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
					if err := out.item(r.shown(), nil); err != nil {
						return err
					}
				}
				return nil
			}
			home, _ := os.UserHomeDir()
			table := make([][]string, len(rows))
			for i, r := range rows {
				table[i] = r.cells(home)
			}
			return out.table([]string{"AGENT", "OWNER", "MERGED", "DIRTY", "AHEAD", "BEHIND", "INTO", "BRANCH", "PATH"}, table)
		},
		Subcommands: []*cli.Command{{
			Name:  "prune",
			Usage: "remove the workspaces that no agent's record holds; with --merged, the merged ones",
			UsageText: "agt workspaces prune [--merged] [--force] [--dry-run]\n\n" +
				"Removes every orphan workspace, keeping those that hold unsaved work unless --force.\n\n" +
				"EXAMPLES:\n" +
				"   agt workspaces prune --dry-run\n" +
				"   agt workspaces prune --merged\n" +
				"   agt workspaces prune --force",
			Description: helpText("workspaces prune"),
			Flags: []cli.Flag{
				&cli.BoolFlag{Name: "merged", Usage: "remove only merged workspaces, those of ended agents too (with their records)"},
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
	Orphan  bool     `json:"orphan"`            // no agent's record holds it
	State   string   `json:"state,omitempty"`   // its agent's state; "" for an orphan
	Missing bool     `json:"missing"`           // its directory is gone; its branch or jj name remains
	Dirty   bool     `json:"dirty"`             // it holds the agent's uncommitted changes
	Changed []string `json:"changed,omitempty"` // those files
	Merged  bool     `json:"merged"`            // all its work is in the branch it started from
	Ahead   int      `json:"ahead"`             // commits that branch lacks; -1 unknown
	Behind  int      `json:"behind"`            // commits of that branch it lacks; -1 unknown
	Into    string   `json:"into,omitempty"`    // that branch (git)
	agent   *state.Agent
}

// shown is the row as printed: without the seeds' checksums, which say nothing to a reader.
func (r workspaceRow) shown() workspaceRow {
	r.Seeded = nil
	return r
}

// cells is the row in the table.
func (r *workspaceRow) cells(home string) []string {
	owner := "record"
	if r.Orphan {
		owner = "orphan"
	}
	merged, dirty := "no", "no"
	if r.Merged {
		merged = "yes"
	}
	switch {
	case r.Missing:
		merged, dirty = "-", "missing"
	case r.Dirty:
		dirty = fmt.Sprintf("%d file%s", len(r.Changed), plural(len(r.Changed)))
	}
	branch := r.Branch
	if r.Type == workspace.JJ {
		branch = "jj:" + r.Name
	}
	return []string{r.Agent, owner, merged, dirty, count(r.Ahead), count(r.Behind), dash(r.Into), dash(branch), tildePath(r.Path, home)}
}

// count is n, or - when it is unknown (negative).
func count(n int) string {
	if n < 0 {
		return "-"
	}
	return strconv.Itoa(n)
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
		rows = append(rows, workspaceRow{Agent: a.Name, Workspace: *ws, State: spawn.Observe(a).State, agent: a})
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
		r.Missing, r.Dirty, r.Changed = r.Missing || cond.Missing, cond.Dirty, cond.Changed
		r.Merged, r.Ahead, r.Behind, r.Into = cond.Merged, cond.Ahead, cond.Behind, cond.Target
		kept = append(kept, r)
	}
	return kept, c.Context.Err()
}

// pruneResult is what prune did to one workspace, or would do (--dry-run).
type pruneResult struct {
	Agent   string   `json:"agent"`
	Path    string   `json:"path"`
	Action  string   `json:"action"` // removed, kept; would remove, would keep
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
	merged, dry, force := c.Bool("merged"), c.Bool("dry-run"), c.Bool("force")
	would := ""
	if dry {
		would = "would "
	}
	failed := false
	for _, r := range rows {
		ended := r.agent != nil && stream.IsFinal(r.State)
		if merged && !r.Merged || !r.Orphan && !(merged && ended) {
			continue
		}
		removed, err := pruneOne(c.Context, reg, &r, force, dry)
		res := pruneResult{Agent: r.Agent, Path: r.Path, Action: would + "remove", Removed: removed}
		human := fmt.Sprintf("%sremove %s (of %s)", would, r.Workspace.String(), r.Agent)
		switch {
		case err == nil:
			if !dry {
				res.Action, human = "removed", "removed"+strings.TrimPrefix(human, "remove")
			}
		case errors.Is(err, workspace.ErrUnsaved):
			why, _, _ := strings.Cut(err.Error(), "\n")
			res.Action, res.Why, res.Removed = would+"keep", why, nil
			if !dry {
				res.Action = "kept"
			}
			human = fmt.Sprintf("%s %s (of %s): %s; --force removes it", res.Action, r.Workspace.String(), r.Agent, why)
		default:
			if c.Context.Err() != nil {
				return c.Context.Err()
			}
			warn(c, "prune", r.Path, err)
			failed = true
			continue
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

// pruneOne removes the workspace of r (dry: says what it would remove): an orphan's, or that
// of an agent that ended, with its record.
func pruneOne(ctx context.Context, reg *workspace.Registry, r *workspaceRow, force, dry bool) ([]string, error) {
	switch {
	case r.Orphan && dry:
		return workspace.WouldRemove(ctx, &r.Workspace, force)
	case r.Orphan:
		removed, err := workspace.Remove(ctx, &r.Workspace, force)
		if err == nil {
			reg.Forget(&r.Workspace)
		}
		return removed, err
	case dry:
		removed, err := workspace.WouldRemove(ctx, &r.Workspace, force)
		return append(removed, "record"), err
	}
	res, err := rmAgent(ctx, r.agent, rmOptions{workspace: true, force: force, grace: -1, registry: reg})
	if res == nil {
		return nil, err
	}
	return res.Removed, err
}
