package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"agt/jjcmd"
)

// makeJJ adds a jj workspace named opts.Name whose working-copy commit is a new empty revision
// on top of the base.
func makeJJ(ctx context.Context, opts Options, dir string, u *undo) (*Workspace, error) {
	repo, err := jjcmd.Root(ctx, dir)
	if errors.Is(err, jjcmd.ErrNotRepo) {
		return nil, fmt.Errorf("%s is not in a jj repository\nhint: use --workspace git or none, or spawn from inside a jj repository", dir)
	}
	if err != nil {
		return nil, jjError(err)
	}
	base, err := jjBase(ctx, repo, opts.Base)
	if err != nil {
		return nil, jjError(err)
	}
	path, err := place(repo, opts, u)
	if err != nil {
		return nil, err
	}
	err = jjcmd.WorkspaceAdd(ctx, repo, opts.Name, base, path)
	if errors.Is(err, jjcmd.ErrWorkspaceExists) {
		return nil, &ExistsError{Msg: fmt.Sprintf("jj workspace %q already exists in %s", opts.Name, repo), JJName: opts.Name, Repo: repo}
	}
	// From here on the workspace may exist, even when jj failed half-way.
	u.push(func(ctx context.Context) {
		if names, err := jjcmd.WorkspaceList(ctx, repo); err == nil && slices.Contains(names, opts.Name) {
			jjcmd.WorkspaceForget(ctx, repo, opts.Name)
		}
		os.RemoveAll(path)
	})
	if err != nil {
		return nil, jjError(err)
	}
	revs, err := jjcmd.Revisions(ctx, path, "@")
	if err != nil {
		return nil, jjError(err)
	}
	if len(revs) != 1 {
		return nil, fmt.Errorf("new jj workspace %s: @ is %d revisions", path, len(revs))
	}
	return &Workspace{Type: JJ, Path: path, Repo: repo, Name: opts.Name, Base: base, Change: revs[0].ChangeID}, nil
}

// jjBase returns the change id the workspace starts from: the one revision that base names;
// without a base, the user's @, or @- when @ is empty (its parent holds the last work; an
// empty @ is only a place to work in). An empty merge stays the base, keeping all its parents.
func jjBase(ctx context.Context, repo, base string) (string, error) {
	one := func(revset string) ([]jjcmd.Revision, error) {
		revs, err := jjcmd.Revisions(ctx, repo, revset)
		if err != nil {
			return nil, err
		}
		if len(revs) == 0 {
			return nil, fmt.Errorf("base %q names no revision in %s", revset, repo)
		}
		return revs, nil
	}
	if base != "" {
		revs, err := one(base)
		if err != nil {
			return "", err
		}
		if len(revs) > 1 {
			return "", fmt.Errorf("base %q names %d revisions in %s; give one", base, len(revs), repo)
		}
		return revs[0].ChangeID, nil
	}
	at, err := one("@")
	if err != nil {
		return "", err
	}
	if !at[0].Empty {
		return at[0].ChangeID, nil
	}
	parents, err := one("@-")
	if err != nil {
		return "", err
	}
	if len(parents) == 1 {
		return parents[0].ChangeID, nil
	}
	return at[0].ChangeID, nil
}

// removeJJ checks the workspace for changes (running jj there snapshots its files first),
// forgets it and deletes its directory.
func removeJJ(ctx context.Context, ws *Workspace, force, dry bool) ([]string, error) {
	exists := isDir(ws.Path)
	if exists && !force {
		revs, err := jjcmd.Revisions(ctx, ws.Path, "@")
		if err != nil {
			return nil, fmt.Errorf("check jj workspace %s for changes: %w\nhint: --force removes it without checking", ws.Path, jjError(err))
		}
		if len(revs) != 1 || !revs[0].Empty {
			files, err := agentChanges(ctx, ws)
			if err != nil {
				return nil, fmt.Errorf("check jj workspace %s for changes: %w\nhint: --force removes it without checking", ws.Path, jjError(err))
			}
			if len(files) > 0 || len(revs) != 1 {
				return nil, unsaved(fmt.Sprintf("jj workspace %s holds changes (change %s): %s", ws.Path, short(revs), listFiles(files)),
					"commit them with 'jj commit' there, or use --force to remove it anyway")
			}
		}
	}
	var removed []string
	names, err := jjcmd.WorkspaceList(ctx, ws.Repo)
	switch {
	case err == nil && slices.Contains(names, ws.Name):
		if !dry {
			if err := jjcmd.WorkspaceForget(ctx, ws.Repo, ws.Name); err != nil {
				return removed, jjError(err)
			}
		}
		removed = append(removed, "jj workspace "+ws.Name)
	case err != nil && !force:
		return removed, fmt.Errorf("list workspaces of %s: %w", ws.Repo, jjError(err))
	}
	if exists {
		if !dry {
			if err := os.RemoveAll(ws.Path); err != nil {
				return removed, fmt.Errorf("remove workspace directory: %w", err)
			}
		}
		removed = append(removed, "directory "+ws.Path)
	}
	return removed, nil
}

func short(revs []jjcmd.Revision) string {
	if len(revs) == 1 && len(revs[0].ChangeID) > 12 {
		return revs[0].ChangeID[:12]
	}
	if len(revs) == 1 {
		return revs[0].ChangeID
	}
	return "@"
}

// jjError words jj's absence as agt's users need it.
func jjError(err error) error {
	if errors.Is(err, jjcmd.ErrNotFound) {
		return errors.New("jj not found; install it or use --workspace git|none")
	}
	return err
}

// unsaved is an ErrUnsaved error with a hint.
func unsaved(msg, hint string) error {
	return &unsavedError{msg + "\nhint: " + hint}
}

type unsavedError struct{ msg string }

func (e *unsavedError) Error() string { return e.msg }
func (e *unsavedError) Unwrap() error { return ErrUnsaved }
