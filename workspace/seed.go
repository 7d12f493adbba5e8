package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"agt/jjcmd"
)

// Seed is a file that agt itself put in a new workspace (copy, or what setup made or changed),
// as it was once set-up ended. Such a file is not the agent's work while it stays as it was: it
// makes no workspace dirty, and diff and merge leave it out. If the agent changes it, it counts.
type Seed struct {
	Path string `json:"path"` // relative to the workspace's root, slash-separated
	// Sum is the file's SHA-256 in hex, "link:TARGET" for a symlink, "" for a file set-up deleted.
	Sum string `json:"sum"`
}

// maxSeeds bounds the seeds a workspace records. Files past it count as the agent's work: a
// workspace then reads dirty, never clean by mistake.
const maxSeeds = 1000

// seeds records the files that differ from the base once copy and setup ran: for git, what git
// status reports (untracked files each on its own); for jj, what the working-copy revision
// changes. Nothing to record without copy or setup.
func seeds(ctx context.Context, ws *Workspace, opts Options) ([]Seed, error) {
	if len(opts.Copy) == 0 && len(opts.Setup) == 0 {
		return nil, nil
	}
	paths, err := changedPaths(ctx, ws)
	if err != nil {
		return nil, fmt.Errorf("record what set-up put in the workspace: %w", err)
	}
	var out []Seed
	for _, p := range paths {
		if len(out) == maxSeeds {
			break
		}
		out = append(out, Seed{Path: p, Sum: fileSum(filepath.Join(ws.Path, filepath.FromSlash(p)))})
	}
	return out, nil
}

// changedPaths lists the paths whose content in the working copy differs from the last commit:
// git's modified, deleted and untracked files (ignored ones aside); jj's files changed by @.
func changedPaths(ctx context.Context, ws *Workspace) ([]string, error) {
	if ws.Type == JJ {
		return jjcmd.Changed(ctx, ws.Path, "@")
	}
	out, err := git(ctx, ws.Path, "status", "--porcelain", "-z", "--untracked-files=all", "--no-renames")
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, e := range strings.Split(out, "\x00") {
		if len(e) > 3 {
			paths = append(paths, e[3:])
		}
	}
	return paths, nil
}

// agentChanges is changedPaths without the seeds that are still as agt left them: the files
// of the agent's uncommitted work.
func agentChanges(ctx context.Context, ws *Workspace) ([]string, error) {
	paths, err := changedPaths(ctx, ws)
	if err != nil {
		return nil, err
	}
	return ws.dropSeeds(paths), nil
}

// dropSeeds returns paths without the seeds that are unchanged on disk.
func (w *Workspace) dropSeeds(paths []string) []string {
	if len(w.Seeded) == 0 {
		return paths
	}
	kept := paths[:0:0]
	for _, p := range paths {
		if !w.seedUnchanged(p) {
			kept = append(kept, p)
		}
	}
	return kept
}

// seedUnchanged reports whether path is a seed that is still as agt left it.
func (w *Workspace) seedUnchanged(path string) bool {
	for _, s := range w.Seeded {
		if s.Path == path {
			sum := fileSum(filepath.Join(w.Path, filepath.FromSlash(path)))
			return sum == s.Sum && sum != "error" // a file agt could not read counts as changed
		}
	}
	return false
}

// unchangedSeeds lists the seeds that are still as agt left them.
func (w *Workspace) unchangedSeeds() []string {
	var out []string
	for _, s := range w.Seeded {
		if w.seedUnchanged(s.Path) {
			out = append(out, s.Path)
		}
	}
	return out
}

// fileSum is a Seed's Sum of the file at path now.
func fileSum(path string) string {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return ""
	case err != nil:
		return "error"
	case fi.Mode()&fs.ModeSymlink != 0:
		target, _ := os.Readlink(path)
		return "link:" + target
	case !fi.Mode().IsRegular():
		return "special"
	}
	f, err := os.Open(path)
	if err != nil {
		return "error"
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "error"
	}
	return hex.EncodeToString(h.Sum(nil))
}

// listFiles names files for a one-line message: "a, b, c and 4 more". A name an agent gave
// a file with control bytes, or bytes that are no UTF-8, is shown quoted with them escaped:
// it never reaches a terminal as it is.
func listFiles(paths []string) string {
	const shown = 5
	names := make([]string, 0, shown)
	for _, p := range paths[:min(len(paths), shown)] {
		if strings.IndexFunc(p, func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' }) >= 0 || !utf8.ValidString(p) {
			p = strconv.Quote(p)
		}
		names = append(names, p)
	}
	if len(paths) <= shown {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names, ", "), len(paths)-shown)
}
