package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"agt/jjcmd"
	"agt/state"
)

// Registry remembers the workspaces agt made, one small JSON file each in Dir, apart from the
// agents' records: a record can go (agt rm without --workspace, reap --prune) and leave its
// workspace behind, which the registry still knows, so that it can be listed and removed.
// Entries are added when a workspace is made and forgotten when it is removed.
type Registry struct {
	Dir string
}

// Entry is a workspace in the registry and the agent it was made for.
type Entry struct {
	Agent     string    `json:"agent"`
	Workspace Workspace `json:"workspace"`
	Created   time.Time `json:"created"`
}

// file is the entry's file: named after the workspace's path, so one path is one entry.
func (r *Registry) file(ws *Workspace) string {
	sum := sha256.Sum256([]byte(ws.Path))
	return filepath.Join(r.Dir, hex.EncodeToString(sum[:8])+".json")
}

// Add remembers ws, made for agent. A none workspace is not remembered.
func (r *Registry) Add(agent string, ws *Workspace) error {
	if r == nil || ws.Type == None {
		return nil
	}
	if err := os.MkdirAll(r.Dir, 0o700); err != nil {
		return fmt.Errorf("remember workspace %s: %w", ws.Path, err)
	}
	b, err := json.Marshal(Entry{Agent: agent, Workspace: *ws, Created: time.Now().UTC()})
	if err != nil {
		return err
	}
	if err := state.WriteFileAtomic(r.file(ws), append(b, '\n')); err != nil {
		return fmt.Errorf("remember workspace %s: %w", ws.Path, err)
	}
	return nil
}

// Forget drops ws from the registry; forgetting one it does not hold is no error.
func (r *Registry) Forget(ws *Workspace) error {
	if r == nil {
		return nil
	}
	if err := os.Remove(r.file(ws)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("forget workspace %s: %w", ws.Path, err)
	}
	return nil
}

// List returns the registry's entries, sorted by agent and path. Files that do not parse are
// skipped: the registry is a convenience, never a reason to fail.
func (r *Registry) List() ([]Entry, error) {
	if r == nil {
		return nil, nil
	}
	des, err := os.ReadDir(r.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list workspaces: %w", err)
	}
	var out []Entry
	for _, de := range des {
		if !strings.HasSuffix(de.Name(), ".json") || !de.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(r.Dir, de.Name()))
		if err != nil {
			continue
		}
		var e Entry
		if json.Unmarshal(b, &e) != nil {
			continue
		}
		if (e.Workspace.Type == Git || e.Workspace.Type == JJ) && e.Workspace.Path != "" && e.Workspace.Repo != "" {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Agent != out[j].Agent {
			return out[i].Agent < out[j].Agent
		}
		return out[i].Workspace.Path < out[j].Workspace.Path
	})
	return out, nil
}

// Condition is what Check found in a workspace.
type Condition struct {
	// Gone: neither its directory nor what names it in the repository (git branch, jj
	// workspace) is left: nothing to remove.
	Gone bool
	// Missing: its directory is gone, while its branch or jj workspace name remains.
	Missing bool
	// Dirty: its working copy holds changes (git: modified or untracked files; jj: @ changes files).
	Dirty bool
	// Ahead counts the commits (jj: non-empty revisions) on top of its base; -1 when unknown.
	Ahead int
}

// Check looks at a workspace without changing it (jj snapshots the working copy, as any jj
// command does).
func Check(ctx context.Context, ws *Workspace) Condition {
	c := Condition{Ahead: -1}
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
			if out, err := git(ctx, ws.Path, "status", "--porcelain"); err == nil {
				c.Dirty = strings.TrimSpace(out) != ""
			}
		}
		tip := "refs/heads/" + ws.Branch
		if !hasBranch {
			tip = "HEAD"
			repo = ws.Path
		}
		if ws.Base != "" && isDir(repo) {
			if out, err := git(ctx, repo, "rev-list", "--count", ws.Base+".."+tip); err == nil {
				if n, err := strconv.Atoi(strings.TrimSpace(out)); err == nil {
					c.Ahead = n
				}
			}
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
		if exists {
			if revs, err := jjcmd.Revisions(ctx, ws.Path, "@"); err == nil {
				c.Dirty = len(revs) != 1 || !revs[0].Empty
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
		}
	default:
		c.Gone = !exists
	}
	return c
}
