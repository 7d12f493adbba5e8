package workspace

import (
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
