package termsafe

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// escapes is every class of byte a terminal acts on, as an agent would send it.
var escapes = map[string]string{
	"OSC 52 clipboard": "\x1b]52;c;cm0gLXJmIH4K\x07",
	"OSC 8 link":       "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\",
	"title":            "\x1b]0;pwned\x07",
	"CSI 2J":           "\x1b[2J\x1b[H",
	"CSI 6n":           "\x1b[6n",
	"DCS":              "\x1bP+q544e\x1b\\",
	"C1 CSI":           "\u009b31m",
	"C1 OSC":           "\u009d0;title\u009c",
	"raw C1 byte":      "\x9b2J",
	"carriage return":  "fine\rforged",
	"backspace, bell":  "ab\b\x07",
	"DEL":              "x\x7f",
	"NUL":              "a\x00b",
}

func TestTextEscapesEveryClass(t *testing.T) {
	for name, s := range escapes {
		got := Text("before " + s + " after")
		if i := firstUnsafe(got, false); i >= 0 {
			t.Errorf("%s: %q keeps an unsafe byte at %d", name, got, i)
		}
		if !strings.HasPrefix(got, "before ") || !strings.HasSuffix(got, " after") {
			t.Errorf("%s: %q lost the text around it", name, got)
		}
	}
	for in, want := range map[string]string{
		"\x1b[2J":      `\x1b[2J`,
		"a\rb":         `a\rb`,
		"\u009b":       `\u009b`,
		"\x9b":         `\x9b`,
		"tab\tand\nnl": "tab\tand\nnl",
		"ünïcode ✓ 日本": "ünïcode ✓ 日本",
	} {
		if got := Text(in); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Line("a\tb\nc"); got != `a\tb\nc` {
		t.Errorf("Line = %q", got)
	}
}

func TestJSONKeepsTheValue(t *testing.T) {
	in := []byte("{\"text\":\"\u009b31m\x7f\",\"n\":1}")
	out := JSON(in)
	if strings.ContainsAny(string(out), "\u009b\x7f") {
		t.Fatalf("JSON kept a control: %q", out)
	}
	var a, b map[string]any
	if err := json.Unmarshal(in, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, &b); err != nil {
		t.Fatalf("JSON made %q, which does not parse: %v", out, err)
	}
	if a["text"] != b["text"] {
		t.Errorf("value changed: %q, want %q", b["text"], a["text"])
	}
	if got := JSON([]byte(`{"a":"\u001b"}`)); string(got) != `{"a":"\u001b"}` {
		t.Errorf("escaped JSON changed: %s", got)
	}
}

func FuzzText(f *testing.F) {
	for _, s := range escapes {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, got := range []string{Text(s), Line(s), string(JSON([]byte(s)))} {
			for i := 0; i < len(got); {
				r, size := utf8.DecodeRuneInString(got[i:])
				if (r == utf8.RuneError && size == 1) || Unsafe(r) {
					t.Fatalf("%q: output %q holds %q at %d", s, got, got[i:i+size], i)
				}
				i += size
			}
		}
		if firstUnsafe(s, false) < 0 && Text(s) != s {
			t.Fatalf("%q changed without cause: %q", s, Text(s))
		}
	})
}

// BenchmarkText: every line a transcript or table shows passes through Text; most hold nothing
// to escape.
func BenchmarkText(b *testing.B) {
	clean := strings.Repeat("an ordinary line of an agent's output, ünïcode too ✓ ", 4)
	dirty := clean + "\x1b[31mred\x1b[0m"
	for _, c := range []struct{ name, s string }{{"clean", clean}, {"escaped", dirty}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.s)))
			for b.Loop() {
				Text(c.s)
			}
		})
	}
	line := []byte(`{"v":1,"ts":"2026-01-01T00:00:00Z","agent":"a","seq":1,"type":"output","line":"` + clean + `"}`)
	b.Run("json", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		for b.Loop() {
			JSON(line)
		}
	})
}
