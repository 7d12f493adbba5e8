package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"agt/jjcmd"
)

// Change is an agent's work in its workspace, against the revision it started from: what it
// committed and what it left uncommitted, new files included; what copy and setup put there,
// unchanged, left out.
type Change struct {
	Base        string     `json:"base"`        // the revision compared against: git's commit, jj's change id
	Commits     int        `json:"commits"`     // commits on top of it (jj: non-empty revisions below @)
	Uncommitted []string   `json:"uncommitted"` // files changed and not committed (jj: changed by @)
	Files       []FileStat `json:"files"`
	Insertions  int        `json:"insertions"`
	Deletions   int        `json:"deletions"`
}

// Diff writes the workspace's change as a Git-format diff to w (nil: it only counts) and
// returns its summary. It changes nothing in the workspace: for git, the uncommitted files
// are read through an index of its own (new files too); jj snapshots the working copy, as
// every jj command does. On a running agent it is a snapshot.
func Diff(ctx context.Context, ws *Workspace, w io.Writer) (*Change, error) {
	scan := &patchScanner{w: w}
	var ch *Change
	var err error
	switch ws.Type {
	case Git:
		ch, err = diffGit(ctx, ws, scan)
	case JJ:
		ch, err = diffJJ(ctx, ws, scan)
	default:
		return nil, fmt.Errorf("%s is no jj workspace or git worktree: there is no base to compare with", ws.Path)
	}
	if err != nil {
		return nil, err
	}
	if err := scan.Close(); err != nil {
		return nil, err
	}
	ch.Files = scan.files
	if ch.Files == nil {
		ch.Files = []FileStat{}
	}
	if ch.Uncommitted == nil {
		ch.Uncommitted = []string{}
	}
	for _, f := range ch.Files {
		ch.Insertions += f.Insertions
		ch.Deletions += f.Deletions
	}
	return ch, nil
}

func diffGit(ctx context.Context, ws *Workspace, scan *patchScanner) (*Change, error) {
	if ws.Base == "" {
		return nil, fmt.Errorf("the record of %s has no base revision", ws.Path)
	}
	ch := &Change{Base: ws.Base, Commits: -1}
	repo, to := ws.Repo, "refs/heads/"+ws.Branch
	if isDir(ws.Path) {
		tree, err := snapshotTree(ctx, ws)
		if err != nil {
			return nil, err
		}
		repo, to = ws.Path, tree
		out, err := git(ctx, repo, "diff", "--name-only", "-z", "--no-renames", "HEAD", tree)
		if err != nil {
			return nil, err
		}
		ch.Uncommitted = splitZ(out)
		ch.Commits = count(ctx, repo, ws.Base+"..HEAD")
	} else if isDir(repo) && ws.Branch != "" && branchExists(ctx, repo, ws.Branch) {
		ch.Commits = count(ctx, repo, ws.Base+".."+to)
	} else {
		return nil, fmt.Errorf("neither the worktree %s nor its branch %s is left", ws.Path, ws.Branch)
	}
	_, _, err := runGitTo(ctx, repo, scan, "diff", "--no-color", "--no-ext-diff", "--no-relative",
		"--src-prefix=a/", "--dst-prefix=b/", ws.Base, to)
	return ch, err
}

func diffJJ(ctx context.Context, ws *Workspace, scan *patchScanner) (*Change, error) {
	if !isDir(ws.Path) {
		return nil, fmt.Errorf("jj workspace %s is gone: its revisions are in %s ('jj log' there)", ws.Path, ws.Repo)
	}
	if ws.Base == "" {
		return nil, fmt.Errorf("the record of %s has no base revision", ws.Path)
	}
	ch := &Change{Base: ws.Base}
	revs, err := jjcmd.Revisions(ctx, ws.Path, ws.Base+"..@")
	if err != nil {
		return nil, jjError(err)
	}
	for _, r := range revs[min(1, len(revs)):] { // children first: @ leads
		if !r.Empty {
			ch.Commits++
		}
	}
	if ch.Uncommitted, err = agentChanges(ctx, ws); err != nil {
		return nil, jjError(err)
	}
	scan.drop = ws.seedUnchanged
	if err := jjcmd.Diff(ctx, scan, ws.Path, ws.Base, "@"); err != nil {
		return nil, jjError(err)
	}
	return ch, nil
}

// snapshotTree writes the worktree's files as git would commit them with `git add -A` — new
// files too, ignored ones not, and what copy and setup put there, unchanged, as HEAD has it —
// into a tree object, and returns its id. It uses an index of its own, a copy of the
// worktree's, so that neither the files nor the worktree's index change.
func snapshotTree(ctx context.Context, ws *Workspace) (string, error) {
	dir, err := os.MkdirTemp("", "agt-index-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	index := filepath.Join(dir, "index")
	real, err := git(ctx, ws.Path, "rev-parse", "--path-format=absolute", "--git-path", "index")
	if err != nil {
		return "", err
	}
	if err := copyFile(strings.TrimSpace(real), index); err != nil {
		return "", fmt.Errorf("copy the index of %s: %w", ws.Path, err)
	}
	env := []string{"GIT_INDEX_FILE=" + index}
	seeds := ws.unchangedSeeds()
	spec := ":/\x00"
	for _, p := range seeds {
		spec += ":(top,literal,exclude)" + p + "\x00"
	}
	if _, _, err := runGit(ctx, ws.Path, env, strings.NewReader(spec), "add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul"); err != nil {
		return "", err
	}
	if len(seeds) > 0 {
		// A seed the agent's own index holds goes back to HEAD's version.
		spec = ""
		for _, p := range seeds {
			spec += ":(top,literal)" + p + "\x00"
		}
		if _, _, err := runGit(ctx, ws.Path, env, strings.NewReader(spec), "reset", "-q", "--pathspec-from-file=-", "--pathspec-file-nul", "HEAD"); err != nil {
			return "", err
		}
	}
	tree, _, err := runGit(ctx, ws.Path, env, nil, "write-tree")
	return strings.TrimSpace(tree), err
}

// copyFile copies the file src to dst; a missing src (a repository with no index yet) makes
// no dst.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func splitZ(s string) []string {
	var out []string
	for _, p := range strings.Split(s, "\x00") {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}
