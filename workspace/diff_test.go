package workspace

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Diff sees commits, changes and new files, leaves out what copy put there, and changes
// nothing in the worktree: its index and status are the same after.
func TestDiffGit(t *testing.T) {
	repo := gitRepo(t)
	writeFile(t, filepath.Join(repo, ".env"), "SECRET=1\n")
	ctx := context.Background()
	ws, err := Make(ctx, Options{Dir: repo, Name: "fix", Copy: []string{".env"}})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(ws.Path, "done.txt"), "committed\n")
	run(t, ws.Path, "git", "add", "done.txt")
	run(t, ws.Path, "git", "commit", "-q", "-m", "work")
	writeFile(t, filepath.Join(ws.Path, "README"), "hello\nagain\n")
	writeFile(t, filepath.Join(ws.Path, "new.txt"), "new\n")
	writeFile(t, filepath.Join(ws.Path, "staged.txt"), "staged\n")
	run(t, ws.Path, "git", "add", "staged.txt")
	index := filepath.Join(repo, ".git", "worktrees", "fix", "index")
	before, _ := os.ReadFile(index)
	status := run(t, ws.Path, "git", "status", "--porcelain")

	var patch bytes.Buffer
	ch, err := Diff(ctx, ws, &patch)
	if err != nil {
		t.Fatal(err)
	}
	want := &Change{Base: ws.Base, Commits: 1, Uncommitted: []string{"README", "new.txt", "staged.txt"},
		Files: []FileStat{
			{Path: "README", Status: "M", Insertions: 1},
			{Path: "done.txt", Status: "A", Insertions: 1},
			{Path: "new.txt", Status: "A", Insertions: 1},
			{Path: "staged.txt", Status: "A", Insertions: 1},
		}, Insertions: 4}
	if !reflect.DeepEqual(ch, want) {
		t.Errorf("got %+v\nwant %+v", ch, want)
	}
	if strings.Contains(patch.String(), "SECRET") || !strings.Contains(patch.String(), "+again") {
		t.Errorf("patch:\n%s", patch.String())
	}
	if after, _ := os.ReadFile(index); !bytes.Equal(before, after) {
		t.Error("the worktree's index changed")
	}
	if got := run(t, ws.Path, "git", "status", "--porcelain"); got != status {
		t.Errorf("status changed:\n%s\nwas\n%s", got, status)
	}
	// The patch applies to the base and gives the worktree's files.
	check := filepath.Join(t.TempDir(), "check")
	run(t, "", "git", "clone", "-q", repo, check)
	run(t, check, "git", "checkout", "-q", ws.Base)
	cmdPatch := filepath.Join(t.TempDir(), "p")
	os.WriteFile(cmdPatch, patch.Bytes(), 0o644)
	run(t, check, "git", "apply", cmdPatch)
	if b, _ := os.ReadFile(filepath.Join(check, "README")); string(b) != "hello\nagain\n" {
		t.Errorf("applied README: %q", b)
	}
}

// With its worktree gone, the branch is the change.
func TestDiffGitBranchOnly(t *testing.T) {
	repo := gitRepo(t)
	ctx := context.Background()
	ws, err := Make(ctx, Options{Dir: repo, Name: "fix"})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(ws.Path, "done.txt"), "a\nb\n")
	run(t, ws.Path, "git", "add", "done.txt")
	run(t, ws.Path, "git", "commit", "-q", "-m", "work")
	run(t, repo, "git", "worktree", "remove", ws.Path)
	ch, err := Diff(ctx, ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ch.Commits != 1 || ch.Insertions != 2 || len(ch.Files) != 1 || len(ch.Uncommitted) != 0 {
		t.Errorf("got %+v", ch)
	}
}
