package fakejj

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"agt/internal/testprog/selfexec"
)

func TestMain(m *testing.M) {
	selfexec.Main(m, Main)
}

// jj runs the fake in dir and returns its stdout, stderr and exit code.
func jj(t *testing.T, dir string, args ...string) (string, string, int) {
	t.Helper()
	cmd := selfexec.Command(args...)
	cmd.Dir = dir
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	code := 0
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), code
}

var global = []string{"--no-pager", "--color", "never"}

func TestWorkspaceLife(t *testing.T) {
	root := t.TempDir()
	repo := filepath.Join(root, "app")
	os.MkdirAll(filepath.Join(repo, ".jj"), 0o755)
	os.WriteFile(filepath.Join(repo, ".jj", "revs"), []byte("@ zzzz changed\n@- yyyy empty\n"), 0o644)

	out, _, code := jj(t, repo, append(global, "root")...)
	if code != 0 || strings.TrimSpace(out) != repo {
		t.Fatalf("root: %q, exit %d", out, code)
	}
	out, _, code = jj(t, root, append(global, "-R", repo, "log", "-r", "@-", "--no-graph", "-T", fakeJJLogTemplate)...)
	if code != 0 || out != "yyyy empty\n" {
		t.Fatalf("log -r @-: %q, exit %d", out, code)
	}
	dest := filepath.Join(root, "app-agt", "w1")
	os.MkdirAll(filepath.Dir(dest), 0o755)
	if _, errOut, code := jj(t, root, append(global, "-R", repo, "workspace", "add", "--name", "w1", "-r", "@", dest)...); code != 0 {
		t.Fatalf("workspace add: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dest, ".jj", "repo")); err != nil {
		t.Fatalf("workspace add made no .jj/repo: %v", err)
	}
	out, _, _ = jj(t, root, append(global, "-R", repo, "workspace", "list", "-T", fakeJJWorkspaceTemplate)...)
	if out != "default\nw1\n" {
		t.Fatalf("workspace list: %q", out)
	}
	jj(t, root, append(global, "-R", repo, "workspace", "forget", "w1")...)
	out, _, _ = jj(t, root, append(global, "-R", repo, "workspace", "list", "-T", fakeJJWorkspaceTemplate)...)
	if out != "default\n" {
		t.Fatalf("workspace list after forget: %q", out)
	}
	calls, _ := os.ReadFile(filepath.Join(repo, ".jj", "calls"))
	if n := strings.Count(string(calls), "\n"); n != 6 {
		t.Errorf(".jj/calls holds %d calls, want 6:\n%s", n, calls)
	}
}

// What jj's parser would refuse, the fake refuses with exit status 2.
func TestRefusesWhatJJWould(t *testing.T) {
	repo := t.TempDir()
	os.MkdirAll(filepath.Join(repo, ".jj"), 0o755)
	for _, args := range [][]string{
		{"root"}, // without --no-pager and --color never
		append(global, "--bogus", "root"),
		append(global, "workspace", "add", "--nme", "x", "dest"),
		append(global, "log", "-r", "@", "--no-graph", "-T", "change_id"), // another template
	} {
		if _, _, code := jj(t, repo, args...); code != 2 {
			t.Errorf("jj %q: exit %d, want 2", args, code)
		}
	}
	if _, errOut, code := jj(t, t.TempDir(), append(global, "root")...); code != 1 || !strings.Contains(errOut, "There is no jj repo") {
		t.Errorf("outside a repository: exit %d, %q", code, errOut)
	}
}
