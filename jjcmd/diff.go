package jjcmd

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// Changed returns the paths of the files that the revision revset names changes, relative to
// the root of the workspace at root, in whose working copy jj runs (and which it snapshots).
func Changed(ctx context.Context, root, revset string) ([]string, error) {
	out, err := run(ctx, root, "diff", "-R", root, "diff", "-r", revset, "--name-only")
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, l := range strings.Split(out, "\n") {
		if l != "" {
			paths = append(paths, l)
		}
	}
	return paths, nil
}

// Diff writes to w the Git-format diff from revision from to revision to, as the workspace at
// root sees them (it snapshots its working copy first, so @ is the files on disk).
func Diff(ctx context.Context, w io.Writer, root, from, to string) error {
	return runTo(ctx, w, root, "diff", "-R", root, "diff", "--from", from, "--to", to, "--git")
}

// operationTemplate prints an operation's id.
const operationTemplate = `id ++ "\n"`

// Operation returns the id of the repository's current operation (after jj snapshots the
// working copy of repo), for RestoreOperation to go back to.
func Operation(ctx context.Context, repo string) (string, error) {
	out, err := run(ctx, "", "operation log", "-R", repo, "operation", "log", "-n", "1", "--no-graph", "-T", operationTemplate)
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(out)
	if id == "" || strings.ContainsAny(id, " \n") {
		return "", &Error{Command: "operation log", Message: fmt.Sprintf("unexpected output %q", out)}
	}
	return id, nil
}

// RestoreOperation makes the repository at repo what it was at operation op.
func RestoreOperation(ctx context.Context, repo, op string) error {
	_, err := run(ctx, "", "operation restore", "-R", repo, "operation", "restore", op)
	return err
}

// Squash moves the changes of the revisions from into the revision into, from the
// workspace at repo: `jj squash --from FROM --into INTO`, with message as the description of
// the result (into's own description when ""), leaving out the files of exclude (paths
// relative to the root), which stay where they are.
func Squash(ctx context.Context, repo, from, into, message string, exclude []string) error {
	args := []string{"-R", repo, "squash", "--from", from, "--into", into}
	if message != "" {
		args = append(args, "-m", message)
	} else {
		args = append(args, "--use-destination-message")
	}
	if len(exclude) > 0 {
		q := make([]string, len(exclude))
		for i, p := range exclude {
			q[i] = "root-file:" + quoteString(p)
		}
		args = append(args, "~("+strings.Join(q, " | ")+")")
	}
	_, err := run(ctx, "", "squash", args...)
	return err
}

// UpdateStale brings the working copy of the workspace at root up to date after another
// workspace rewrote its commit.
func UpdateStale(ctx context.Context, root string) error {
	_, err := run(ctx, "", "workspace update-stale", "-R", root, "workspace", "update-stale")
	return err
}

// ConflictedFiles lists the files with conflicts in revision rev, relative to the root of
// the workspace at root.
func ConflictedFiles(ctx context.Context, root, rev string) ([]string, error) {
	out, err := run(ctx, root, "resolve", "-R", root, "resolve", "--list", "-r", rev)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, l := range strings.Split(out, "\n") {
		// "PATH    2-sided conflict": the path, then two spaces or more.
		if p, _, ok := strings.Cut(l, "  "); ok && p != "" {
			files = append(files, p)
		}
	}
	return files, nil
}

// quoteString writes s as a jj string literal: in double quotes, with \ and " escaped and
// control characters as \xHH escapes.
func quoteString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
