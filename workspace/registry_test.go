package workspace

import (
	"context"
	"path/filepath"
	"testing"
)

func TestRegistry(t *testing.T) {
	r := &Registry{Dir: filepath.Join(t.TempDir(), "workspaces")}
	if entries, err := r.List(); err != nil || len(entries) != 0 {
		t.Fatalf("List of a new registry = %v, %v", entries, err)
	}
	a := &Workspace{Type: Git, Path: "/src/app-agt/a", Repo: "/src/app", Branch: "agt/a"}
	b := &Workspace{Type: JJ, Path: "/src/app-agt/b", Repo: "/src/app", Name: "b"}
	for _, add := range []struct {
		agent string
		ws    *Workspace
	}{{"b", b}, {"a", a}, {"a", a}, {"none", &Workspace{Type: None, Path: "/src/app"}}} {
		if err := r.Add(add.agent, add.ws); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := r.List()
	if err != nil || len(entries) != 2 || entries[0].Agent != "a" || entries[1].Workspace.Name != "b" || entries[0].Created.IsZero() {
		t.Fatalf("List = %+v, %v; want a, then b, and no none", entries, err)
	}
	if err := r.Forget(a); err != nil {
		t.Fatal(err)
	}
	if err := r.Forget(a); err != nil {
		t.Errorf("Forget twice: %v", err)
	}
	if entries, _ := r.List(); len(entries) != 1 || entries[0].Agent != "b" {
		t.Errorf("after Forget, List = %+v", entries)
	}
	var none *Registry
	if err := none.Add("x", a); err != nil {
		t.Errorf("nil registry: %v", err)
	}
}

func TestCheckGit(t *testing.T) {
	repo := gitRepo(t)
	ctx := context.Background()
	ws, err := Make(ctx, Options{Dir: repo, Name: "fix"})
	if err != nil {
		t.Fatal(err)
	}
	if c := Check(ctx, ws); c != (Condition{Ahead: 0}) {
		t.Errorf("new worktree: %+v", c)
	}
	writeFile(t, filepath.Join(ws.Path, "new.txt"), "x")
	if c := Check(ctx, ws); !c.Dirty || c.Ahead != 0 {
		t.Errorf("with a new file: %+v", c)
	}
	run(t, ws.Path, "git", "add", ".")
	run(t, ws.Path, "git", "commit", "-q", "-m", "work")
	if c := Check(ctx, ws); c.Dirty || c.Ahead != 1 {
		t.Errorf("after a commit: %+v", c)
	}
	run(t, repo, "git", "worktree", "remove", "--force", ws.Path)
	if c := Check(ctx, ws); !c.Missing || c.Gone || c.Ahead != 1 {
		t.Errorf("worktree removed, branch kept: %+v", c)
	}
	run(t, repo, "git", "branch", "-D", ws.Branch)
	if c := Check(ctx, ws); !c.Gone {
		t.Errorf("worktree and branch removed: %+v", c)
	}
}
