package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// MergeOptions say how Merge brings a workspace's work into what it started from.
type MergeOptions struct {
	Agent   string // the agent's name, for messages
	Squash  bool   // one new commit on the target instead of a merge (git)
	Message string // the message of the merge or squash commit ("" for agt's own)
}

// Merged is what Merge did.
type Merged struct {
	Into   string `json:"into"`             // git: the branch; jj: the change id
	How    string `json:"how"`              // fast-forward, merge, squash, or none (already merged)
	Commit string `json:"commit,omitempty"` // the target's tip after the merge
	// Saved is the commit that took the agent's uncommitted work, on its branch (git).
	Saved string `json:"saved,omitempty"`
}

// ErrRefused: Merge did nothing, because the target cannot take the merge as it is (its
// checkout dirty or on another branch, no branch to merge into) or it would conflict.
var ErrRefused = errors.New("merge refused")

// ConflictError is a merge that would conflict: nothing was merged, the checkout is as it was.
type ConflictError struct {
	Files []string // the conflicting files
	Into  string
	Saved string // the commit that took the uncommitted work meanwhile, if any
	Hint  string // how to merge by hand
}

func (e *ConflictError) Error() string {
	msg := fmt.Sprintf("merging into %s would conflict in %s; nothing was merged", e.Into, listFiles(e.Files))
	if e.Saved != "" {
		msg += fmt.Sprintf(" (the uncommitted work is now commit %s on the agent's branch)", shortID(e.Saved))
	}
	return msg + "\nhint: " + e.Hint
}

func (e *ConflictError) Unwrap() error { return ErrRefused }

// refused is an ErrRefused error with a hint.
func refused(hint, format string, args ...any) error {
	return &refusal{fmt.Sprintf(format, args...) + "\nhint: " + hint}
}

type refusal struct{ msg string }

func (e *refusal) Error() string { return e.msg }
func (e *refusal) Unwrap() error { return ErrRefused }

// Merge brings the workspace's work into what it started from: for git, the branch recorded
// at spawn (else the one checked out in the repository), merged in the user's checkout of it
// as `git merge` there would; for jj, the base change, which the agent's revisions are
// squashed into. Uncommitted work is first committed on the agent's branch, saying so. It
// refuses, with an error matching ErrRefused and changing nothing in the user's checkout,
// when that checkout is on another branch or has uncommitted changes, and when the merge
// would conflict (a *ConflictError). The agent's commits stay on its branch whatever happens.
// The caller makes sure the agent no longer runs.
func Merge(ctx context.Context, ws *Workspace, opts MergeOptions) (*Merged, error) {
	switch ws.Type {
	case Git:
		return mergeGit(ctx, ws, opts)
	case JJ:
		return mergeJJ(ctx, ws, opts)
	}
	return nil, fmt.Errorf("%s is no jj workspace or git worktree: there is nothing to merge", ws.Path)
}

// CheckMerge makes Merge's checks of the user's checkout, which need not wait for the agent
// to stop: it returns what Merge would refuse for, or nil.
func CheckMerge(ctx context.Context, ws *Workspace, agent string) error {
	if ws.Type != Git {
		return nil
	}
	if !isDir(ws.Repo) {
		return fmt.Errorf("the repository %s that %s started from is gone", ws.Repo, agent)
	}
	_, err := mergeTarget(ctx, ws, agent)
	return err
}

func mergeGit(ctx context.Context, ws *Workspace, opts MergeOptions) (*Merged, error) {
	repo := ws.Repo
	if !isDir(repo) {
		return nil, fmt.Errorf("the repository %s that %s started from is gone", repo, opts.Agent)
	}
	into, err := mergeTarget(ctx, ws, opts.Agent)
	if err != nil {
		return nil, err
	}
	tip := "refs/heads/" + ws.Branch
	if ws.Branch == "" || !branchExists(ctx, repo, ws.Branch) {
		return nil, fmt.Errorf("the branch %s of %s is gone: there is nothing to merge", ws.Branch, opts.Agent)
	}
	res := &Merged{Into: into, How: "none"}
	if res.Saved, err = saveUncommitted(ctx, ws, opts.Agent); err != nil {
		return nil, err
	}
	if in, err := contentIn(ctx, repo, tip, "refs/heads/"+into); err != nil {
		return nil, err
	} else if in {
		res.Commit, _ = revParse(ctx, repo, "HEAD")
		return res, nil // already merged: nothing to do
	}
	// Conflicts are found without touching any checkout.
	out, code, err := runGit(ctx, repo, nil, nil, "merge-tree", "--write-tree", "--name-only", "--no-messages", "refs/heads/"+into, tip)
	if code == 1 {
		lines := strings.Split(strings.TrimSpace(out), "\n")
		return nil, &ConflictError{Files: lines[1:], Into: into, Saved: res.Saved,
			Hint: fmt.Sprintf("resolve it by hand: cd %s && git merge %s, fix those files, then git commit (or git merge --abort)", repo, ws.Branch)}
	}
	if err != nil {
		return nil, err
	}
	before, err := revParse(ctx, repo, "HEAD")
	if err != nil {
		return nil, err
	}
	if opts.Squash {
		err = squashGit(ctx, ws, into, opts)
	} else {
		args := []string{"merge", "--no-edit", "--quiet"}
		if opts.Message != "" {
			args = append(args, "--no-ff", "-m", opts.Message)
		}
		if _, err = git(ctx, repo, append(args, ws.Branch)...); err != nil {
			abortMerge(ctx, repo)
		}
	}
	if err != nil {
		return nil, err
	}
	res.Commit, _ = revParse(ctx, repo, "HEAD")
	branchTip, _ := revParse(ctx, repo, tip)
	switch {
	case opts.Squash:
		res.How = "squash"
	case res.Commit == branchTip && before != branchTip:
		res.How = "fast-forward"
	default:
		res.How = "merge"
	}
	return res, nil
}

