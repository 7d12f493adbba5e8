package hosts

import (
	"strings"
	"testing"
)

// Live, agt's own lines pass at once; another line waits for the next, since ssh's reason
// for a failed link comes last and is said by the caller, once.
func TestLastLinesHoldsSSHReason(t *testing.T) {
	var out strings.Builder
	l := &lastLines{forward: &out, live: true}
	l.Write([]byte("agt: h1: tail: a warning\nConnection timed out during banner exch"))
	l.Write([]byte("ange\n"))
	if got := out.String(); got != "agt: h1: tail: a warning\n" {
		t.Errorf("passed on %q, want agt's line only", got)
	}
	if got := l.last(); got != "Connection timed out during banner exchange" {
		t.Errorf("last() = %q, want ssh's reason", got)
	}
	// A line that another follows was not the last word: it passes then.
	l.Write([]byte("allowed x Bash (r1)\n"))
	if got := out.String(); !strings.HasSuffix(got, "banner exchange\n") {
		t.Errorf("a held line did not pass when the next came: %q", got)
	}
	// The command ended well: what is held passes too.
	l.flush()
	if got := out.String(); !strings.HasSuffix(got, "allowed x Bash (r1)\n") {
		t.Errorf("flush kept back %q", got)
	}
}
