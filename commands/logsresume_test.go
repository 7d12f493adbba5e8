package commands

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"agt/state"
)

// A follow that printed part of a log resumes where it stopped, across a rotation, and one
// whose start was rotated away twice gets all there is and a new start.
func TestPrintResumed(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "stdout.log")
	write := func(p, s string) {
		f, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(s)
		f.Close()
	}
	rotate := func() {
		if err := os.Rename(path, path+state.RotatedSuffix); err != nil {
			t.Fatal(err)
		}
	}
	write(path, "a1\na2\na3\n")
	var out bytes.Buffer
	var start rawPos
	f, err := printRaw(&out, path, 2, func(p rawPos, _ int64) { start = p })
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if out.String() != "a2\na3\n" || start.off != 3 {
		t.Fatalf("printRaw -n 2 = %q from %v, want a2 a3 from offset 3", out.String(), start)
	}
	printed := int64(len("a2\n")) // the link dropped after a2

	write(path, "a4\n")
	rotate()
	write(path, "b1\n")
	resumed := func() (string, rawPos, int64, string) {
		var out, errs bytes.Buffer
		var p rawPos
		var skip int64
		f, err := printResumed(&out, &errs, path, start, printed, func(q rawPos, n int64) { p, skip = q, n })
		if err != nil {
			t.Fatal(err)
		}
		if f != nil {
			f.Close()
		}
		return out.String(), p, skip, errs.String()
	}
	got, p, skip, errs := resumed()
	if got != "a3\na4\nb1\n" || p != start || skip != printed || errs != "" {
		t.Fatalf("after one rotation: %q from %v+%d (%q), want a3 a4 b1 from %v+%d", got, p, skip, errs, start, printed)
	}

	rotate()
	write(path, "c1\n")
	got, p, skip, errs = resumed()
	if got != "b1\nc1\n" || p.id == start.id || skip != 0 || !strings.Contains(errs, "rotated away twice") {
		t.Fatalf("after two rotations: %q from %v+%d (%q), want b1 c1 from a new start, said", got, p, skip, errs)
	}
}