// mergeTarget checks the user's checkout and returns the branch to merge into: the one the
// workspace started from, which must be checked out, without uncommitted changes.
func mergeTarget(ctx context.Context, ws *Workspace, agent string) (string, error) {
	into := ws.target(ctx)
	cur := currentBranch(ctx, ws.Repo)
	switch {
	case into == "":
		return "", refused(fmt.Sprintf("check out the branch to merge into in %s and run git merge %s there", ws.Repo, ws.Branch),
			"%s started from no branch (a detached HEAD or a bare commit): agt does not know where to merge it", agent)
	case !branchExists(ctx, ws.Repo, into):
		return "", refused(fmt.Sprintf("merge it by hand: git -C %s merge %s", ws.Repo, ws.Branch),
			"branch %s, which %s started from, is gone", into, agent)
	case cur != into:
		on := "a detached HEAD"
		if cur != "" {
			on = "branch " + cur
		}
		return "", refused(fmt.Sprintf("git -C %s switch %s, then agt merge %s again", ws.Repo, into, agent),
			"%s is on %s, not on %s, which %s started from", ws.Repo, on, into, agent)
	}
	files, err := Uncommitted(ctx, ws.Repo)
	if err != nil {
		return "", err
	}
	if len(files) > 0 {
		return "", refused(fmt.Sprintf("commit or stash them (git -C %s stash), then agt merge %s again", ws.Repo, agent),
			"%s has uncommitted changes: %s", ws.Repo, listFiles(files))
	}
	if _, err := os.Stat(filepath.Join(gitDir(ctx, ws.Repo), "MERGE_HEAD")); err == nil {
		return "", refused(fmt.Sprintf("finish it (git -C %s commit) or abort it (git -C %s merge --abort)", ws.Repo, ws.Repo),
			"%s is in the middle of a merge", ws.Repo)
	}
	return into, nil
}

// saveUncommitted commits the agent's uncommitted work, what copy and setup put there aside,
// on its branch, with a message that says so, and returns the commit; "" when there is none.
// The worktree's files stay as they are; its index then matches the new commit.
func saveUncommitted(ctx context.Context, ws *Workspace, agent string) (string, error) {
	if !isDir(ws.Path) {
		return "", nil
	}
	if cur := currentBranch(ctx, ws.Path); cur != ws.Branch {
		return "", refused(fmt.Sprintf("commit its work on %s there, or merge what it has by hand", ws.Branch),
			"the worktree %s is not on its branch %s any more", ws.Path, ws.Branch)
	}
	tree, err := snapshotTree(ctx, ws)
	if err != nil {
		return "", err
	}
	head, err := revParse(ctx, ws.Path, "HEAD")
	if err != nil {
		return "", err
	}
	if headTree, err := revParse(ctx, ws.Path, "HEAD^{tree}"); err != nil || headTree == tree {
		return "", err
	}
	msg := fmt.Sprintf("Uncommitted work of agent %s\n\nagt merge committed what %s left uncommitted in its worktree.", agent, agent)
	commit, err := git(ctx, ws.Path, "commit-tree", tree, "-p", head, "-m", msg)
	if err != nil {
		return "", err
	}
	commit = strings.TrimSpace(commit)
	if _, err := git(ctx, ws.Path, "update-ref", "-m", "agt merge: uncommitted work", "refs/heads/"+ws.Branch, commit, head); err != nil {
		return "", err
	}
	// The files are the commit's already; the index follows them.
	if _, err := git(ctx, ws.Path, "reset", "-q"); err != nil {
		return "", err
	}
	return commit, nil
}

// squashGit makes the branch's change one new commit on into.
func squashGit(ctx context.Context, ws *Workspace, into string, opts MergeOptions) error {
	msg := opts.Message
	if msg == "" {
		log, _ := git(ctx, ws.Repo, "log", "--reverse", "--format=* %s", "refs/heads/"+into+"..refs/heads/"+ws.Branch)
		msg = fmt.Sprintf("Work of agent %s (%s), squashed\n\n%s", opts.Agent, ws.Branch, log)
	}
	if _, err := git(ctx, ws.Repo, "merge", "--squash", "--quiet", ws.Branch); err != nil {
		git(ctx, ws.Repo, "reset", "--merge")
		return err
	}
	if _, err := git(ctx, ws.Repo, "commit", "--quiet", "-m", msg); err != nil {
		git(ctx, ws.Repo, "reset", "--merge")
		return err
	}
	return nil
}

// abortMerge takes back a merge that stopped half-way.
func abortMerge(ctx context.Context, repo string) {
	if _, err := os.Stat(filepath.Join(gitDir(ctx, repo), "MERGE_HEAD")); err == nil {
		git(ctx, repo, "merge", "--abort")
	}
}

func gitDir(ctx context.Context, dir string) string {
	out, _ := git(ctx, dir, "rev-parse", "--path-format=absolute", "--git-dir")
	return strings.TrimSpace(out)
}

func revParse(ctx context.Context, dir, rev string) (string, error) {
	out, err := git(ctx, dir, "rev-parse", "--verify", "--quiet", rev)
	return strings.TrimSpace(out), err
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// Uncommitted lists the tracked files of the git checkout dir that have changes not committed
// (untracked files aside): what a new worktree made from its HEAD leaves out, what a merge
// into it would refuse.
func Uncommitted(ctx context.Context, dir string) ([]string, error) {
	out, err := git(ctx, dir, "status", "--porcelain", "-z", "--untracked-files=no")
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range splitZ(out) {
		if len(e) > 3 {
			files = append(files, e[3:])
		}
	}
	return files, nil
}
