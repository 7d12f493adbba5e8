package fakejj

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// The fake jj's squash, conflicts and operations, for agt merge on jj:
//
//	jj -R REPO squash --from BASE..NAME@ --into BASE (-m MESSAGE | --use-destination-message) [FILESET]
//	jj -R REPO operation log -n 1 --no-graph -T TEMPLATE
//	jj -R REPO operation restore OPERATION
//	jj -R REPO resolve --list -r REVSET
//	jj -R ROOT workspace update-stale
//
// squash moves the changes of the range (the files of NAME@ that differ from BASE's, but for
// those the fileset ~(root-file:"P" | …) leaves out) into BASE, which lands in the repository's
// files when BASE is the default workspace's @. When the default @ sits on BASE, it is rebased:
// a moved file it changed itself, to something else, becomes a conflict (whole files, where jj
// merges lines), written with markers and kept in .jj/conflicts as "CHANGE_ID PATH", which the
// revset `conflicts() & (X::)` and resolve --list read. The range's revisions go; NAME@ is new
// on BASE, or keeps its change id while it still holds left-out files. Each squash first saves
// the state (.jj's files and the default workspace's files) under the current operation id,
// which operation restore puts back.

// squashCmd is jj squash.
func (w *fakeJJWorkspace) squashCmd(opts map[string]string, pos []string) int {
	x, y, ok := strings.Cut(opts["--from"], "..")
	if !ok || x != opts["--into"] {
		fmt.Fprintln(os.Stderr, "Error: the fake jj squashes a range X..Y into X only")
		return 2
	}
	exclude, ok := fakeJJExcludes(pos)
	if !ok {
		fmt.Fprintf(os.Stderr, "Error: the fake jj takes no fileset but ~(root-file:\"P\" | ...), got %q\n", pos)
		return 2
	}
	base, tip := w.one(x), w.one(y)
	if base == "" || tip == "" {
		fmt.Fprintf(os.Stderr, "Error: Revision `%s` doesn't exist\n", opts["--from"])
		return 1
	}
	sources := w.rangeOf(x, y)
	oldBase, agent := w.tree(base, 0), w.tree(tip, 0)
	newBase := map[string][]byte{}
	for p, b := range oldBase {
		newBase[p] = b
	}
	var moved []string
	for _, p := range fakeJJPaths(oldBase, agent) {
		if exclude[p] || bytes.Equal(oldBase[p], agent[p]) && (oldBase[p] == nil) == (agent[p] == nil) {
			continue
		}
		moved = append(moved, p)
		if b, in := agent[p]; in {
			newBase[p] = b
		} else {
			delete(newBase, p)
		}
	}
	w.saveOp()
	root := filepath.Dir(w.store)
	userAt := w.one("default@")
	if dir := w.workspaceDirOf(base); dir == root {
		fakeJJWrite(root, moved, newBase)
	} else {
		d := filepath.Join(w.store, "trees", base)
		os.RemoveAll(d)
		os.MkdirAll(d, 0o755)
		fakeJJWrite(d, fakeJJPaths(newBase, nil), newBase)
		if userAt != "" && w.userParent() == base {
			w.rebaseUser(userAt, moved, oldBase, newBase)
		}
	}
	// The range goes; NAME@ sits on BASE, new unless it still holds left-out files.
	name, _ := strings.CutSuffix(y, "@")
	next := fakeJJChangeID(tip)
	for p := range exclude {
		if b, in := agent[p]; in && !bytes.Equal(b, newBase[p]) {
			next = tip
		}
	}
	var out []string
	for _, l := range w.lines("revs") {
		if len(l) >= 3 && slices.ContainsFunc(sources, func(s [2]string) bool { return s[0] == l[1] }) {
			continue
		}
		out = append(out, strings.Join(l, " "))
	}
	out = append(out, name+"@ "+next+" empty "+base)
	os.WriteFile(filepath.Join(w.store, "revs"), []byte(strings.Join(out, "\n")+"\n"), 0o600)
	if m, ok := opts["-m"]; ok {
		w.appendLine("descriptions", base+" "+strings.ReplaceAll(m, "\n", " "))
	}
	return 0
}

// userParent is the parent of the default workspace's @: its recorded parent, else @-.
func (w *fakeJJWorkspace) userParent() string {
	at := w.one("default@")
	if p := w.parentOf(at); p != "" {
		return p
	}
	for _, l := range w.lines("revs") {
		if len(l) >= 3 && l[0] == "@-" {
			return l[1]
		}
	}
	return ""
}

// rebaseUser rebases the default workspace's @ onto the new base: moved files it left alone
// take the new content; those it changed to something else conflict.
func (w *fakeJJWorkspace) rebaseUser(at string, moved []string, oldBase, newBase map[string][]byte) {
	root := filepath.Dir(w.store)
	for _, p := range moved {
		mine, err := os.ReadFile(filepath.Join(root, p))
		_, wasThere := oldBase[p]
		switch {
		case err != nil && !wasThere, err == nil && wasThere && bytes.Equal(mine, oldBase[p]):
			fakeJJWrite(root, []string{p}, newBase)
		case err == nil && bytes.Equal(mine, newBase[p]):
		default:
			markers := fmt.Sprintf("<<<<<<< Conflict 1 of 1\n%%%%%%%%%%%%%%%% Changes from base to side #1\n+++++++ Contents of side #2\n%s>>>>>>> Conflict 1 of 1 ends\n", newBase[p])
			os.WriteFile(filepath.Join(root, p), []byte(markers), 0o644)
			w.appendLine("conflicts", at+" "+p)
		}
	}
}

