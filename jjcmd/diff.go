package jjcmd

import (
	"context"
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
