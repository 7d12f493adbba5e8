package state

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// newDir opens a fresh run directory under the test's temp dir.
func newDir(t testing.TB) *Dir {
	t.Helper()
	d, err := Open(filepath.Join(t.TempDir(), "run"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func newAgent(t testing.TB, name string) *Agent {
	t.Helper()
	a, err := newDir(t).Create(name)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestValidateName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"a", true},
		{"0", true},
		{"fix-auth", true},
		{"fix_auth.2", true},
		{"a..b", true},
		{strings.Repeat("a", 63), true},
		{"", false},
		{strings.Repeat("a", 64), false},
		{"A", false},
		{"fixAuth", false},
		{"-x", false},
		{"_x", false},
		{".x", false},
		{".", false},
		{"..", false},
		{"a/b", false},
		{"../a", false},
		{"a b", false},
		{"a\n", false},
		{"é", false},
	} {
		err := ValidateName(tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("ValidateName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
	want := `invalid agent name "A/b": use 1-63 of a-z 0-9 . _ -, starting with a letter or digit`
	if err := ValidateName("A/b"); err == nil || err.Error() != want {
		t.Errorf("ValidateName(\"A/b\") = %v, want %s", err, want)
	}
}

func TestResolveRoot(t *testing.T) {
	for _, tc := range []struct {
		desc, flag, runDir, xdg, home, want string
	}{
		{"flag first", "/f", "/r", "/x", "/h", "/f"},
		{"then AGT_RUN_DIR", "", "/r", "/x", "/h", "/r"},
		{"then XDG_STATE_HOME", "", "", "/x", "/h", "/x/agt"},
		{"relative XDG_STATE_HOME ignored", "", "", "x", "/h", "/h/.local/state/agt"},
		{"then HOME", "", "", "", "/h", "/h/.local/state/agt"},
		{"nothing", "", "", "", "", ""},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Setenv("AGT_RUN_DIR", tc.runDir)
			t.Setenv("XDG_STATE_HOME", tc.xdg)
			t.Setenv("HOME", tc.home)
			got, err := ResolveRoot(tc.flag)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("ResolveRoot = %q, want an error", got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ResolveRoot = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	t.Run("relative made absolute", func(t *testing.T) {
		got, err := ResolveRoot("rel")
		if err != nil || !filepath.IsAbs(got) || filepath.Base(got) != "rel" {
			t.Fatalf("ResolveRoot(rel) = %q, %v", got, err)
		}
	})
}

func TestOpenCreatesPrivateDirs(t *testing.T) {
	root := filepath.Join(t.TempDir(), "a", "b", "run")
	d, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{d.Root, filepath.Join(d.Root, "agents")} {
		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if perm := fi.Mode().Perm(); perm != 0o700 {
			t.Errorf("%s has mode %04o, want 0700", dir, perm)
		}
	}
	if _, err := Open(root); err != nil {
		t.Errorf("second Open: %v", err)
	}
}

func TestOpenRefusesUnsafeRoot(t *testing.T) {
	for _, mode := range []os.FileMode{0o777, 0o770, 0o702} {
		root := filepath.Join(t.TempDir(), "run")
		if err := os.Mkdir(root, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(root, mode); err != nil {
			t.Fatal(err)
		}
		_, err := Open(root)
		if err == nil || !strings.Contains(err.Error(), "chmod 700 "+root) {
			t.Errorf("Open of a %04o root = %v, want an error naming the fix", mode, err)
		}
		fi, err := os.Stat(root)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("Open changed the root's mode to %04o", fi.Mode().Perm())
		}
		if _, err := os.Stat(filepath.Join(root, "agents")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Open created agents/ in an unsafe root: %v", err)
		}
	}
}

func TestOpenRefusesUnsafeAgentsDir(t *testing.T) {
	root := filepath.Join(t.TempDir(), "run")
	if err := os.MkdirAll(filepath.Join(root, "agents"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(root, "agents"), 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(root); err == nil {
		t.Error("Open accepted a world-writable agents/")
	}
}

func TestOpenRefusesOtherOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a directory away")
	}
	root := filepath.Join(t.TempDir(), "run")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(root, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	_, err := Open(root)
	if err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
		t.Errorf("Open of a foreign root = %v, want an ownership error", err)
	}
}

func TestCreate(t *testing.T) {
	d := newDir(t)
	a, err := d.Create("x")
	if err != nil {
		t.Fatal(err)
	}
	if a.Name != "x" || a.Dir != filepath.Join(d.Root, "agents", "x") {
		t.Errorf("Create = %+v", a)
	}
	if fi, err := os.Stat(a.Dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("agent dir: %v, %v", fi, err)
	}
	_, err = d.Create("x")
	if !errors.Is(err, ErrNameTaken) || err.Error() != `agent "x" already exists` {
		t.Errorf("second Create = %v, want ErrNameTaken", err)
	}
	if _, err := d.Create("../x"); err == nil || errors.Is(err, ErrNameTaken) {
		t.Errorf("Create(../x) = %v, want a name error", err)
	}
}

func TestCreateConcurrent(t *testing.T) {
	d := newDir(t)
	const n = 10
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { _, errs[i] = d.Create("same") })
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, ErrNameTaken):
			t.Errorf("Create: %v", err)
		}
	}
	if won != 1 {
		t.Errorf("%d Creates won, want exactly 1", won)
	}
}

func TestAgent(t *testing.T) {
	d := newDir(t)
	_, err := d.Agent("x")
	if !errors.Is(err, ErrNoAgent) || err.Error() != `no agent named "x"` {
		t.Errorf("Agent of a missing name = %v, want ErrNoAgent", err)
	}
	if _, err := d.Agent("X"); err == nil || errors.Is(err, ErrNoAgent) {
		t.Errorf("Agent(X) = %v, want a name error", err)
	}
	if _, err := d.Create("x"); err != nil {
		t.Fatal(err)
	}
	a, err := d.Agent("x")
	if err != nil || a.Dir != filepath.Join(d.Root, "agents", "x") {
		t.Errorf("Agent = %+v, %v", a, err)
	}
	if got := a.Path(StatusFile); got != filepath.Join(a.Dir, "status.json") {
		t.Errorf("Path = %s", got)
	}
}

func TestNames(t *testing.T) {
	d := newDir(t)
	for _, n := range []string{"c", "a", "b-2"} {
		if _, err := d.Create(n); err != nil {
			t.Fatal(err)
		}
	}
	agents := filepath.Join(d.Root, "agents")
	for _, junk := range []string{".x.removed-1", "UPPER"} {
		if err := os.Mkdir(filepath.Join(agents, junk), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(agents, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := d.Names()
	if want := []string{"a", "b-2", "c"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Names = %q, %v; want %q", got, err, want)
	}
}

func TestRemove(t *testing.T) {
	d := newDir(t)
	a, err := d.Create("x")
	if err != nil {
		t.Fatal(err)
	}
	writeStatus(t, a, &Status{Name: "x"})
	if err := a.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Agent("x"); !errors.Is(err, ErrNoAgent) {
		t.Errorf("Agent after Remove = %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(d.Root, "agents")); len(entries) != 0 {
		t.Errorf("agents/ holds %d entries after Remove", len(entries))
	}
	if err := a.Remove(); !errors.Is(err, ErrNoAgent) {
		t.Errorf("second Remove = %v, want ErrNoAgent", err)
	}
	if _, err := d.Create("x"); err != nil {
		t.Errorf("Create after Remove: %v", err)
	}
}
