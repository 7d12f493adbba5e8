package fakejj

import (
	"bytes"
	"crypto/sha1"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The fake jj's files. A revision's tree is:
//
//   - the @ of a workspace: the files of its directory (.jj aside); the default workspace's
//     directory is the repository's;
//   - any other revision: .jj/trees/CHANGE_ID if it is there (jj commit writes it), else its
//     parent's tree, else nothing.
//
// A revs line may end in the change id of the revision's parent: "SYMBOL CHANGE_ID STATE
// PARENT". workspace add writes the new @ so, and copies its base's tree into the new
// directory, as jj checks it out; that @ is empty while the directory's files are its
// parent's. X..Y walks the parents from Y, children first. The diff is whole files: a changed
// file is all its old lines removed and all its new lines added, in jj's Git format.

// tree returns the files of the revision change, by path relative to the root.
func (w *fakeJJWorkspace) tree(change string, seen int) map[string][]byte {
	if dir := w.workspaceDirOf(change); dir != "" {
		return fakeJJFiles(dir)
	}
	if d := filepath.Join(w.store, "trees", change); fakeJJIsDir(d) {
		return fakeJJFiles(d)
	}
	if p := w.parentOf(change); p != "" && seen < 100 {
		return w.tree(p, seen+1)
	}
	return map[string][]byte{}
}

// workspaceDirOf returns the directory of the workspace whose @ change is, or "".
func (w *fakeJJWorkspace) workspaceDirOf(change string) string {
	root := filepath.Dir(w.store)
	for _, l := range w.lines("revs") {
		if len(l) >= 3 && l[1] == change {
			if l[0] == "@" {
				return root
			}
			if name, ok := strings.CutSuffix(l[0], "@"); ok {
				for _, ws := range w.lines("workspaces") {
					if len(ws) >= 2 && ws[0] == name {
						return ws[1]
					}
				}
			}
		}
	}
	return ""
}

// parentOf returns the parent recorded on change's revs line, or "".
func (w *fakeJJWorkspace) parentOf(change string) string {
	for _, l := range w.lines("revs") {
		if len(l) >= 4 && l[1] == change {
			return l[3]
		}
	}
	return ""
}

// one resolves a revset that must name one revision to its change id; "" when it does not.
func (w *fakeJJWorkspace) one(revset string) string {
	if revs := w.resolve(revset); len(revs) == 1 {
		return revs[0][0]
	}
	return ""
}

// rangeOf resolves X..Y: Y and its ancestors, children first, down to X (left out).
func (w *fakeJJWorkspace) rangeOf(x, y string) [][2]string {
	from, to := w.one(x), w.one(y)
	if from == "" || to == "" {
		return nil
	}
	out := [][2]string{}
	for id, n := to, 0; id != "" && id != from && n < 100; id, n = w.parentOf(id), n+1 {
		out = append(out, [2]string{id, w.stateOf(id)})
	}
	return out
}

// stateOf is "empty" or "changed" for change: computed for a named workspace's @, as declared
// for the others.
func (w *fakeJJWorkspace) stateOf(change string) string {
	for _, l := range w.lines("revs") {
		if len(l) >= 3 && l[1] == change {
			if strings.HasSuffix(l[0], "@") && l[0] != "@" {
				return w.wcState(change)
			}
			return l[2]
		}
	}
	return "changed"
}

// wcState is the state of a named workspace's @: empty while its files are its parent's.
func (w *fakeJJWorkspace) wcState(change string) string {
	if fakeJJSame(w.tree(change, 0), w.parentTree(change)) {
		return "empty"
	}
	return "changed"
}

func (w *fakeJJWorkspace) parentTree(change string) map[string][]byte {
	if p := w.parentOf(change); p != "" {
		return w.tree(p, 0)
	}
	return map[string][]byte{}
}

// diffCmd is `jj diff -r REV --name-only` and `jj diff --from A --to B --git`.
func (w *fakeJJWorkspace) diffCmd(opts map[string]string, cwd string) int {
	var from, to map[string][]byte
	var rev string
	if r, ok := opts["-r"]; ok {
		if rev = w.one(r); rev == "" {
			fmt.Fprintf(os.Stderr, "Error: Revision `%s` doesn't exist\n", r)
			return 1
		}
		from, to = w.parentTree(rev), w.tree(rev, 0)
	} else {
		a, b := w.one(opts["--from"]), w.one(opts["--to"])
		if a == "" || b == "" {
			fmt.Fprintf(os.Stderr, "Error: Revision `%s` doesn't exist\n", opts["--from"]+" or "+opts["--to"])
			return 1
		}
		from, to = w.tree(a, 0), w.tree(b, 0)
	}
	var paths []string
	for p := range from {
		paths = append(paths, p)
	}
	for p := range to {
		if _, ok := from[p]; !ok {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	root := w.root
	for _, p := range paths {
		a, inA := from[p]
		b, inB := to[p]
		if inA && inB && bytes.Equal(a, b) {
			continue
		}
		if _, ok := opts["--name-only"]; ok {
			rel, err := filepath.Rel(cwd, filepath.Join(root, p))
			if err != nil {
				rel = p
			}
			fmt.Println(rel)
			continue
		}
		fmt.Print(fakeJJGitDiff(p, a, inA, b, inB))
	}
	return 0
}

// commitCmd is `jj commit -m MESSAGE` in a named workspace: its @ becomes a revision of its
// own, its files kept in .jj/trees, and a new empty @ goes on top.
func (w *fakeJJWorkspace) commitCmd(message string) int {
	if w.name == "default" {
		fmt.Fprintln(os.Stderr, "Error: the fake jj commits in a workspace agt added only")
		return 1
	}
	at := w.one("@")
	if at == "" {
		fmt.Fprintln(os.Stderr, "Error: Revision `@` doesn't exist")
		return 1
	}
	dst := filepath.Join(w.store, "trees", at)
	for p, b := range w.tree(at, 0) {
		os.MkdirAll(filepath.Dir(filepath.Join(dst, p)), 0o755)
		os.WriteFile(filepath.Join(dst, p), b, 0o644)
	}
	os.MkdirAll(dst, 0o755)
	next := fakeJJChangeID(at)
	var out []string
	for _, l := range w.lines("revs") {
		if len(l) >= 3 && l[1] == at {
			l = []string{"-", at, "changed", w.parentOf(at)}
		}
		out = append(out, strings.TrimSpace(strings.Join(l, " ")))
	}
	out = append(out, w.name+"@ "+next+" empty "+at)
	os.WriteFile(filepath.Join(w.store, "revs"), []byte(strings.Join(out, "\n")+"\n"), 0o600)
	w.appendLine("descriptions", at+" "+strings.ReplaceAll(message, "\n", " "))
	fmt.Fprintf(os.Stderr, "Working copy  (@) now at: %s (empty) (no description set)\n", next[:8])
	return 0
}

// checkout writes the tree of change into dir, as workspace add does.
func (w *fakeJJWorkspace) checkout(change, dir string) {
	for p, b := range w.tree(change, 0) {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
		os.WriteFile(filepath.Join(dir, p), b, 0o644)
	}
}

// fakeJJFiles reads the files under dir, .jj aside, by slash-separated relative path.
func fakeJJFiles(dir string) map[string][]byte {
	files := map[string][]byte{}
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			if rel == ".jj" {
				return filepath.SkipDir
			}
			return nil
		}
		if b, err := os.ReadFile(path); err == nil {
			files[filepath.ToSlash(rel)] = b
		}
		return nil
	})
	return files
}

