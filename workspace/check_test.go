package workspace

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
)

func TestCheckGit(t *testing.T) {
	repo := gitRepo(t)
	ctx := context.Background()
	ws, err := Make(ctx, Options{Dir: repo, Name: "fix"})
	if err != nil {
		t.Fatal(err)
	}
	if ws.From != "main" {
		t.Errorf("From = %q, want main", ws.From)
	}
	if c := Check(ctx, ws); !reflect.DeepEqual(c, Condition{Merged: true, Target: "main"}) {
		t.Errorf("new worktree: %+v", c)
	}
	writeFile(t, filepath.Join(ws.Path, "new.txt"), "x")
	if c := Check(ctx, ws); !c.Dirty || c.Merged || c.Ahead != 0 || !reflect.DeepEqual(c.Changed, []string{"new.txt"}) {
		t.Errorf("with a new file: %+v", c)
	}
	run(t, ws.Path, "git", "add", ".")
	run(t, ws.Path, "git", "commit", "-q", "-m", "work")
	if c := Check(ctx, ws); c.Dirty || c.Merged || c.Ahead != 1 || c.Behind != 0 {
		t.Errorf("after a commit: %+v", c)
	}
	writeFile(t, filepath.Join(repo, "other.txt"), "y")
	run(t, repo, "git", "add", ".")
	run(t, repo, "git", "commit", "-q", "-m", "other")
	if c := Check(ctx, ws); c.Merged || c.Ahead != 1 || c.Behind != 1 {
		t.Errorf("main moved on: %+v", c)
	}
	run(t, repo, "git", "merge", "-q", "--squash", ws.Branch)
	run(t, repo, "git", "commit", "-q", "-m", "squashed")
	if c := Check(ctx, ws); !c.Merged || c.Ahead != 1 {
		t.Errorf("squash-merged: %+v", c)
	}
	if _, err := Remove(ctx, ws, false); err != nil {
		t.Errorf("remove a squash-merged worktree: %v", err)
	}
	if c := Check(ctx, ws); !c.Gone {
		t.Errorf("removed: %+v", c)
	}
}

func TestCheckGitMissing(t *testing.T) {
	repo := gitRepo(t)
	ctx := context.Background()
	ws, err := Make(ctx, Options{Dir: repo, Name: "fix"})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(ws.Path, "new.txt"), "x")
	run(t, ws.Path, "git", "add", ".")
	run(t, ws.Path, "git", "commit", "-q", "-m", "work")
	run(t, repo, "git", "worktree", "remove", "--force", ws.Path)
	if c := Check(ctx, ws); !c.Missing || c.Gone || c.Ahead != 1 || c.Merged {
		t.Errorf("worktree removed, branch kept: %+v", c)
	}
	run(t, repo, "git", "branch", "-D", ws.Branch)
	if c := Check(ctx, ws); !c.Gone {
		t.Errorf("worktree and branch removed: %+v", c)
	}
}

// An old record has no From: the target is the branch checked out in the repository now.
func TestCheckGitOldRecord(t *testing.T) {
	repo := gitRepo(t)
	ctx := context.Background()
	ws, err := Make(ctx, Options{Dir: repo, Name: "fix"})
	if err != nil {
		t.Fatal(err)
	}
	ws.From = ""
	run(t, repo, "git", "switch", "-q", "-c", "dev")
	if c := Check(ctx, ws); c.Target != "dev" || !c.Merged {
		t.Errorf("old record: %+v", c)
	}
}

// What copy and setup put there is not the agent's work, until the agent changes it.
func TestCheckSeeds(t *testing.T) {
	repo := gitRepo(t)
	writeFile(t, filepath.Join(repo, ".env"), "SECRET=1\n")
	ctx := context.Background()
	ws, err := Make(ctx, Options{Dir: repo, Name: "fix", Copy: []string{".env"},
		Setup: [][]string{{"sh", "-c", "echo built > artefact; echo changed >> README"}}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{" M README", "?? .env", "?? artefact"}
	var got []string
	for _, s := range ws.Seeded {
		got = append(got, s.Path)
	}
	if !reflect.DeepEqual(got, []string{"README", ".env", "artefact"}) && !reflect.DeepEqual(got, []string{".env", "README", "artefact"}) {
		t.Errorf("seeds = %q, from status %q", got, want)
	}
	if c := Check(ctx, ws); c.Dirty || !c.Merged {
		t.Errorf("only seeds: %+v", c)
	}
	if _, err := Remove(ctx, &Workspace{Type: Git, Path: ws.Path, Repo: ws.Repo, Branch: ws.Branch, Base: ws.Base, From: ws.From}, false); err == nil {
		t.Fatal("a record without seeds took them for nothing")
	}
	writeFile(t, filepath.Join(ws.Path, ".env"), "SECRET=2\n")
	if c := Check(ctx, ws); !c.Dirty || !reflect.DeepEqual(c.Changed, []string{".env"}) {
		t.Errorf("a seed the agent changed: %+v", c)
	}
	writeFile(t, filepath.Join(ws.Path, ".env"), "SECRET=1\n")
	if _, err := Remove(ctx, ws, false); err != nil {
		t.Errorf("remove with seeds only: %v", err)
	}
}

// A file name an agent chose reaches no terminal with its control bytes as they are.
func TestListFilesEscapes(t *testing.T) {
	got := listFiles([]string{"ok.txt", "evil\x1b]52;c;AAAA\x07.txt", "c1\u009b2J", "bad\xff"})
	want := `ok.txt, "evil\x1b]52;c;AAAA\a.txt", "c1\u009b2J", "bad\xff"`
	if got != want {
		t.Errorf("listFiles = %s, want %s", got, want)
	}
	if got := listFiles([]string{"a", "b", "c", "d", "e", "f", "g"}); got != "a, b, c, d, e and 2 more" {
		t.Errorf("listFiles = %s", got)
	}
}
