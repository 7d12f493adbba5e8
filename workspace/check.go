package workspace

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"agt/jjcmd"
)

// Condition is what Check found in a workspace.
type Condition struct {
	// Gone: neither its directory nor what names it in the repository (git branch, jj
	// workspace) is left: nothing to remove.
	Gone bool
	// Missing: its directory is gone, while its branch or jj workspace name remains.
	Missing bool
	// Dirty: its working copy holds the agent's uncommitted changes (git: modified or
	// untracked files; jj: files @ changes), leaving aside what copy and setup put there.
	Dirty bool
	// Changed lists those files, relative to the workspace's root (at most maxListed).
	Changed []string
	// Ahead counts the commits on its branch that its target lacks (its base when there is no
	// target); jj: the non-empty revisions on top of its base. -1 when unknown.
	Ahead int
	// Behind counts the commits on its target that its branch lacks; -1 when unknown (jj).
	Behind int
	// Merged: nothing of the agent's work is missing from its target: the working copy is
	// clean and all its branch changes are in the target's tip, squash merges included as far
	// as git can tell (merging the branch would change nothing). jj: nothing on top of its base.
	Merged bool
	// Target is the branch the work merges into (git): From, else the one checked out in Repo.
	Target string
}

// maxListed bounds Condition.Changed.
const maxListed = 100

// Check looks at a workspace without changing it (jj snapshots the working copy, as any jj
// command does).
func Check(ctx context.Context, ws *Workspace) Condition {
	c := Condition{Ahead: -1, Behind: -1}
	exists := isDir(ws.Path)
	switch ws.Type {
	case Git:
		repo := ws.Repo
		if !isDir(repo) {
			repo = ws.Path
		}
		hasBranch := ws.Branch != "" && isDir(repo) && branchExists(ctx, repo, ws.Branch)
		if !exists && !hasBranch {
			c.Gone = true
			return c
		}
		c.Missing = !exists
		if exists {
			if files, err := agentChanges(ctx, ws); err == nil {
				c.setChanged(files)
			}
		}
		tip := "refs/heads/" + ws.Branch
		if !hasBranch {
			tip, repo = "HEAD", ws.Path
		}
		if !isDir(repo) {
			return c
		}
		c.Target = ws.target(ctx)
		if c.Target == "" || !branchExists(ctx, repo, c.Target) {
			c.Target = ""
			if ws.Base != "" {
				c.Ahead = count(ctx, repo, ws.Base+".."+tip)
			}
			return c
		}
		target := "refs/heads/" + c.Target
		c.Ahead, c.Behind = count(ctx, repo, target+".."+tip), count(ctx, repo, tip+".."+target)
		if !c.Dirty {
			c.Merged, _ = contentIn(ctx, repo, tip, target)
		}
	case JJ:
		known := false
		if names, err := jjcmd.WorkspaceList(ctx, ws.Repo); err == nil {
			known = slices.Contains(names, ws.Name)
		}
		if !exists && !known {
			c.Gone = true
			return c
		}
		c.Missing = !exists
		if !exists {
			return c
		}
		dirtyKnown := false
		if revs, err := jjcmd.Revisions(ctx, ws.Path, "@"); err == nil && len(revs) == 1 {
			dirtyKnown = true
			if !revs[0].Empty {
				files, err := agentChanges(ctx, ws)
				dirtyKnown = err == nil
				c.setChanged(files)
			}
		}
		if ws.Base != "" {
			// Children first: @ leads, and counts as Dirty, not as Ahead.
			if revs, err := jjcmd.Revisions(ctx, ws.Path, ws.Base+"..@"); err == nil {
				c.Ahead = 0
				for _, r := range revs[min(1, len(revs)):] {
					if !r.Empty {
						c.Ahead++
					}
				}
			}
		}
		c.Merged = dirtyKnown && !c.Dirty && c.Ahead == 0
	default:
		c.Gone = !exists
	}
	return c
}

func (c *Condition) setChanged(files []string) {
	c.Dirty = len(files) > 0
	if c.Dirty {
		c.Changed = files[:min(len(files), maxListed)]
	}
}

// target is the branch that the work of a git workspace merges into: From, else (a record of
// an agt that did not keep it) the branch checked out in Repo now; "" for none.
func (w *Workspace) target(ctx context.Context) string {
	if w.From != "" {
		return w.From
	}
	if isDir(w.Repo) {
		return currentBranch(ctx, w.Repo)
	}
	return ""
}

// count is `git rev-list --count RANGE`; -1 when git fails.
func count(ctx context.Context, repo, revs string) int {
	out, err := git(ctx, repo, "rev-list", "--count", revs)
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		return -1
	}
	return n
}

// contentIn reports whether all of tip's changes are in target: tip is an ancestor of target,
// or merging tip into target would change nothing (a squash merge, a cherry-pick). Commits
// of tip's own that change nothing (empty ones) are not taken for merged: only ancestry
// saves those.
func contentIn(ctx context.Context, repo, tip, target string) (bool, error) {
	_, code, err := runGit(ctx, repo, nil, nil, "merge-base", "--is-ancestor", tip, target)
	switch {
	case code == 0:
		return true, nil
	case code != 1:
		return false, err
	}
	if base, err := git(ctx, repo, "merge-base", tip, target); err == nil {
		same, _, _ := runGit(ctx, repo, nil, nil, "rev-parse", strings.TrimSpace(base)+"^{tree}", tip+"^{tree}")
		if t := strings.Fields(same); len(t) == 2 && t[0] == t[1] {
			return false, nil
		}
	}
	tree, code, err := runGit(ctx, repo, nil, nil, "merge-tree", "--write-tree", "--no-messages", target, tip)
	if code == 1 {
		return false, nil // conflicts: tip holds what target lacks
	}
	if err != nil {
		return false, err
	}
	want, err := git(ctx, repo, "rev-parse", target+"^{tree}")
	if err != nil {
		return false, err
	}
	return firstLine(tree) == strings.TrimSpace(want), nil
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return strings.TrimSpace(l)
}
