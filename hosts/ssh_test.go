package hosts

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestControlDir: the master sockets live under the run directory while their paths fit in a
// socket address, elsewhere (short, the user's alone) when it is too deep; a directory others
// can enter is refused.
func TestControlDir(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", "")
	short := t.TempDir()
	dir, err := ControlDir(short)
	if err != nil || dir != filepath.Join(short, "ssh") {
		t.Fatalf("ControlDir(%s) = %s, %v", short, dir, err)
	}
	deep := filepath.Join(t.TempDir(), strings.Repeat("d", 90))
	dir, err = ControlDir(deep)
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if strings.HasPrefix(dir, deep) || len(dir)+len("/0123456789ab.sock.0123456789abcdef") > 107 {
		t.Errorf("ControlDir of a deep run directory = %s (%d bytes)", dir, len(dir))
	}
	if again, _ := ControlDir(deep); again != dir {
		t.Errorf("a second call gave %s, not %s", again, dir)
	}
	other, _ := ControlDir(deep + "x")
	defer os.RemoveAll(other)
	if other == dir {
		t.Errorf("two run directories share %s", dir)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("%s: %v, %v", dir, fi.Mode(), err)
	}
	open := filepath.Join(t.TempDir(), "open")
	os.MkdirAll(filepath.Join(open, "ssh"), 0o755)
	if _, err := ControlDir(open); err == nil || !strings.Contains(err.Error(), "yours alone") {
		t.Errorf("a 0755 directory: %v", err)
	}
}

// TestMasterLeavesNoErr: what ssh says while it fails to connect comes back as the reason, and
// the file that caught it is not left in the control directory (one per destination ever
// tried, typos included); the lock stays, since removing it would race another agt.
func TestMasterLeavesNoErr(t *testing.T) {
	bin := t.TempDir()
	fake := "#!/bin/sh\necho 'ssh: Could not resolve hostname typo: Name or service not known' >&2\nexit 255\n"
	if err := os.WriteFile(filepath.Join(bin, "ssh"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	control := t.TempDir()
	s := &SSH{Host: "typo", Dest: "typo", Control: control}
	_, _, err := s.master(t.Context())
	var u *Unreachable
	if !errors.As(err, &u) || u.Reason != "ssh: Could not resolve hostname typo: Name or service not known" {
		t.Fatalf("master: %v", err)
	}
	entries, err := os.ReadDir(control)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{s.key() + ".lock"}; !slices.Equal(names, want) {
		t.Errorf("left in the control directory: %v, want %v", names, want)
	}
}
