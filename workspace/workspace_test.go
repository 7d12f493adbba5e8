package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// gitRepo makes a git repository with one commit in a fresh directory and returns its path.
// Tests using it need git and change the environment, so they do not run in parallel.
func gitRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	for k, v := range map[string]string{
		"GIT_AUTHOR_NAME": "agt test", "GIT_AUTHOR_EMAIL": "agt@example.com",
		"GIT_COMMITTER_NAME": "agt test", "GIT_COMMITTER_EMAIL": "agt@example.com",
		"GIT_CONFIG_GLOBAL": os.DevNull, "GIT_CONFIG_NOSYSTEM": "1",
	} {
		t.Setenv(k, v)
	}
	repo := filepath.Join(t.TempDir(), "repo")
	run(t, "", "git", "init", "-q", "-b", "main", repo)
	writeFile(t, filepath.Join(repo, "README"), "hello\n")
	writeFile(t, filepath.Join(repo, "sub", "file"), "in sub\n")
	run(t, repo, "git", "add", ".")
	run(t, repo, "git", "commit", "-q", "-m", "first")
	return repo
}

func run(t *testing.T, dir string, argv ...string) string {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// assertNothingLeft checks that a failed Make left no worktree, branch or directory.
func assertNothingLeft(t *testing.T, repo, name string) {
	t.Helper()
	if exists(repo + "-agt") {
		t.Errorf("%s-agt left behind", repo)
	}
	if out := run(t, repo, "git", "branch", "--list", "agt/"+name); out != "" {
		t.Errorf("branch left behind: %s", out)
	}
	if out := run(t, repo, "git", "worktree", "list", "--porcelain"); strings.Count(out, "worktree ") != 1 {
		t.Errorf("worktree left behind:\n%s", out)
	}
}

func TestDetect(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"plain/deep", "jj/.jj", "jj/src", "git/.git", "git/src", "both/.jj", "both/.git", "jj/inner/.git",
		"hollow/.git", "hollow/src"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range []string{"git/.git", "both/.git", "jj/inner/.git"} {
		writeFile(t, filepath.Join(root, g, "HEAD"), "ref: refs/heads/main\n")
	}
	writeFile(t, filepath.Join(root, "linked", ".git"), "gitdir: /elsewhere\n")
	writeFile(t, filepath.Join(root, "blank", ".git"), "") // a mount point left by a sandbox
	if err := os.MkdirAll(filepath.Join(root, "linkedgit"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "git", ".git"), filepath.Join(root, "linkedgit", ".git")); err != nil {
		t.Fatal(err) // as repo's checkouts have it
	}
	for dir, want := range map[string]string{
		"plain/deep": None, "jj/src": JJ, "git/src": Git, "both": JJ, "jj/inner": Git, "linked": Git,
		"hollow/src": None, "blank": None, "linkedgit": Git,
	} {
		if got := Detect(filepath.Join(root, dir)); got != want {
			t.Errorf("Detect(%s) = %s, want %s", dir, got, want)
		}
	}
}

func TestMakeNone(t *testing.T) {
	dir := t.TempDir()
	ws, err := Make(context.Background(), Options{Dir: dir, Name: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if ws.Type != None || ws.Path != dir || ws.Workdir(dir) != dir {
		t.Errorf("got %+v", ws)
	}
	if _, err := Make(context.Background(), Options{Dir: dir, Name: "x", Base: "main"}); err == nil {
		t.Error("a base outside any repository was accepted")
	}
}

func TestMakeRejects(t *testing.T) {
	for _, o := range []Options{{Name: "a/b"}, {Name: ".."}, {Name: ""}, {Name: "x", Mode: "svn"}} {
		o.Dir = t.TempDir()
		if _, err := Make(context.Background(), o); err == nil {
			t.Errorf("Make(%+v) succeeded", o)
		}
	}
}

func TestMakeGit(t *testing.T) {
	repo := gitRepo(t)
	head := run(t, repo, "git", "rev-parse", "HEAD")
	ws, err := Make(context.Background(), Options{Dir: filepath.Join(repo, "sub"), Name: "fix"})
	if err != nil {
		t.Fatal(err)
	}
	want := &Workspace{Type: Git, Path: filepath.Join(repo+"-agt", "fix"), Repo: repo, Branch: "agt/fix", Base: head, From: "main"}
	if !reflect.DeepEqual(ws, want) {
		t.Fatalf("got %+v\nwant %+v", ws, want)
	}
	if got := run(t, ws.Path, "git", "branch", "--show-current"); got != "agt/fix" {
		t.Errorf("worktree on branch %q", got)
	}
	if got := run(t, repo, "git", "branch", "--show-current"); got != "main" {
		t.Errorf("the user's checkout moved to %q", got)
	}
	// Spawned from sub, the agent starts in sub of its worktree.
	if got := ws.Workdir(filepath.Join(repo, "sub")); got != filepath.Join(ws.Path, "sub") {
		t.Errorf("Workdir(sub) = %s", got)
	}
	if got := ws.Workdir(filepath.Join(repo, "untracked-dir")); got != ws.Path {
		t.Errorf("Workdir(missing) = %s", got)
	}

	// The JSON round-trips.
	b, _ := json.Marshal(ws)
	back, err := Parse(b)
	if err != nil || !reflect.DeepEqual(back, ws) {
		t.Errorf("Parse(%s) = %+v, %v", b, back, err)
	}

	// A second agent of the same name clashes on the branch.
	_, err = Make(context.Background(), Options{Dir: repo, Name: "fix"})
	var ex *ExistsError
	if !errors.As(err, &ex) || !strings.Contains(err.Error(), "branch agt/fix already exists") || ex.Branch != "agt/fix" ||
		ex.Remedy() != "git -C "+repo+" branch -D agt/fix" {
		t.Errorf("clash: %v", err)
	}
}

func TestMakeGitBaseAndOptions(t *testing.T) {
	repo := gitRepo(t)
	first := run(t, repo, "git", "rev-parse", "HEAD")
	writeFile(t, filepath.Join(repo, "README"), "second\n")
	run(t, repo, "git", "commit", "-q", "-am", "second")
	root := filepath.Join(filepath.Dir(repo), "elsewhere")
	ws, err := Make(context.Background(), Options{
		Mode: Git, Dir: repo, Name: "old", Base: "HEAD~1", Root: root, BranchPrefix: "bot/",
	})
	if err != nil {
		t.Fatal(err)
	}
	if ws.Base != first || ws.Branch != "bot/old" || ws.Path != filepath.Join(root, "old") {
		t.Errorf("got %+v", ws)
	}
	if b, _ := os.ReadFile(filepath.Join(ws.Path, "README")); string(b) != "hello\n" {
		t.Errorf("README in the worktree: %q", b)
	}
	Discard(ws)
	if exists(ws.Path) || exists(root) {
		t.Errorf("after Discard: %s there: %v; the root agt made there: %v", ws.Path, exists(ws.Path), exists(root))
	}
	if _, err := Make(context.Background(), Options{Mode: Git, Dir: repo, Name: "bad", Base: "no-such-rev"}); err == nil || !strings.Contains(err.Error(), `base "no-such-rev" is not a commit`) {
		t.Errorf("bad base: %v", err)
	}
	assertNothingLeft(t, repo, "bad")
}

// A configured root goes with its last workspace when agt made it, and only then: a root the
// user made beforehand stays, and so does one that holds anything else.
func TestRemoveConfiguredRoot(t *testing.T) {
	ctx := context.Background()
	repo := gitRepo(t)
	make2 := func(root string) (*Workspace, *Workspace) {
		t.Helper()
		var ws [2]*Workspace
		for i, name := range []string{"a", "b"} {
			w, err := Make(ctx, Options{Mode: Git, Dir: repo, Name: name, Root: root})
			if err != nil {
				t.Fatal(err)
			}
			ws[i] = w
		}
		return ws[0], ws[1]
	}

	// agt made it: it stays while a workspace is left, and goes with the last.
	a, b := make2("../made")
	made := filepath.Join(filepath.Dir(repo), "made")
	if _, err := Remove(ctx, a, false); err != nil || !exists(b.Path) || !exists(made) {
		t.Fatalf("after removing a: %v; b there: %v; root there: %v", err, exists(b.Path), exists(made))
	}
	if _, err := Remove(ctx, b, false); err != nil || exists(made) {
		t.Fatalf("after removing the last: %v; root there: %v", err, exists(made))
	}

	// The user made it: it stays, empty.
	mine := filepath.Join(filepath.Dir(repo), "mine")
	if err := os.Mkdir(mine, 0o755); err != nil {
		t.Fatal(err)
	}
	a, b = make2(mine)
	Discard(a)
	Discard(b)
	if entries, err := os.ReadDir(mine); err != nil || len(entries) != 0 {
		t.Fatalf("the user's root: %v, holding %v", err, entries)
	}

	// agt made it, and something else came to live there: it stays, with it.
	a, _ = make2("../shared")
	shared := filepath.Join(filepath.Dir(repo), "shared")
	os.RemoveAll(filepath.Join(shared, "b"))
	run(t, repo, "git", "worktree", "prune")
	writeFile(t, filepath.Join(shared, "notes"), "mine\n")
	Discard(a)
	if !exists(filepath.Join(shared, "notes")) {
		t.Fatal("removed a root that holds the user's file")
	}
}

func TestMakeGitRefusesInsideRepo(t *testing.T) {
	repo := gitRepo(t)
	_, err := Make(context.Background(), Options{Mode: Git, Dir: repo, Name: "x", Root: "workspaces"})
	if err == nil || !strings.Contains(err.Error(), "inside the working copy") {
		t.Fatalf("err = %v", err)
	}
	if exists(filepath.Join(repo, "workspaces")) {
		t.Error("made the root inside the repository")
	}
}

func TestMakeGitPathTaken(t *testing.T) {
	repo := gitRepo(t)
	if err := os.MkdirAll(filepath.Join(repo+"-agt", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Make(context.Background(), Options{Dir: repo, Name: "x"})
	if err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("err = %v", err)
	}
	if out := run(t, repo, "git", "branch", "--list", "agt/x"); out != "" {
		t.Errorf("branch made: %s", out)
	}
	if !exists(filepath.Join(repo+"-agt", "x")) {
		t.Error("removed a directory it did not make")
	}
}

func TestMakeGitNotRepo(t *testing.T) {
	gitRepo(t) // for the environment
	dir := t.TempDir()
	_, err := Make(context.Background(), Options{Mode: Git, Dir: dir, Name: "x"})
	if err == nil || !strings.Contains(err.Error(), "is not in a git repository") {
		t.Fatalf("err = %v", err)
	}
}

func TestCopyAndSetUp(t *testing.T) {
	repo := gitRepo(t)
	writeFile(t, filepath.Join(repo, ".env"), "SECRET=1\n")
	writeFile(t, filepath.Join(repo, "conf", "a", "b.toml"), "x = 1\n")
	if err := os.Chmod(filepath.Join(repo, ".env"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("README", filepath.Join(repo, "conf", "link")); err != nil {
		t.Fatal(err)
	}
	ws, err := Make(context.Background(), Options{
		Dir: repo, Name: "set", Copy: []string{".env", "conf"},
		Setup: [][]string{
			{"sh", "-c", `test -f .env && echo "$AGT_NAME $AGT_WORKSPACE $PWD" >setup.out`},
			{},
			{"sh", "-c", "cat setup.out >setup2.out"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(ws.Path, ".env"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf(".env: %v %v", fi, err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws.Path, "conf", "a", "b.toml")); string(b) != "x = 1\n" {
		t.Errorf("conf/a/b.toml: %q", b)
	}
	if l, err := os.Readlink(filepath.Join(ws.Path, "conf", "link")); err != nil || l != "README" {
		t.Errorf("conf/link: %q %v", l, err)
	}
	b, _ := os.ReadFile(filepath.Join(ws.Path, "setup2.out"))
	if want := "set " + ws.Path + " " + ws.Path + "\n"; string(b) != want {
		t.Errorf("set-up saw %q, want %q", b, want)
	}
}

func TestSetUpFailureCleansUp(t *testing.T) {
	repo := gitRepo(t)
	_, err := Make(context.Background(), Options{
		Dir: repo, Name: "bad",
		Setup: [][]string{{"sh", "-c", "for i in $(seq 1 30); do echo line $i >&2; done; exit 3"}},
	})
	if err == nil {
		t.Fatal("a failing set-up succeeded")
	}
	msg := err.Error()
	for _, s := range []string{"workspace set-up sh -c 'for i in", "failed with exit code 3:", "  …\n", "  line 30"} {
		if !strings.Contains(msg, s) {
			t.Errorf("error lacks %q:\n%s", s, msg)
		}
	}
	if strings.Contains(msg, "line 20\n") {
		t.Errorf("error has more than the tail:\n%s", msg)
	}
	assertNothingLeft(t, repo, "bad")

	_, err = Make(context.Background(), Options{Dir: repo, Name: "gone", Setup: [][]string{{"no-such-set-up-command"}}})
	if err == nil || !strings.Contains(err.Error(), "no-such-set-up-command not found") {
		t.Errorf("missing command: %v", err)
	}
	assertNothingLeft(t, repo, "gone")

	_, err = Make(context.Background(), Options{Dir: repo, Name: "esc", Copy: []string{"../outside"}})
	if err == nil || !strings.Contains(err.Error(), "want a path inside the repository") {
		t.Errorf("escaping copy: %v", err)
	}
	_, err = Make(context.Background(), Options{Dir: repo, Name: "esc", Copy: []string{".env"}})
	if err == nil || !strings.HasSuffix(err.Error(), "copy .env into the workspace: there is no .env in "+repo+"; create it, or take it out of copy in [workspace] of agt.toml") {
		t.Errorf("missing copy: %v", err)
	}
	assertNothingLeft(t, repo, "esc")
}

func TestSetUpCanceled(t *testing.T) {
	repo := gitRepo(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Make(ctx, Options{Dir: repo, Name: "slow", Setup: [][]string{{"sh", "-c", "sleep 30 & sleep 30"}}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %s", d)
	}
	assertNothingLeft(t, repo, "slow")
}

func TestRemoveGit(t *testing.T) {
	repo := gitRepo(t)
	ctx := context.Background()
	mk := func(name string) *Workspace {
		t.Helper()
		ws, err := Make(ctx, Options{Dir: repo, Name: name})
		if err != nil {
			t.Fatal(err)
		}
		return ws
	}

	// Clean: worktree and branch go.
	clean := mk("clean")
	removed, err := Remove(ctx, clean, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"git worktree " + clean.Path, "branch agt/clean"}; !reflect.DeepEqual(removed, want) {
		t.Errorf("removed %q, want %q", removed, want)
	}
	assertNothingLeft(t, repo, "clean")

	// Uncommitted changes, tracked or not: refused, then forced.
	for _, change := range []func(ws *Workspace){
		func(ws *Workspace) { writeFile(t, filepath.Join(ws.Path, "README"), "edited\n") },
		func(ws *Workspace) { writeFile(t, filepath.Join(ws.Path, "new-file"), "new\n") },
	} {
		dirty := mk("dirty")
		change(dirty)
		removed, err = Remove(ctx, dirty, false)
		if !errors.Is(err, ErrUnsaved) || len(removed) != 0 || !strings.Contains(err.Error(), "uncommitted changes") {
			t.Errorf("dirty: removed %q, err %v", removed, err)
		}
		if !exists(dirty.Path) {
			t.Fatal("dirty worktree removed")
		}
		if _, err := Remove(ctx, dirty, true); err != nil {
			t.Fatal(err)
		}
		assertNothingLeft(t, repo, "dirty")
	}

	// Commits on no other branch: refused; once merged, removed.
	ahead := mk("ahead")
	writeFile(t, filepath.Join(ahead.Path, "work"), "done\n")
	run(t, ahead.Path, "git", "add", "work")
	run(t, ahead.Path, "git", "commit", "-q", "-m", "work")
	_, err = Remove(ctx, ahead, false)
	if !errors.Is(err, ErrUnsaved) || !strings.Contains(err.Error(), "branch agt/ahead has 1 commit on no other branch") {
		t.Errorf("ahead: %v", err)
	}
	run(t, repo, "git", "merge", "-q", "--ff-only", "agt/ahead")
	if _, err := Remove(ctx, ahead, false); err != nil {
		t.Errorf("merged: %v", err)
	}
	assertNothingLeft(t, repo, "ahead")

	// The directory already deleted by hand: the worktree is pruned, the branch deleted.
	gone := mk("gone")
	os.RemoveAll(gone.Path)
	removed, err = Remove(ctx, gone, false)
	if err != nil || !reflect.DeepEqual(removed, []string{"branch agt/gone"}) {
		t.Errorf("gone: removed %q, err %v", removed, err)
	}
	assertNothingLeft(t, repo, "gone")
}

func TestDiscardAfterMake(t *testing.T) {
	repo := gitRepo(t)
	ws, err := Make(context.Background(), Options{Dir: repo, Name: "d"})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(ws.Path, "scratch"), "x\n")
	Discard(ws)
	assertNothingLeft(t, repo, "d")
}

func TestParse(t *testing.T) {
	for _, s := range []string{`{"type":"svn","path":"/x","repo":"/r"}`, `{"type":"git"}`, `[`} {
		if _, err := Parse([]byte(s)); err == nil {
			t.Errorf("Parse(%s) succeeded", s)
		}
	}
}

func TestTail(t *testing.T) {
	tl := &tail{max: 20}
	tl.Write([]byte("first line that is long\nsecond\nthird\n"))
	if got := tl.String(); got != "  …\n  second\n  third" {
		t.Errorf("got %q", got)
	}
	short := &tail{max: 100}
	short.Write([]byte("only\n"))
	if got := short.String(); got != "  only" {
		t.Errorf("got %q", got)
	}
}

func TestJJNotFound(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, ".jj"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir())
	_, err := Make(context.Background(), Options{Dir: dir, Name: "x"})
	if err == nil || err.Error() != "jj not found; install it or use --workspace git|none" {
		t.Fatalf("err = %v", err)
	}
	if exists(dir + "-agt") {
		t.Error("made the workspace root")
	}
}
