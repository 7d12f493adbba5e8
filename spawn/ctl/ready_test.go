package ctl

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// TestReadyLine: what the supervisor writes on the readiness pipe, the spawn reads back as
// it was, and it is the JSON that encoding/json would have written.
func TestReadyLine(t *testing.T) {
	for _, m := range []Ready{
		{Spawned: json.RawMessage(`{"v":1,"type":"spawned","argv":["sh","-c","echo \"hi\"\n"],"pid":42}`)},
		{Error: `could not start "x": executable not found in $PATH; is it installed?`},
		{Error: "two\nlines <&> and a tab\t"},
	} {
		line := m.Line()
		if !bytes.HasSuffix(line, []byte("\n")) || bytes.Count(line, []byte("\n")) != 1 {
			t.Errorf("%q: not one line", line)
		}
		var std Ready
		if err := json.Unmarshal(line, &std); err != nil {
			t.Errorf("%q: %v", line, err)
		}
		got, err := ParseReady(line)
		if err != nil {
			t.Errorf("%q: %v", line, err)
			continue
		}
		if !bytes.Equal(got.Spawned, m.Spawned) || got.Error != m.Error || std.Error != m.Error {
			t.Errorf("%q: read back %+v (encoding/json %+v), want %+v", line, got, std, m)
		}
	}
	for _, bad := range []string{"", "{", "{}\n", `{"spawned":3}`, "garbage\n"} {
		if m, err := ParseReady([]byte(bad)); err == nil {
			t.Errorf("%q: read as %+v", bad, m)
		}
	}
}

// FuzzParseReady: any line is read without panicking, and what is read survives a round trip.
func FuzzParseReady(f *testing.F) {
	f.Add([]byte(`{"spawned":{"type":"spawned","pid":1}}` + "\n"))
	f.Add([]byte(`{"error":"could not start x"}` + "\n"))
	f.Add([]byte(`{"error":"\u00e9\ud800"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := ParseReady(line)
		if err != nil {
			return
		}
		again, err := ParseReady(m.Line())
		if err != nil {
			t.Fatalf("%q read as %+v, whose line %q does not read: %v", line, m, m.Line(), err)
		}
		// Invalid UTF-8 in an error is written as U+FFFD, as encoding/json writes it.
		if utf8.ValidString(m.Error) && again.Error != m.Error || m.Error == "" && !bytes.Equal(again.Spawned, m.Spawned) {
			t.Fatalf("%q: %+v, then %+v", line, m, again)
		}
	})
}
