package commands

import (
	"strings"
	"testing"
)

func TestEscapeText(t *testing.T) {
	for in, want := range map[string]string{
		"plain\ttext\n":           "plain\ttext\n",
		"\x1b]52;c;AAAA\x07":      `\x1b]52;c;AAAA\x07`,
		"csi \u009b2J and é":      `csi \u009b2J and é`,
		"bad \xff byte, del \x7f": `bad \xff byte, del \x7f`,
	} {
		if got := escapeText(in); got != want {
			t.Errorf("escapeText(%q) = %q, want %q", in, got, want)
		}
	}
}

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

func FuzzEscapeText(f *testing.F) {
	f.Add("\x1b[31mred\u009b\xff")
	f.Fuzz(func(t *testing.T, s string) {
		for _, c := range []byte(escapeText(s)) {
			if c < 0x20 && c != '\t' && c != '\n' || c == 0x7f || c == 0x1b {
				t.Fatalf("control byte %#x left in %q", c, escapeText(s))
			}
		}
		if strings.ContainsRune(escapeText(s), '\u009b') {
			t.Fatal("C1 CSI left")
		}
	})
}
