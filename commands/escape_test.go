package commands

import (
	"strings"
	"testing"
)

// A character split across writes comes out whole; an escape split across writes is escaped.
func TestTerminalSafeSplits(t *testing.T) {
	in := "é\x1b[2Jx\u009b"
	for i := 0; i <= len(in); i++ {
		var b strings.Builder
		ts := &terminalSafe{w: &b}
		ts.Write([]byte(in[:i]))
		ts.Write([]byte(in[i:]))
		ts.Flush()
		if want := `é\x1b[2Jx\u009b`; b.String() != want {
			t.Errorf("split at %d: %q, want %q", i, b.String(), want)
		}
	}
}