// conflicted resolves `conflicts() & (X::)`: the conflicted revisions that are X or below it.
func (w *fakeJJWorkspace) conflicted(x string) [][2]string {
	base := w.one(x)
	out := [][2]string{}
	for _, l := range w.lines("conflicts") {
		if slices.ContainsFunc(out, func(r [2]string) bool { return r[0] == l[0] }) {
			continue
		}
		for id, n := l[0], 0; id != "" && n < 100; n++ {
			if id == base {
				out = append(out, [2]string{l[0], "changed"})
				break
			}
			if id == w.one("default@") {
				id = w.userParent()
			} else {
				id = w.parentOf(id)
			}
		}
	}
	return out
}

// resolveList is `jj resolve --list -r REV`.
func (w *fakeJJWorkspace) resolveList(rev string) int {
	id := w.one(rev)
	n := 0
	for _, l := range w.lines("conflicts") {
		if len(l) == 2 && l[0] == id {
			fmt.Printf("%s    2-sided conflict\n", l[1])
			n++
		}
	}
	if n == 0 {
		fmt.Fprintln(os.Stderr, "Error: No conflicts found at this revision")
		return 2
	}
	return 0
}

// opState lists what an operation's saved state holds: .jj's files and the default
// workspace's files.
var opState = []string{"revs", "workspaces", "descriptions", "conflicts", "trees"}

// currentOp is the id of the current operation.
func (w *fakeJJWorkspace) currentOp() string {
	ops := w.lines("oplog")
	if len(ops) == 0 {
		return "000000000000"
	}
	return ops[len(ops)-1][0]
}

// saveOp keeps the state under the current operation's id and starts a new operation.
func (w *fakeJJWorkspace) saveOp() {
	cur := w.currentOp()
	dst := filepath.Join(w.store, "ops", cur)
	os.RemoveAll(dst)
	for _, f := range opState {
		fakeJJCopy(filepath.Join(w.store, f), filepath.Join(dst, f))
	}
	files := fakeJJFiles(filepath.Dir(w.store))
	fakeJJWrite(filepath.Join(dst, "wc"), fakeJJPaths(files, nil), files)
	w.appendLine("oplog", fakeJJChangeID(cur)[:12])
}

// restoreCmd is `jj operation restore OP`.
func (w *fakeJJWorkspace) restoreCmd(op string) int {
	src := filepath.Join(w.store, "ops", op)
	if !fakeJJIsDir(src) {
		fmt.Fprintf(os.Stderr, "Error: No operation ID matching \"%s\"\n", op)
		return 1
	}
	for _, f := range opState {
		os.RemoveAll(filepath.Join(w.store, f))
		fakeJJCopy(filepath.Join(src, f), filepath.Join(w.store, f))
	}
	root := filepath.Dir(w.store)
	for p := range fakeJJFiles(root) {
		os.Remove(filepath.Join(root, p))
	}
	saved := fakeJJFiles(filepath.Join(src, "wc"))
	fakeJJWrite(root, fakeJJPaths(saved, nil), saved)
	w.appendLine("oplog", fakeJJChangeID(op)[:12])
	fmt.Fprintf(os.Stderr, "Restored to operation: %s\n", op)
	return 0
}

var fakeJJExclude = regexp.MustCompile(`root-file:"((?:[^"\\]|\\.)*)"`)

// fakeJJExcludes reads the fileset agt passes to leave files out: ~(root-file:"P" | …).
func fakeJJExcludes(pos []string) (map[string]bool, bool) {
	out := map[string]bool{}
	switch {
	case len(pos) == 0:
		return out, true
	case len(pos) > 1 || !strings.HasPrefix(pos[0], "~(") || !strings.HasSuffix(pos[0], ")"):
		return nil, false
	}
	for _, m := range fakeJJExclude.FindAllStringSubmatch(pos[0], -1) {
		out[strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(m[1])] = true
	}
	return out, len(out) > 0
}

// fakeJJPaths lists the paths of a and b, sorted, once each.
func fakeJJPaths(a, b map[string][]byte) []string {
	var out []string
	for p := range a {
		out = append(out, p)
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// fakeJJWrite writes the files of paths under dir from files, removing those files lacks.
func fakeJJWrite(dir string, paths []string, files map[string][]byte) {
	for _, p := range paths {
		dst := filepath.Join(dir, filepath.FromSlash(p))
		b, ok := files[p]
		if !ok {
			os.Remove(dst)
			continue
		}
		os.MkdirAll(filepath.Dir(dst), 0o755)
		os.WriteFile(dst, b, 0o644)
	}
}

// fakeJJCopy copies a file or a directory tree; a missing src copies nothing.
func fakeJJCopy(src, dst string) {
	fi, err := os.Stat(src)
	if err != nil {
		return
	}
	if !fi.IsDir() {
		os.MkdirAll(filepath.Dir(dst), 0o755)
		if b, err := os.ReadFile(src); err == nil {
			os.WriteFile(dst, b, 0o600)
		}
		return
	}
	files := fakeJJFiles(src)
	os.MkdirAll(dst, 0o755)
	fakeJJWrite(dst, fakeJJPaths(files, nil), files)
	entries, _ := os.ReadDir(src)
	for _, e := range entries {
		if e.IsDir() {
			os.MkdirAll(filepath.Join(dst, e.Name()), 0o755)
		}
	}
}
