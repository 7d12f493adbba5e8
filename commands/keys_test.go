package commands

import (
	"strings"
	"testing"
)

func TestParseKeys(t *testing.T) {
	for in, want := range map[string]string{
		"ls<Enter>":          "ls\r",
		"<esc>:wq<CR>":       "\x1b:wq\r",
		"<Up><Down><Left>":   "\x1b[A\x1b[B\x1b[D",
		"<C-c><c-X><C-\\>":   "\x03\x18\x1c",
		"a <lt> b<Tab>":      "a < b\t",
		"<Home><End><Del>":   "\x1b[H\x1b[F\x1b[3~",
		"<PgUp><PgDn><BS> x": "\x1b[5~\x1b[6~\x7f x",
	} {
		got, err := parseKeys(in)
		if err != nil || string(got) != want {
			t.Errorf("parseKeys(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, why := range map[string]string{
		"<Foo>":   "bad key <Foo> at byte 1",
		"a < b":   "a < with no >",
		"a < b >": "bad key < b > at byte 3",
		"x<Enter": "a < with no >",
		"<C-1>":   "bad key <C-1>",
		"":        "no keys to send",
	} {
		_, err := parseKeys(in)
		if err == nil || !strings.Contains(err.Error(), why) || strings.Contains(err.Error(), "\n") {
			t.Errorf("parseKeys(%q): error %v, want one line with %q", in, err, why)
		}
	}
}

func TestDetacher(t *testing.T) {
	tests := []struct {
		keys   string
		chunks []string
		fwd    string
		detach bool
	}{
		{"\x1c", []string{"abc"}, "abc", false},
		{"\x1c", []string{"ab\x1cc"}, "ab", true},
		{"\x10\x11", []string{"a\x10", "\x11"}, "a", true},           // split across reads
		{"\x10\x11", []string{"a\x10", "b"}, "a\x10b", false},        // held, then let go
		{"\x10\x11", []string{"\x10\x10\x11"}, "\x10", true},         // a false start
		{"\x10\x10\x11", []string{"\x10\x10\x10\x11"}, "\x10", true}, // overlapping
	}
	for _, tt := range tests {
		d := &detacher{keys: []byte(tt.keys)}
		var fwd []byte
		detach := false
		for _, c := range tt.chunks {
			f, done := d.feed([]byte(c))
			fwd = append(fwd, f...)
			if done {
				detach = true
				break
			}
		}
		if string(fwd) != tt.fwd || detach != tt.detach {
			t.Errorf("keys %q, input %q: forwarded %q detach %v; want %q %v", tt.keys, tt.chunks, fwd, detach, tt.fwd, tt.detach)
		}
	}
}
