package commands

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"agt/state"
)

// TestLastStateEvent finds the last state event wherever it falls against the blocks read
// from the end, and none past its limit or in a log without one.
func TestLastStateEvent(t *testing.T) {
	d, err := state.Open(filepath.Join(t.TempDir(), "run"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := d.Create("a")
	if err != nil {
		t.Fatal(err)
	}
	const stateLine = `{"v":1,"agent":"a","seq":7,"type":"state","from":"running","to":"stopped"}`
	output := func(n int) []byte { // n bytes of output events, whole lines
		var b bytes.Buffer
		for seq := 8; b.Len() < n; seq++ {
			fmt.Fprintf(&b, `{"v":1,"agent":"a","seq":%d,"type":"output","text":"%s"}`+"\n", seq, bytes.Repeat([]byte{'x'}, seq%300))
		}
		return b.Bytes()
	}
	for _, tc := range []struct {
		name string
		log  []byte
		want string
	}{
		{"last line", []byte(`{"type":"state","to":"running"}` + "\n" + stateLine + "\n"), stateLine},
		{"torn tail after it", []byte(stateLine + "\n" + `{"v":1,"type":"out`), stateLine},
		{"blocks back", append([]byte(stateLine+"\n"), output(300<<10)...), stateLine},
		{"a line of megabytes after it", []byte(stateLine + "\n" + `{"v":1,"type":"output","line":"` + strings.Repeat("x", 6<<20) + "\"}\n"), stateLine},
		{"none", output(200 << 10), ""},
		{"past the limit", append([]byte(stateLine+"\n"), output(9<<20)...), ""},
		{"empty", nil, ""},
	} {
		if err := os.WriteFile(a.Path(state.EventsFile), tc.log, 0o600); err != nil {
			t.Fatal(err)
		}
		if got := string(lastStateEvent(a)); got != tc.want {
			t.Errorf("%s: got %.80q, want %q", tc.name, got, tc.want)
		}
	}
	// A block boundary at every position in and around the state line.
	tail := output(40 << 10)
	for shift := 0; shift <= len(stateLine)+1; shift++ {
		pad := 64<<10 + shift - len(stateLine) - 1 - len(tail) // the first block starts shift bytes into the file
		log := append([]byte(stateLine+"\n"), append(bytes.Repeat([]byte("\n"), pad), tail...)...)
		if err := os.WriteFile(a.Path(state.EventsFile), log, 0o600); err != nil {
			t.Fatal(err)
		}
		if got := string(lastStateEvent(a)); got != stateLine {
			t.Fatalf("a block boundary %d bytes into the file: got %.80q", shift, got)
		}
	}
}

// BenchmarkLastStateEvent: the worst cases, read back to the 8 MiB limit: a log without a state
// event in it (a supervisor killed while its agent flooded output), in short lines and in one
// line of 9 MiB.
func BenchmarkLastStateEvent(b *testing.B) {
	d, err := state.Open(filepath.Join(b.TempDir(), "run"))
	if err != nil {
		b.Fatal(err)
	}
	a, err := d.Create("a")
	if err != nil {
		b.Fatal(err)
	}
	short := []byte(`{"v":1,"agent":"a","seq":1,"type":"output","text":"` + strings.Repeat("x", 100) + `"}` + "\n")
	for name, log := range map[string][]byte{
		"short lines": bytes.Repeat(short, 9<<20/len(short)),
		"one line":    []byte(`{"v":1,"agent":"a","seq":1,"type":"output","text":"` + strings.Repeat("x", 9<<20) + `"}` + "\n"),
	} {
		if err := os.WriteFile(a.Path(state.EventsFile), log, 0o600); err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(8 << 20)
			for b.Loop() {
				if lastStateEvent(a) != nil {
					b.Fatal("found a state event")
				}
			}
		})
	}
}
