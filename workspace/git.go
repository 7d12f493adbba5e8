package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
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
	from := startBranch(ctx, repo, opts.Base)
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
	return &Workspace{Type: Git, Path: path, Repo: repo, Branch: branch, Base: commit, From: from}, nil
}

// startBranch is the branch a worktree made from base starts from: the one checked out in
// repo for no base, the one base names if it names one; else "".
func startBranch(ctx context.Context, repo, base string) string {
	if base == "" {
		return currentBranch(ctx, repo)
	}
	if branchExists(ctx, repo, base) {
		return base
	}
	return ""
}

// currentBranch is the branch checked out in the working copy dir; "" when HEAD is detached.
func currentBranch(ctx context.Context, dir string) string {
	out, err := git(ctx, dir, "symbolic-ref", "--quiet", "--short", "HEAD")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

// removeGit checks the worktree for changes and for commits on no other branch, removes it and
// deletes its branch.
func removeGit(ctx context.Context, ws *Workspace, force, dry bool) ([]string, error) {
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
	if dry {
		return gitRemovals(ws, exists, hasBranch), nil
	}
	var removed []string
	if exists {
		// Checked above: any change left there is copy and setup's, which git worktree remove
		// refuses to delete without --force.
		args := []string{"worktree", "remove", ws.Path}
		if len(ws.Seeded) > 0 {
			args = []string{"worktree", "remove", "--force", ws.Path}
		}
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

// gitRemovals is what removeGit removes.
func gitRemovals(ws *Workspace, exists, hasBranch bool) []string {
	var removed []string
	if exists {
		removed = append(removed, "git worktree "+ws.Path)
	}
	if hasBranch {
		removed = append(removed, "branch "+ws.Branch)
	}
	return removed
}

// checkSaved returns an ErrUnsaved error when the worktree holds the agent's uncommitted
// changes (untracked files included; ignored ones, and what copy and setup put there, not),
// or when its branch or HEAD has commits that no other branch, local or remote, holds and
// whose changes its target branch lacks (a squash-merged branch is saved).
func checkSaved(ctx context.Context, ws *Workspace, repo string, exists, hasBranch bool) error {
	var tips []string
	if exists {
		files, err := agentChanges(ctx, ws)
		if err != nil {
			return fmt.Errorf("check worktree %s for changes: %w\nhint: --force removes it without checking", ws.Path, err)
		}
		if len(files) > 0 {
			return unsaved(fmt.Sprintf("worktree %s has uncommitted changes: %s", ws.Path, listFiles(files)),
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
	n := len(strings.Fields(out))
	if n == 0 {
		return nil
	}
	if target := ws.target(ctx); target != "" && target != ws.Branch && branchExists(ctx, repo, target) {
		in := true
		for _, tip := range tips {
			ok, _ := contentIn(ctx, repo, tip, "refs/heads/"+target)
			in = in && ok
		}
		if in {
			return nil // squash-merged, or cherry-picked: target holds all of it
		}
	}
	return unsaved(fmt.Sprintf("branch %s has %d commit%s on no other branch", ws.Branch, n, plural(n)),
		"merge them (agt merge), push them, or use --force to delete them with the branch")
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
	out, _, err := runGit(ctx, dir, nil, nil, args...)
	return out, err
}

// runGit is git with extra environment (env, such as GIT_INDEX_FILE) and stdin; it returns git's
// exit code as well, -1 when git did not run, so that a caller can take a code such as
// merge-tree's 1 (conflicts) for an answer rather than a failure.
func runGit(ctx context.Context, dir string, env []string, stdin io.Reader, args ...string) (string, int, error) {
	var stdout bytes.Buffer
	code, err := gitCmd(ctx, dir, env, stdin, &stdout, args...)
	return stdout.String(), code, err
}

// runGitTo is git writing its stdout to w as it comes.
func runGitTo(ctx context.Context, dir string, w io.Writer, args ...string) (string, int, error) {
	code, err := gitCmd(ctx, dir, nil, nil, w, args...)
	return "", code, err
}

func gitCmd(ctx context.Context, dir string, env []string, stdin io.Reader, stdout io.Writer, args ...string) (int, error) {
	path, err := exec.LookPath("git")
	if err != nil {
		return -1, errGitNotFound
	}
	cmd := exec.CommandContext(ctx, path, append([]string{"-C", dir}, args...)...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, &stderr
	err = cmd.Run()
	if err == nil {
		return 0, nil
	}
	name := "git " + args[0]
	if len(args) > 1 && !strings.HasPrefix(args[1], "-") {
		name += " " + args[1]
	}
	if ctx.Err() != nil {
		return -1, fmt.Errorf("%s: %w", name, ctx.Err())
	}
	code := -1
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
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
		return code, fmt.Errorf("%s: %w", name, err)
	}
	return code, fmt.Errorf("%s: %s", name, strings.Join(lines, "\n"))
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
