package jjcmd

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// fakeJJ puts a jj on PATH that records its arguments, one per line, in the returned file,
// prints stdout and stderr and exits with code.
func fakeJJ(t *testing.T, stdout, stderr string, code int) (argsFile string) {
	t.Helper()
	dir := t.TempDir()
	argsFile = filepath.Join(dir, "args")
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("stdout", stdout)
	write("stderr", stderr)
	script := "#!/bin/sh\n" +
		`for a in "$@"; do printf '%s\n' "$a"; done >"` + argsFile + "\"\n" +
		`pwd >"` + argsFile + ".pwd\"\n" +
		`cat "` + dir + `/stdout"; cat "` + dir + `/stderr" >&2` + "\n" +
		"exit " + strconv.Itoa(code) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "jj"), []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return argsFile
}

func readArgs(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

var globals = []string{"--no-pager", "--color", "never"}

func TestCalls(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir() // where the calls that run in the workspace's directory run
	for _, tc := range []struct {
		name   string
		stdout string
		call   func() (any, error)
		args   []string
		want   any
	}{
		{
			name: "root", stdout: "/src/app\n",
			call: func() (any, error) { return Root(ctx, "/") },
			args: []string{"root"}, want: "/src/app",
		},
		{
			name: "workspace add",
			call: func() (any, error) { return nil, WorkspaceAdd(ctx, "/src/app", "fix", "qpvuntsm", "/src/app-agt/fix") },
			args: []string{"-R", "/src/app", "workspace", "add", "--name", "fix", "-r", "qpvuntsm", "/src/app-agt/fix"},
		},
		{
			name: "workspace add at jj's default",
			call: func() (any, error) { return nil, WorkspaceAdd(ctx, "/src/app", "fix", "", "/src/app-agt/fix") },
			args: []string{"-R", "/src/app", "workspace", "add", "--name", "fix", "/src/app-agt/fix"},
		},
		{
			name: "workspace forget",
			call: func() (any, error) { return nil, WorkspaceForget(ctx, "/src/app", "fix") },
			args: []string{"-R", "/src/app", "workspace", "forget", "fix"},
		},
		{
			name: "workspace list", stdout: "default\nfix\n",
			call: func() (any, error) { return WorkspaceList(ctx, "/src/app") },
			args: []string{"-R", "/src/app", "workspace", "list", "-T", `name ++ "\n"`},
			want: []string{"default", "fix"},
		},
		{
			name: "log", stdout: "zzzzzzzz empty\nkkkkkkkk changed\n",
			call: func() (any, error) { return Revisions(ctx, "/src/app", "@|@-") },
			args: []string{"-R", "/src/app", "log", "-r", "@|@-", "--no-graph", "-T", revisionTemplate},
			want: []Revision{{"zzzzzzzz", true}, {"kkkkkkkk", false}},
		},
		{
			name: "diff names", stdout: "README\nsub/new.txt\n",
			call: func() (any, error) { return Changed(ctx, dir, "@") },
			args: []string{"-R", dir, "diff", "-r", "@", "--name-only"},
			want: []string{"README", "sub/new.txt"},
		},
		{
			name: "diff git", stdout: "diff --git a/x b/x\n",
			call: func() (any, error) {
				var b strings.Builder
				err := Diff(ctx, &b, dir, "qpvuntsm", "@")
				return b.String(), err
			},
			args: []string{"-R", dir, "diff", "--from", "qpvuntsm", "--to", "@", "--git"},
			want: "diff --git a/x b/x\n",
		},
		{
			name: "squash with a message, files left out",
			call: func() (any, error) {
				return nil, Squash(ctx, "/src/app", "qpvuntsm..fix@", "qpvuntsm", "Fix it", []string{".env", `odd "name"`})
			},
			args: []string{"-R", "/src/app", "squash", "--from", "qpvuntsm..fix@", "--into", "qpvuntsm", "-m", "Fix it",
				`~(root-file:".env" | root-file:"odd \"name\"")`},
		},
		{
			name: "squash keeping the description",
			call: func() (any, error) { return nil, Squash(ctx, "/src/app", "a..b", "a", "", nil) },
			args: []string{"-R", "/src/app", "squash", "--from", "a..b", "--into", "a", "--use-destination-message"},
		},
		{
			name: "operation", stdout: "0123abcd\n",
			call: func() (any, error) { return Operation(ctx, "/src/app") },
			args: []string{"-R", "/src/app", "operation", "log", "-n", "1", "--no-graph", "-T", operationTemplate},
			want: "0123abcd",
		},
		{
			name: "operation restore",
			call: func() (any, error) { return nil, RestoreOperation(ctx, "/src/app", "0123abcd") },
			args: []string{"-R", "/src/app", "operation", "restore", "0123abcd"},
		},
		{
			name: "update stale",
			call: func() (any, error) { return nil, UpdateStale(ctx, "/src/app-agt/fix") },
			args: []string{"-R", "/src/app-agt/fix", "workspace", "update-stale"},
		},
		{
			name: "conflicted files", stdout: "README    2-sided conflict\nsub/a b.txt    2-sided conflict including 1 deletion\n",
			call: func() (any, error) { return ConflictedFiles(ctx, dir, "wwww") },
			args: []string{"-R", dir, "resolve", "--list", "-r", "wwww"},
			want: []string{"README", "sub/a b.txt"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := fakeJJ(t, tc.stdout, "", 0)
			got, err := tc.call()
			if err != nil {
				t.Fatal(err)
			}
			if args := readArgs(t, file); !reflect.DeepEqual(args, append(globals, tc.args...)) {
				t.Errorf("jj ran with\n%q\nwant\n%q", args, append(globals, tc.args...))
			}
			if tc.want != nil && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestRootRunsInDir(t *testing.T) {
	file := fakeJJ(t, "/x\n", "", 0)
	dir := t.TempDir()
	if _, err := Root(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(file + ".pwd")
	if got := strings.TrimSpace(string(b)); got != dir {
		t.Errorf("jj root ran in %s, want %s", got, dir)
	}
}

func TestNotFound(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := Root(context.Background(), "/")
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
	if err.Error() != "jj not found" {
		t.Errorf("message %q", err)
	}
}

func TestFailures(t *testing.T) {
	for _, tc := range []struct {
		name, stderr string
		code         int
		call         func() error
		kind         error
		msg          string
	}{
		{
			name:   "not a repo",
			stderr: "Error: There is no jj repo in \".\"\n", code: 1,
			call: func() error { _, err := Root(context.Background(), "/"); return err },
			kind: ErrNotRepo, msg: `jj root: There is no jj repo in "."`,
		},
		{
			name:   "name taken",
			stderr: "Error: Workspace named 'fix' already exists\n", code: 1,
			call: func() error { return WorkspaceAdd(context.Background(), "/r", "fix", "@", "/p") },
			kind: ErrWorkspaceExists, msg: "jj workspace add: Workspace named 'fix' already exists",
		},
		{
			name:   "hint kept, warning dropped",
			stderr: "Warning: Deprecated config\nError: Revision `nope` doesn't exist\nHint: Did you mean `main`?\n", code: 1,
			call: func() error { _, err := Revisions(context.Background(), "/r", "nope"); return err },
			msg:  "jj log: Revision `nope` doesn't exist\nhint: Did you mean `main`?",
		},
		{
			name: "silent failure", code: 3,
			call: func() error { return WorkspaceForget(context.Background(), "/r", "x") },
			msg:  "jj workspace forget failed with exit code 3",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fakeJJ(t, "", tc.stderr, tc.code)
			err := tc.call()
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v (%T), want *Error", err, err)
			}
			if e.Code != tc.code {
				t.Errorf("code %d, want %d", e.Code, tc.code)
			}
			if tc.kind != nil && !errors.Is(err, tc.kind) {
				t.Errorf("err %v does not match %v", err, tc.kind)
			}
			for _, s := range []error{ErrNotFound, ErrNotRepo, ErrWorkspaceExists} {
				if s != tc.kind && errors.Is(err, s) {
					t.Errorf("err %v matches %v", err, s)
				}
			}
			if err.Error() != tc.msg {
				t.Errorf("message\n%q\nwant\n%q", err, tc.msg)
			}
		})
	}
}

func TestRevisionsRejectsOddOutput(t *testing.T) {
	fakeJJ(t, "qpvuntsm maybe\n", "", 0)
	if _, err := Revisions(context.Background(), "/r", "@"); err == nil {
		t.Fatal("odd jj log output accepted")
	}
}

func TestCanceled(t *testing.T) {
	fakeJJ(t, "", "", 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := WorkspaceForget(ctx, "/r", "x")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}
