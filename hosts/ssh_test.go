package hosts

import (
	"os"
	"path/filepath"
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
	if other, _ := ControlDir(deep + "x"); other == dir {
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
