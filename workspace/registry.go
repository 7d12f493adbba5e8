package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

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
