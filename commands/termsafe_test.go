package commands

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTermSafe(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, é and 日本":   "plain text, é and 日本",
		"\x1b]52;c;aGk=\x07":     `\x1b]52;c;aGk=\x07`,
		"\x1b[2J\x1b[6n":         `\x1b[2J\x1b[6n`,
		"csi \u009b31m":          `csi \u009b31m`,
		"bad \xff utf8":          `bad \xff utf8`,
		"keeps\nlines\tand tabs": "keeps\nlines\tand tabs",
		"del \x7f":               `del \x7f`,
	} {
		if got := termSafe(in); got != want {
			t.Errorf("termSafe(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzTermSafe: nothing a terminal interprets survives: no C0 control but newline and tab, no
// DEL, no C1, and valid UTF-8.
func FuzzTermSafe(f *testing.F) {
	f.Add("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\")
	f.Add("\xc2\x9b31m\xc2\x9d0;title\x07")
	f.Fuzz(func(t *testing.T, s string) {
		out := termSafe(s)
		if !utf8.ValidString(out) {
			t.Fatalf("termSafe(%q) = %q: not UTF-8", s, out)
		}
		for _, r := range out {
			if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r < 0xa0 {
				t.Fatalf("termSafe(%q) = %q: keeps %U", s, out, r)
			}
		}
		if !strings.ContainsAny(s, "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f\x7f") && utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return r >= 0x80 && r < 0xa0 }) && out != s {
			t.Fatalf("termSafe changed clean text %q to %q", s, out)
		}
	})
}

func TestUSD(t *testing.T) {
	for in, want := range map[float64]string{
		0: "$0", 1.5: "$1.50", 0.123: "$0.12", 0.0421: "$0.0421", 0.05: "$0.05", 0.0015: "$0.0015",
		0.00846: "$0.0085", 0.000012: "$0.000012", 0.001: "$0.001", 12.3456: "$12.35",
	} {
		if got := usd(in); got != want {
			t.Errorf("usd(%v) = %s, want %s", in, got, want)
		}
	}
}
