package commands

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"agt/state"
)

// On a terminal the STATE cells carry colour escapes, which tabwriter counts as text: the
// header's columns must still start where the cells' do.
func TestPsTableColouredColumnsLineUp(t *testing.T) {
	now := time.Now()
	rows := []psRow{
		{Name: "a", Status: &state.Status{Kind: "exec", State: "running", Since: now, PID: 1}},
		{Name: "bb", Status: &state.Status{Kind: "claude", State: "exited", Since: now}},
	}
	header, cells := psTable(rows, true)
	var b bytes.Buffer
	if err := (&output{w: &b}).table(header, cells); err != nil {
		t.Fatal(err)
	}
	plain := regexp.MustCompile("\x1b\\[[0-9;]*m").ReplaceAllString(b.String(), "")
	lines := strings.Split(strings.TrimSuffix(plain, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("want a header and two rows, got:\n%s", plain)
	}
	at := strings.Index(lines[0], "REASON")
	for _, l := range lines[1:] {
		if len(l) <= at || l[at] != '-' || l[at-1] != ' ' {
			t.Errorf("REASON starts at column %d of the header, but not in this row:\n%s", at, plain)
		}
	}
}
