package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// maxEntries bounds how many entries of one PATH directory are looked at for links.
const maxEntries = 4096

// programDirs returns the directories inside hidden ones that the agent's programs live in,
// to bind back read-only: each directory of its PATH, its program's, and where their links
// lead (the package a node_modules/.bin link points into: the whole node_modules, since a
// package needs its siblings). Never a hidden directory itself, nor one holding any of keepOut
// (the home, the run directory).
func programDirs(pathEnv, program string, hidden, keepOut []string) []string {
	var found []string
	add := func(d string) {
		if !within(d, hidden) || slices.Contains(hidden, d) {
			return // visible already, or the very directory hidden
		}
		for _, k := range keepOut {
			if k != "" && (d == k || isWithin(k, d)) {
				return
			}
		}
		found = append(found, d)
	}
	follow := func(link string) {
		t, err := filepath.EvalSymlinks(link)
		if err != nil {
			return
		}
		d := filepath.Dir(t)
		if i := strings.Index(t, "/node_modules/"); i >= 0 {
			d = t[:i+len("/node_modules")]
		}
		add(d)
	}
	dirs := filepath.SplitList(pathEnv)
	if filepath.IsAbs(program) {
		dirs = append(dirs, filepath.Dir(program))
		follow(program)
	}
	for _, d := range dirs {
		if !filepath.IsAbs(d) {
			continue // "" and "." mean the working directory, which is the workspace
		}
		r, err := filepath.EvalSymlinks(d)
		if err != nil {
			continue
		}
		add(r)
		if !within(r, hidden) {
			continue
		}
		f, err := os.Open(r)
		if err != nil {
			continue
		}
		entries, _ := f.ReadDir(maxEntries)
		f.Close()
		for _, e := range entries {
			if e.Type()&os.ModeSymlink != 0 {
				follow(filepath.Join(r, e.Name()))
			}
		}
	}
	// Each once, and none inside another: its parent brings it.
	slices.Sort(found)
	found = slices.Compact(found)
	return topmost(found)
}

// repoStore returns, when the workspace shares a repository kept outside it (a git worktree,
// a jj workspace), the directories of that repository the agent writes to record its work
// (objects, refs, logs, the worktree's own state), and the rest of it, which it reads: its
// config and hooks stay read-only, since the user's own commands run what they say.
func repoStore(ws string) (rw, ro []string) {
	if gd := linkedDir(filepath.Join(ws, ".git"), "gitdir: ", ws); gd != "" {
		if common := linkedDir(filepath.Join(gd, "commondir"), "", gd); common != "" && common != gd {
			// A worktree: its own state (HEAD, index) in worktrees/NAME of the common one.
			rw, ro = gitStore(common)
			return append(rw, gd), ro
		}
		return gitStore(gd)
	}
	repo := linkedDir(filepath.Join(ws, ".jj", "repo"), "", filepath.Join(ws, ".jj"))
	if repo == "" {
		return nil, nil
	}
	rw = []string{repo}
	if exists(filepath.Join(repo, "config.toml")) {
		ro = append(ro, filepath.Join(repo, "config.toml"))
	}
	store := filepath.Join(repo, "store")
	if g := linkedDir(filepath.Join(store, "git_target"), "", store); g != "" && !isWithin(g, repo) {
		grw, gro := gitStore(g) // a git repository beside the jj one (colocated)
		rw, ro = append(rw, grw...), append(ro, gro...)
	}
	return rw, ro
}

// gitStore splits a git directory into what a commit writes and the rest.
func gitStore(gitDir string) (rw, ro []string) {
	ro = []string{gitDir}
	for _, sub := range []string{"objects", "refs", "logs"} {
		if p := filepath.Join(gitDir, sub); exists(p) {
			rw = append(rw, p)
		}
	}
	return rw, ro
}

// linkedDir reads a small file that names a directory (after prefix), relative to base or
// absolute, and returns that directory when it exists; "" otherwise (no such file: no link).
func linkedDir(file, prefix, base string) string {
	fi, err := os.Lstat(file)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > 4096 {
		return ""
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(string(b), "\n")
	p, ok := strings.CutPrefix(strings.TrimSpace(line), prefix)
	if !ok || p == "" {
		return ""
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(base, p)
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
		return ""
	}
	return filepath.Clean(p)
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }
