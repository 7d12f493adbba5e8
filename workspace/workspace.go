// Package workspace picks and makes the directory an agent works in — a jj workspace (through
// jjcmd), a git worktree on a branch of its own, or the plain directory it was started in —
// and removes it again on request.
//
// Invariants:
//   - A new workspace is never inside the working copy it is made from (jj would snapshot it,
//     git would list it as untracked): by default it is <repo>-agt/NAME, next to the repository.
//   - A workspace root goes with its last workspace only when agt made it (rootMark).
//   - The user's own working copy is never moved: a jj workspace gets a new working-copy
//     commit on top of its base, a git worktree a new branch.
//   - Make leaves nothing behind when it fails, Ctrl-C included: what it made (directories,
//     the jj workspace, the git worktree and its branch) is removed again.
//   - Remove never loses work unless forced: a workspace whose working copy holds changes, or
//     whose git branch has commits on no other branch, is left alone (ErrUnsaved).
package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Workspace types, and Auto, the mode that picks one.
const (
	Auto = "auto"
	JJ   = "jj"
	Git  = "git"
	None = "none"
)

// DefaultBranchPrefix comes before the agent's name in the branch of a git worktree.
const DefaultBranchPrefix = "agt/"

// ErrUnsaved: Remove found work that removing the workspace would lose.
var ErrUnsaved = errors.New("workspace holds unsaved work")

// ErrExists: Make found the new workspace's directory, git branch or jj workspace name taken.
// The error is an *ExistsError, which says which.
var ErrExists = errors.New("workspace exists")

// ExistsError is a workspace that Make cannot make because something of that name is there:
// the directory (Path), the git branch (Branch) or the jj workspace (JJName), in Repo.
type ExistsError struct {
	Msg                        string
	Path, Branch, JJName, Repo string
}

func (e *ExistsError) Error() string { return e.Msg }
func (e *ExistsError) Unwrap() error { return ErrExists }

// Remedy is the command that removes what is in the way.
func (e *ExistsError) Remedy() string {
	switch {
	case e.Branch != "":
		return fmt.Sprintf("git -C %s branch -D %s", e.Repo, e.Branch)
	case e.JJName != "":
		return fmt.Sprintf("jj -R %s workspace forget %s", e.Repo, e.JJName)
	}
	if e.Repo != "" && Detect(e.Repo) == Git {
		return fmt.Sprintf("git -C %s worktree remove %s, or rm -r %s if it is no worktree", e.Repo, e.Path, e.Path)
	}
	return "rm -r " + e.Path
}

// Options say what workspace to make.
type Options struct {
	Mode string // auto ("" too), jj, git or none
	Dir  string // the directory the agent was asked to run in; the repository is found from it
	Name string // the agent's name: the jj workspace name, the branch suffix, the directory name
	// Base is the revision to start from: a jj revset naming one revision, or a git commit-ish.
	// "" means jj's @, or @- when @ is empty; git's HEAD.
	Base string
	// Root is the directory that holds workspaces, NAME under it; relative to the repository
	// root. "" means <repo>-agt next to the repository.
	Root string
	// BranchPrefix comes before Name in a git worktree's branch; "" means DefaultBranchPrefix.
	BranchPrefix string
	// Copy lists paths, relative to the repository root, copied into the new workspace (files
	// it does not track, such as .env); directories are copied whole.
	Copy []string
	// Setup lists commands (argv) run in order in the new workspace, after Copy, with
	// AGT_NAME and AGT_WORKSPACE in their environment. A failure fails Make.
	Setup [][]string
	// Output, when set, gets what the set-up commands print, as they print it.
	Output io.Writer
}

// Workspace describes a workspace that Make made: the JSON agt keeps in the agent's record
// and shows in its spawned event.
type Workspace struct {
	Type   string `json:"type"`             // jj, git or none
	Path   string `json:"path"`             // its root directory
	Repo   string `json:"repo,omitempty"`   // root of the working copy it was made from
	Name   string `json:"name,omitempty"`   // jj: the workspace's name
	Base   string `json:"base,omitempty"`   // jj: change id of its base; git: commit it started at
	Branch string `json:"branch,omitempty"` // git: its branch
	Change string `json:"change,omitempty"` // jj: change id of its working-copy commit
	// From is the branch the agent started from, which merge brings its work into (git): the
	// one checked out in Repo at spawn, or the one --base named. "" when that was no branch,
	// and in records of agt before it was kept (then the branch checked out in Repo now).
	From string `json:"from,omitempty"`
	// Seeded lists the files that copy and setup put there: not the agent's work (Seed).
	Seeded []Seed `json:"seeded,omitempty"`
}

// Parse reads a Workspace from its JSON.
func Parse(b []byte) (*Workspace, error) {
	var w Workspace
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("read workspace: %w", err)
	}
	switch w.Type {
	case JJ, Git, None:
	default:
		return nil, fmt.Errorf("read workspace: unknown type %q", w.Type)
	}
	if w.Type != None && (w.Path == "" || w.Repo == "") {
		return nil, fmt.Errorf("read workspace: %s workspace without path or repo", w.Type)
	}
	return &w, nil
}

// Detect says which workspace type auto picks for dir: jj when a .jj directory is found walking
// up from dir, git when a .git is, the nearer one winning (.jj first in a colocated repository);
// else none. A .git counts as git does: a directory with a HEAD, or a file naming the gitdir of
// a worktree. An empty one (a mount point another tool's sandbox left, say) is no repository.
func Detect(dir string) string {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if fi, err := os.Stat(filepath.Join(d, ".jj")); err == nil && fi.IsDir() {
			return JJ
		}
		if isGitDir(filepath.Join(d, ".git")) {
			return Git
		}
		if filepath.Dir(d) == d {
			return None
		}
	}
}

// isGitDir reports whether path is a .git that git takes: a directory holding HEAD, or a file
// that starts "gitdir:" (a worktree's, a submodule's), or a link to either.
func isGitDir(path string) bool {
	fi, err := os.Stat(path) // through a symbolic link, as git goes (repo's checkouts link .git)
	switch {
	case err != nil:
		return false
	case fi.IsDir():
		_, err := os.Stat(filepath.Join(path, "HEAD"))
		return err == nil
	case fi.Mode().IsRegular():
		f, err := os.Open(path)
		if err != nil {
			return false
		}
		defer f.Close()
		head := make([]byte, len("gitdir:"))
		n, _ := io.ReadFull(f, head)
		return string(head[:n]) == "gitdir:"
	}
	return false
}

// Make makes the agent's workspace as opts say. For none it makes nothing and returns the
// directory itself. On any failure it removes what it made.
func Make(ctx context.Context, opts Options) (ws *Workspace, err error) {
	if opts.Name == "" || opts.Name == "." || opts.Name == ".." || strings.ContainsRune(opts.Name, '/') {
		return nil, fmt.Errorf("workspace name %q: want one path element", opts.Name)
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	mode := opts.Mode
	switch mode {
	case "", Auto:
		mode = Detect(dir)
	case JJ, Git, None:
	default:
		return nil, fmt.Errorf("workspace mode %q: want auto, jj, git or none", opts.Mode)
	}
	if mode == None {
		if opts.Base != "" {
			return nil, fmt.Errorf("base %q: %s is in no jj or git repository, so there is nothing to start from", opts.Base, dir)
		}
		return &Workspace{Type: None, Path: dir}, nil
	}

	var u undo
	defer func() {
		if err != nil {
			u.run()
		}
	}()
	if mode == JJ {
		ws, err = makeJJ(ctx, opts, dir, &u)
	} else {
		ws, err = makeGit(ctx, opts, dir, &u)
	}
	if err != nil {
		return nil, err
	}
	if err := copyIn(ws.Repo, ws.Path, opts.Copy); err != nil {
		return nil, err
	}
	if err := setUp(ctx, ws.Path, opts.Name, opts.Setup, opts.Output); err != nil {
		return nil, err
	}
	if ws.Seeded, err = seeds(ctx, ws, opts); err != nil {
		return nil, err
	}
	return ws, nil
}

// Discard removes a workspace that Make just made, changes and all: for a spawn whose agent
// could not start. It gives up after a minute.
func Discard(ws *Workspace) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	Remove(ctx, ws, true)
}

// Remove removes the workspace: for jj it forgets the workspace and deletes its directory;
// for git it removes the worktree and deletes its branch. Unless force is set it refuses, with
// an error matching ErrUnsaved, when the working copy holds the agent's changes or (git) the
// branch or the worktree's HEAD has commits on no other branch whose changes its target lacks.
// It returns what it removed, as "jj workspace NAME", "directory PATH", "git worktree PATH"
// and "branch NAME", also when it stops half-way with an error. A none workspace removes
// nothing.
func Remove(ctx context.Context, ws *Workspace, force bool) ([]string, error) {
	return remove(ctx, ws, force, false)
}

// WouldRemove is Remove's dry run: the same checks, the same answer, nothing removed.
func WouldRemove(ctx context.Context, ws *Workspace, force bool) ([]string, error) {
	return remove(ctx, ws, force, true)
}

func remove(ctx context.Context, ws *Workspace, force, dry bool) (removed []string, err error) {
	switch ws.Type {
	case None:
		return nil, nil
	case JJ:
		removed, err = removeJJ(ctx, ws, force, dry)
	case Git:
		removed, err = removeGit(ctx, ws, force, dry)
	default:
		return nil, fmt.Errorf("remove workspace: unknown type %q", ws.Type)
	}
	if err == nil && !dry {
		removeRoot(ws)
	}
	return removed, err
}

