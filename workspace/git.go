package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// makeGit adds a git worktree on a new branch, BranchPrefix+Name, starting at the base.
func makeGit(ctx context.Context, opts Options, dir string, u *undo) (*Workspace, error) {
	top, err := git(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		if errors.Is(err, errGitNotFound) {
			return nil, err
		}
		return nil, fmt.Errorf("%s is not in a git repository\nhint: use --workspace jj or none, or spawn from inside a repository", dir)
	}
	repo := strings.TrimRight(top, "\n")
	base := opts.Base
	if base == "" {
		base = "HEAD"
	}
	commit, err := git(ctx, repo, "rev-parse", "--verify", "--quiet", base+"^{commit}")
	if err != nil {
		return nil, fmt.Errorf("base %q is not a commit in %s", base, repo)
	}
	// The worktree starts from the commit checked here, even if base (HEAD) moves meanwhile.
	commit = strings.TrimSpace(commit)
	prefix := opts.BranchPrefix
	if prefix == "" {
		prefix = DefaultBranchPrefix
	}
	branch := prefix + opts.Name
	if _, err := git(ctx, repo, "check-ref-format", "--branch", branch); err != nil {
		return nil, fmt.Errorf("branch name %q is not valid in git", branch)
	}
	if branchExists(ctx, repo, branch) {
		return nil, &ExistsError{Msg: fmt.Sprintf("branch %s already exists in %s", branch, repo), Branch: branch, Repo: repo}
	}
	path, err := place(repo, opts, u)
	if err != nil {
		return nil, err
	}
	_, err = git(ctx, repo, "worktree", "add", "-b", branch, path, commit)
	// git creates the branch before the worktree and keeps it when the worktree fails.
	u.push(func(ctx context.Context) {
		if isDir(path) {
			git(ctx, repo, "worktree", "remove", "--force", "--force", path)
			os.RemoveAll(path)
		}
		git(ctx, repo, "worktree", "prune")
		if branchExists(ctx, repo, branch) {
			git(ctx, repo, "branch", "-D", branch)
		}
	})
	if err != nil {
		return nil, err
	}
	return &Workspace{Type: Git, Path: path, Repo: repo, Branch: branch, Base: commit}, nil
}

// removeGit checks the worktree for changes and for commits on no other branch, removes it and
// deletes its branch.
func removeGit(ctx context.Context, ws *Workspace, force bool) ([]string, error) {
	exists := isDir(ws.Path)
	// Run git in the repository the worktree came from; in the worktree when that is gone.
	repo := ws.Repo
	if !isDir(repo) {
		if !exists {
			return nil, fmt.Errorf("neither the repository %s nor the worktree %s exists", ws.Repo, ws.Path)
		}
		repo = ws.Path
	}
	hasBranch := ws.Branch != "" && branchExists(ctx, repo, ws.Branch)
	if !force {
		if err := checkSaved(ctx, ws, repo, exists, hasBranch); err != nil {
			return nil, err
		}
	}
	var removed []string
	if exists {
		args := []string{"worktree", "remove", ws.Path}
		if force {
			args = []string{"worktree", "remove", "--force", "--force", ws.Path}
		}
		if _, err := git(ctx, repo, args...); err != nil {
			return removed, err
		}
		removed = append(removed, "git worktree "+ws.Path)
	} else if _, err := git(ctx, repo, "worktree", "prune"); err != nil {
		return removed, err
	}
	if hasBranch {
		if _, err := git(ctx, repo, "branch", "-D", ws.Branch); err != nil {
			return removed, err
		}
		removed = append(removed, "branch "+ws.Branch)
	}
	return removed, nil
}

// checkSaved returns an ErrUnsaved error when the worktree has uncommitted changes (untracked
// files included, ignored ones not), or when its branch or HEAD has commits that no other
// branch, local or remote, holds.
func checkSaved(ctx context.Context, ws *Workspace, repo string, exists, hasBranch bool) error {
	var tips []string
	if exists {
		status, err := git(ctx, ws.Path, "status", "--porcelain")
		if err != nil {
			return fmt.Errorf("check worktree %s for changes: %w\nhint: --force removes it without checking", ws.Path, err)
		}
		if status = strings.TrimRight(status, "\n"); status != "" {
			return unsaved(fmt.Sprintf("worktree %s has uncommitted changes:\n%s", ws.Path, indent(status, 5)),
				"commit or discard them, or use --force to remove it anyway")
		}
		if head, err := git(ctx, ws.Path, "rev-parse", "--verify", "--quiet", "HEAD"); err == nil {
			tips = append(tips, strings.TrimSpace(head))
		}
	}
	if hasBranch {
		tips = append(tips, "refs/heads/"+ws.Branch)
	}
	if len(tips) == 0 {
		return nil
	}
	args := append([]string{"rev-list"}, tips...)
	args = append(args, "--not", "--exclude="+ws.Branch, "--branches", "--remotes")
	out, err := git(ctx, repo, args...)
	if err != nil {
		return fmt.Errorf("check branch %s for commits: %w\nhint: --force removes it without checking", ws.Branch, err)
	}
	if n := len(strings.Fields(out)); n > 0 {
		return unsaved(fmt.Sprintf("branch %s has %d commit%s on no other branch", ws.Branch, n, plural(n)),
			"merge or push them, or use --force to delete them with the branch")
	}
	return nil
}

func branchExists(ctx context.Context, repo, branch string) bool {
	_, err := git(ctx, repo, "show-ref", "--verify", "--quiet", "refs/heads/"+branch)
	return err == nil
}

// errGitNotFound: no git executable on $PATH.
var errGitNotFound = errors.New("git not found; install it or use --workspace jj|none")

// git runs `git -C dir ARGS...` and returns its stdout. A failure says which git command failed
// and what git said, without its "fatal: " prefix.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	path, err := exec.LookPath("git")
	if err != nil {
		return "", errGitNotFound
	}
	cmd := exec.CommandContext(ctx, path, append([]string{"-C", dir}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		name := "git " + args[0]
		if len(args) > 1 && !strings.HasPrefix(args[1], "-") {
			name += " " + args[1]
		}
		if ctx.Err() != nil {
			return "", fmt.Errorf("%s: %w", name, ctx.Err())
		}
		var lines []string
		for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
			for _, p := range []string{"fatal: ", "error: "} {
				l = strings.TrimPrefix(l, p)
			}
			if l != "" && !strings.HasPrefix(l, "Preparing worktree") {
				lines = append(lines, l)
			}
		}
		if len(lines) == 0 {
			return "", fmt.Errorf("%s: %w", name, err)
		}
		return "", fmt.Errorf("%s: %s", name, strings.Join(lines, "\n"))
	}
	return stdout.String(), nil
}

func indent(s string, max int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > max {
		lines = append(lines[:max], fmt.Sprintf("… and %d more", len(lines)-max))
	}
	return "  " + strings.Join(lines, "\n  ")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
