package commands

import (
	"strings"
	"testing"
	"time"

	"agt/stream"
)

// The transcript as a whole is checked on a real terminal by testdata/script/tail_format_table;
// these are its pieces.

func TestFirstLine(t *testing.T) {
	for in, want := range map[string]string{
		"":                       "",
		"ok":                     "ok",
		"  one\ntwo\n":           "one …",
		"a\tb":                   "a  b",
		strings.Repeat("x", 120): strings.Repeat("x", stream.LineMax-1) + "…",
	} {
		if got := firstLine(in); got != want {
			t.Errorf("firstLine(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSummary(t *testing.T) {
	for in, want := range map[string]string{
		`{"command":"go test ./...","description":"Run"}`: "  go test ./...",
		`{"command":["bash","-lc","ls"]}`:                 "  bash -lc ls",
		`{"file_path":"/a/b.go"}`:                         "  /a/b.go",
		`{"todos":[1,2]}`:                                 `  {"todos":[1,2]}`,
		`{}`:                                              "",
		``:                                                "",
	} {
		if got := summary("  ", []byte(in)); got != want {
			t.Errorf("summary(%s) = %q, want %q", in, got, want)
		}
	}
}

func TestResultSummary(t *testing.T) {
	for in, want := range map[string]string{
		`"one\ntwo\nthree"`: " one (+2 lines)",
		`"one\ntwo"`:        " one (+1 line)",
		`{"ok":true}`:       ` {"ok":true}`,
		`""`:                "",
		`null`:              "",
	} {
		if got := resultSummary([]byte(in)); got != want {
			t.Errorf("resultSummary(%s) = %q, want %q", in, got, want)
		}
	}
}

func TestWrapProse(t *testing.T) {
	got := wrapProse([]string{"the quick brown fox jumps over the lazy dog again and again", "short"}, 24)
	want := []string{"the quick brown fox", "jumps over the lazy dog", "again and again", "short"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("wrapProse = %q, want %q", got, want)
	}
}

func TestHumanNumbers(t *testing.T) {
	for d, want := range map[time.Duration]string{
		850 * time.Millisecond: "850ms", 12340 * time.Millisecond: "12.3s",
		245 * time.Second: "4m05s", 72 * time.Minute: "1h12m",
	} {
		if got := humanDuration(d); got != want {
			t.Errorf("humanDuration(%s) = %q, want %q", d, got, want)
		}
	}
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 12034: "12,034", 1234567: "1,234,567", -1234: "-1,234"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestBuildInfoString(t *testing.T) {
	for _, tc := range []struct {
		b    buildInfo
		want string
	}{
		{buildInfo{Version: "devel"}, "devel"},
		{buildInfo{Version: "v1.2.0"}, "v1.2.0"},
		{buildInfo{Version: "devel", Revision: "10f4dce5e2a1b2c3d4e5"}, "devel (10f4dce5e2a1)"},
		{buildInfo{Version: "devel", Revision: "10f4dce", Modified: true}, "devel (10f4dce, modified)"},
		{buildInfo{Version: "v0.0.0-20261124204429-ec64bfa7ea1d+dirty", Revision: "ec64bfa7ea1d4f24b801", Modified: true}, "v0.0.0-20261124204429-ec64bfa7ea1d+dirty"},
	} {
		if got := tc.b.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.b, got, tc.want)
		}
	}
}

// TestTranscriptBell: tail -f rings the bell when an agent starts to wait for its user or
// fails, once the past is printed, and not for other changes.
func TestTranscriptBell(t *testing.T) {
	line := func(from, to string) []byte {
		return []byte(`{"v":1,"ts":"2026-01-01T00:00:00Z","agent":"a","seq":1,"type":"state","from":"` + from + `","to":"` + to + `","reason":"x"}`)
	}
	for _, tc := range []struct {
		from, to   string
		bell, live bool
		want       bool
	}{
		{"running", "waiting", true, true, true},
		{"running", "failed", true, true, true},
		{"waiting", "waiting", true, true, false},
		{"waiting", "running", true, true, false},
		{"running", "waiting", true, false, false}, // the past
		{"running", "waiting", false, true, false}, // bell = false
	} {
		tr := &transcript{bell: tc.bell, live: tc.live}
		var b strings.Builder
		tr.event(&b, line(tc.from, tc.to))
		if got := strings.Contains(b.String(), "\a"); got != tc.want {
			t.Errorf("%s → %s (bell %v, live %v): rang %v, want %v", tc.from, tc.to, tc.bell, tc.live, got, tc.want)
		}
	}
}
