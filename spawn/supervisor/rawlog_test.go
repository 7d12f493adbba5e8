package supervisor

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"agt/state"
)

// TestCappedLog: past its cap the raw log rotates to one ".1" file, so it never takes much more
// than twice the cap, and every byte of the last cap's worth is kept.
func TestCappedLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), state.StdoutLog)
	l := openCapped(path, 16)
	for i := byte(0); i < 5; i++ {
		l.Write(bytes.Repeat([]byte{'a' + i}, 10))
	}
	l.Close()
	for file, want := range map[string]string{
		path:                       "eeeeeeeeee",
		path + state.RotatedSuffix: "ccccccccccdddddddddd",
	} {
		if b, err := os.ReadFile(file); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", filepath.Base(file), b, err, want)
		}
	}
	if _, err := os.Stat(path + ".2"); err == nil {
		t.Error("a second rotated file was made")
	}
	// Reopened, it goes on from the size on disk.
	l = openCapped(path, 16)
	l.Write([]byte("ffffffffff"))
	l.Write([]byte("g"))
	l.Close()
	if b, _ := os.ReadFile(path); string(b) != "g" {
		t.Errorf("after reopening: %q, want a rotation before g", b)
	}
}
