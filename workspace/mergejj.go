package workspace

import (
	"context"
	"fmt"
	"slices"

	"agt/jjcmd"
)

// mergeJJ squashes the agent's revisions, its working-copy change included, into the change
// its workspace started from, from the user's workspace (whose working copy jj then updates,
// as a jj squash there would). What copy and setup put there stays behind. When the squash
// leaves a conflict in that change or below it that was not there before, the repository is
// restored to the operation before the squash, and the merge is refused.
func mergeJJ(ctx context.Context, ws *Workspace, opts MergeOptions) (*Merged, error) {
	if !isDir(ws.Path) {
		return nil, fmt.Errorf("jj workspace %s is gone: its revisions are in %s ('jj log' there)", ws.Path, ws.Repo)
	}
	if ws.Base == "" || ws.Name == "" {
		return nil, fmt.Errorf("the record of %s names no base change or workspace", ws.Path)
	}
	res := &Merged{Into: ws.Base, How: "none", Commit: ws.Base}
	// Snapshots the agent's working copy, so that its files are in @.
	revs, err := jjcmd.Revisions(ctx, ws.Path, ws.Base+"..@")
	if err != nil {
		return nil, jjError(err)
	}
	changed, err := agentChanges(ctx, ws)
	if err != nil {
		return nil, jjError(err)
	}
	work := len(changed) > 0
	for _, r := range revs[min(1, len(revs)):] {
		work = work || !r.Empty
	}
	if !work {
		return res, nil
	}
	below := "conflicts() & (" + ws.Base + "::)"
	before, err := jjcmd.Revisions(ctx, ws.Repo, below)
	if err != nil {
		return nil, jjError(err)
	}
	op, err := jjcmd.Operation(ctx, ws.Repo)
	if err != nil {
		return nil, jjError(err)
	}
	from := ws.Base + ".." + ws.Name + "@"
	if err := jjcmd.Squash(ctx, ws.Repo, from, ws.Base, opts.Message, ws.unchangedSeeds()); err != nil {
		return nil, jjError(err)
	}
	after, err := jjcmd.Revisions(ctx, ws.Repo, below)
	if err == nil {
		if rev := newConflict(before, after); rev != "" {
			files, _ := jjcmd.ConflictedFiles(ctx, ws.Repo, rev)
			if err := jjcmd.RestoreOperation(ctx, ws.Repo, op); err != nil {
				return nil, fmt.Errorf("the squash into %s conflicted, and undoing it failed: %w\nhint: jj -R %s op restore %s", ws.Base, jjError(err), ws.Repo, op)
			}
			jjcmd.UpdateStale(ctx, ws.Path)
			return nil, &ConflictError{Files: files, Into: "change " + shortID(ws.Base),
				Hint: fmt.Sprintf("resolve it by hand: cd %s && jj squash --from '%s' --into %s, then jj resolve", ws.Repo, from, ws.Base)}
		}
	}
	// The agent's workspace saw its commits rewritten from another workspace.
	if err := jjcmd.UpdateStale(ctx, ws.Path); err != nil {
		return nil, jjError(err)
	}
	res.How = "squash"
	return res, nil
}

// newConflict returns a conflicted revision of after that is not in before; "" for none.
func newConflict(before, after []jjcmd.Revision) string {
	for _, r := range after {
		if !slices.ContainsFunc(before, func(b jjcmd.Revision) bool { return b.ChangeID == r.ChangeID }) {
			return r.ChangeID
		}
	}
	return ""
}
