// Package jjcmd runs the jj command line (Jujutsu) for agt: finding a repository's root,
// adding, listing and forgetting workspaces, and reading revisions with `jj log`.
//
// It follows the documented CLI of jj 0.41: `jj root`, `jj workspace add --name NAME
// -r REVSET DESTINATION`, `jj workspace forget NAME`, `jj workspace list -T TEMPLATE`,
// `jj log -r REVSET --no-graph -T TEMPLATE`, `jj diff -r REVSET --name-only` and
// `jj diff --from REVSET --to REVSET --git`, `jj squash --from REVSET --into REVSET
// (-m MESSAGE | --use-destination-message) [FILESET]`, `jj operation log -n 1 --no-graph -T
// TEMPLATE`, `jj operation restore OPERATION`, `jj workspace update-stale` and
// `jj resolve --list -r REVSET`, with the global options `--no-pager`,
// `--color never` and `-R REPO`. Nothing else is ever run.
//
// Invariants: every call passes --no-pager and --color never, so output is plain text and
// nothing waits on a terminal; repository paths are passed with -R, never left to the
// current directory, except for Root, which is the question of which repository a directory
// is in; a failure is an *Error that names the jj command and carries jj's own message,
// matching ErrNotFound, ErrNotRepo or ErrWorkspaceExists when it is one of those.
package jjcmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
)

// Errors a caller branches on; match them with errors.Is.
var (
	// ErrNotFound: no jj executable on $PATH.
	ErrNotFound = errors.New("jj not found")
	// ErrNotRepo: the directory is in no jj repository.
	ErrNotRepo = errors.New("not a jj repository")
	// ErrWorkspaceExists: the repository already has a workspace of that name.
	ErrWorkspaceExists = errors.New("jj workspace exists")
)

// Error is a jj command that failed: its subcommand, its exit code and its message.
type Error struct {
	Command string // the subcommand, as in "workspace add"
	Code    int    // jj's exit code; -1 when it did not run or was killed
	Message string // jj's stderr, "Error: " taken off
	kind    error
}

func (e *Error) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("jj %s failed with exit code %d", e.Command, e.Code)
	}
	return "jj " + e.Command + ": " + e.Message
}

// Unwrap returns the sentinel the failure matches, if any.
func (e *Error) Unwrap() error { return e.kind }

// Revision is one revision as `jj log` reports it.
type Revision struct {
	ChangeID string
	Empty    bool // it changes no file
}

// revisionTemplate prints one Revision per line.
const revisionTemplate = `change_id ++ " " ++ if(empty, "empty", "changed") ++ "\n"`

// workspaceTemplate prints one workspace name per line.
const workspaceTemplate = `name ++ "\n"`

// Root returns the root of the jj workspace that dir is in. A dir in no jj repository gives
// an error matching ErrNotRepo.
func Root(ctx context.Context, dir string) (string, error) {
	out, err := run(ctx, dir, "root", "root")
	if err != nil {
		return "", err
	}
	root := strings.TrimRight(out, "\n")
	if root == "" {
		return "", &Error{Command: "root", Message: "printed no root"}
	}
	return root, nil
}

// WorkspaceAdd adds workspace name to the repository at repo, in the directory path, its
// working-copy commit a new empty revision on top of rev (jj's default, the parents of the
// current working-copy commit, when rev is ""). The parent of path must exist; path must not,
// or be empty. A name already in use gives an error matching ErrWorkspaceExists.
func WorkspaceAdd(ctx context.Context, repo, name, rev, path string) error {
	args := []string{"-R", repo, "workspace", "add", "--name", name}
	if rev != "" {
		args = append(args, "-r", rev)
	}
	_, err := run(ctx, "", "workspace add", append(args, path)...)
	return err
}

// WorkspaceForget makes the repository at repo stop tracking workspace name. The
// workspace's files on disk are not touched. Forgetting a name the repository does not
// know is not an error (jj only warns).
func WorkspaceForget(ctx context.Context, repo, name string) error {
	_, err := run(ctx, "", "workspace forget", "-R", repo, "workspace", "forget", name)
	return err
}

// WorkspaceList returns the names of the repository's workspaces, in jj's order.
func WorkspaceList(ctx context.Context, repo string) ([]string, error) {
	out, err := run(ctx, "", "workspace list", "-R", repo, "workspace", "list", "-T", workspaceTemplate)
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}

// Revisions returns the revisions that revset names in the repository at repo, as `jj log`
// lists them (children before parents). Like every jj command it first snapshots the
// working copy of repo, so @ reflects the files on disk.
func Revisions(ctx context.Context, repo, revset string) ([]Revision, error) {
	out, err := run(ctx, "", "log", "-R", repo, "log", "-r", revset, "--no-graph", "-T", revisionTemplate)
	if err != nil {
		return nil, err
	}
	var revs []Revision
	for _, line := range strings.Split(out, "\n") {
		if line == "" {
			continue
		}
		id, state, ok := strings.Cut(line, " ")
		if !ok || id == "" || (state != "empty" && state != "changed") {
			return nil, &Error{Command: "log", Message: fmt.Sprintf("unexpected output %q", line)}
		}
		revs = append(revs, Revision{ChangeID: id, Empty: state == "empty"})
	}
	return revs, nil
}

// run runs `jj --no-pager --color never ARGS...` in dir ("" for the current directory) and
// returns its stdout.
func run(ctx context.Context, dir, command string, args ...string) (string, error) {
	var stdout bytes.Buffer
	err := runTo(ctx, &stdout, dir, command, args...)
	return stdout.String(), err
}

// runTo is run writing jj's stdout to w as it comes.
func runTo(ctx context.Context, w io.Writer, dir, command string, args ...string) error {
	path, err := exec.LookPath("jj")
	if err != nil {
		return ErrNotFound
	}
	cmd := exec.CommandContext(ctx, path, append([]string{"--no-pager", "--color", "never"}, args...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = w, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("jj %s: %w", command, ctx.Err())
		}
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			return fmt.Errorf("jj %s: %w", command, err)
		}
		return failure(command, exit.ExitCode(), stderr.String())
	}
	return nil
}

// failure turns jj's stderr into an Error: "Error: " and "Hint: " become agt's own wording
// (the hint on a line of its own), warnings are dropped.
func failure(command string, code int, stderr string) *Error {
	var msg []string
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		line = strings.TrimRight(line, " \r")
		switch {
		case line == "", strings.HasPrefix(line, "Warning: "):
		case strings.HasPrefix(line, "Error: "):
			msg = append(msg, strings.TrimPrefix(line, "Error: "))
		case strings.HasPrefix(line, "Hint: "):
			msg = append(msg, "hint: "+strings.TrimPrefix(line, "Hint: "))
		default:
			msg = append(msg, line)
		}
	}
	e := &Error{Command: command, Code: code, Message: strings.Join(msg, "\n")}
	switch {
	case strings.Contains(stderr, "There is no jj repo in"):
		e.kind = ErrNotRepo
	case strings.Contains(stderr, "Workspace named") && strings.Contains(stderr, "already exists"):
		e.kind = ErrWorkspaceExists
	}
	return e
}