// String names the workspace for people: "git worktree PATH (branch B)", "jj workspace NAME
// at PATH" or "directory PATH".
func (w *Workspace) String() string {
	switch w.Type {
	case Git:
		return fmt.Sprintf("git worktree %s (branch %s)", w.Path, w.Branch)
	case JJ:
		return fmt.Sprintf("jj workspace %s at %s", w.Name, w.Path)
	}
	return "directory " + w.Path
}

// Workdir is the directory in the workspace that matches dir in the working copy it was made
// from, so an agent spawned from a subdirectory starts in the same subdirectory; the
// workspace's root when there is no such directory.
func (w *Workspace) Workdir(dir string) string {
	if w.Type == None || w.Repo == "" {
		return w.Path
	}
	rel, err := filepath.Rel(resolve(w.Repo), resolve(dir))
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		return w.Path
	}
	if fi, err := os.Stat(filepath.Join(w.Path, rel)); err == nil && fi.IsDir() {
		return filepath.Join(w.Path, rel)
	}
	return w.Path
}

// place picks the new workspace's directory for the repository at repo, checks that it is
// free and outside the working copy, and creates its parent (which undo removes again if it
// made it and it is empty). The directory itself is left for jj or git to create.
func place(repo string, opts Options, u *undo) (string, error) {
	root := opts.Root
	switch {
	case root == "":
		root = repo + "-agt"
	case !filepath.IsAbs(root):
		root = filepath.Join(repo, root)
	}
	path := filepath.Join(root, opts.Name)
	if inside(resolve(path), resolve(repo)) {
		return "", fmt.Errorf("workspace directory %s is inside the working copy %s\nhint: set the workspace root to a directory outside the repository", path, repo)
	}
	if _, err := os.Lstat(path); err == nil {
		return "", &ExistsError{Msg: fmt.Sprintf("workspace directory %s already exists", path), Path: path, Repo: repo}
	}
	made, err := mkdirAll(root)
	for _, d := range made { // undo runs last-in first-out: the innermost goes first
		u.push(func(context.Context) { os.Remove(d) })
	}
	if err != nil {
		return "", fmt.Errorf("create workspace root: %w", err)
	}
	if opts.Root != "" && len(made) > 0 && made[len(made)-1] == filepath.Clean(root) {
		mark := filepath.Join(root, rootMark)
		if err := os.WriteFile(mark, []byte(rootMarkText), 0o644); err != nil {
			return "", fmt.Errorf("create workspace root: %w", err)
		}
		u.push(func(context.Context) { os.Remove(mark) })
	}
	return path, nil
}

// rootMark is the file that agt leaves in a configured workspace root ([workspace] root) that
// it made itself. A root is removed with its last workspace only when agt made it: the default
// <repo>-agt is agt's by its name; any other root only when it holds this mark, so a directory
// the user made beforehand (which has none) stays, empty or not.
const (
	rootMark     = ".agt-root"
	rootMarkText = "agt made this directory for its workspaces; it goes with the last of them\n"
)

// removeRoot removes the workspace root of ws once its last workspace is gone, when agt made
// it: <repo>-agt, or a configured root that holds nothing but rootMark.
func removeRoot(ws *Workspace) {
	parent := filepath.Dir(ws.Path)
	if ws.Repo != "" && parent == ws.Repo+"-agt" {
		os.Remove(parent) // fails, as it should, while it holds anything
		return
	}
	entries, err := os.ReadDir(parent)
	if err != nil || len(entries) != 1 || entries[0].Name() != rootMark || !entries[0].Type().IsRegular() {
		return
	}
	mark := filepath.Join(parent, rootMark)
	if os.Remove(mark) == nil && os.Remove(parent) != nil {
		os.WriteFile(mark, []byte(rootMarkText), 0o644) // a workspace came meanwhile: still agt's
	}
}

// mkdirAll is os.MkdirAll that returns the directories it created, outermost first.
func mkdirAll(dir string) ([]string, error) {
	var missing []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	var made []string
	for i := len(missing) - 1; i >= 0; i-- {
		if err := os.Mkdir(missing[i], 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return made, err
		} else if err == nil {
			made = append(made, missing[i])
		}
	}
	return made, nil
}

// inside reports whether path is dir or below it.
func inside(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// resolve returns path with symlinks resolved as far as it exists.
func resolve(path string) string {
	path = filepath.Clean(path)
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	if parent := filepath.Dir(path); parent != path {
		return filepath.Join(resolve(parent), filepath.Base(path))
	}
	return path
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// undo collects what to take back when Make fails; it runs last-in first-out, on a context of
// its own, so a Ctrl-C that failed Make does not also stop the cleanup.
type undo []func(context.Context)

func (u *undo) push(f func(context.Context)) { *u = append(*u, f) }

func (u undo) run() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := len(u) - 1; i >= 0; i-- {
		u[i](ctx)
	}
}