func fakeJJSame(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for p, x := range a {
		if y, ok := b[p]; !ok || !bytes.Equal(x, y) {
			return false
		}
	}
	return true
}

func fakeJJIsDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// fakeJJGitDiff is one file's section of jj's Git-format diff, the whole file one hunk.
func fakeJJGitDiff(path string, a []byte, inA bool, b []byte, inB bool) string {
	var s strings.Builder
	fmt.Fprintf(&s, "diff --git a/%s b/%s\n", path, path)
	switch {
	case !inA:
		fmt.Fprintf(&s, "new file mode 100644\nindex 0000000000..%s\n--- /dev/null\n+++ b/%s\n", fakeJJHash(b), path)
	case !inB:
		fmt.Fprintf(&s, "deleted file mode 100644\nindex %s..0000000000\n--- a/%s\n+++ /dev/null\n", fakeJJHash(a), path)
	default:
		fmt.Fprintf(&s, "index %s..%s 100644\n--- a/%s\n+++ b/%s\n", fakeJJHash(a), fakeJJHash(b), path, path)
	}
	old, new := fakeJJLines(a), fakeJJLines(b)
	fmt.Fprintf(&s, "@@ -%s +%s @@\n", fakeJJRange(len(old)), fakeJJRange(len(new)))
	for _, l := range old {
		s.WriteString("-" + l)
	}
	for _, l := range new {
		s.WriteString("+" + l)
	}
	return s.String()
}

func fakeJJLines(b []byte) []string {
	var out []string
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			out = append(out, string(b)+"\n\\ No newline at end of file\n")
			break
		}
		out = append(out, string(b[:i+1]))
		b = b[i+1:]
	}
	return out
}

func fakeJJRange(n int) string {
	if n == 0 {
		return "0,0"
	}
	return fmt.Sprintf("1,%d", n)
}

func fakeJJHash(b []byte) string {
	sum := sha1.Sum(b)
	return fmt.Sprintf("%x", sum)[:10]
}
