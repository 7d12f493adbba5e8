package stream

import (
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestTermText(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string // the lines, then "partial:" and what is left on the line
	}{
		{"plain lines", "hello\r\nworld\r\n", []string{"hello", "world"}},
		{"colours go", "\x1b[1;31mred\x1b[0m text\n", []string{"red text"}},
		{"a title (OSC) goes, BEL or ST", "\x1b]0;title\x07a\x1b]2;t\x1b\\b\n", []string{"ab"}},
		{"a DCS string goes", "\x1bPq#0;2;0;0;0\x1b\\x\n", []string{"x"}},
		{"short escapes go", "\x1b7\x1b=\x1b(Bsaved\x1b8\n", []string{"saved"}},
		{"a spinner keeps its last frame", "\r| work\r/ work\r- done\n", []string{"- done"}},
		{"backspace moves back", "ab\bc\n", []string{"ac"}},
		{"text overwrites at the cursor", "hello world\rHELLO\n", []string{"HELLO world"}},
		{"erase to the end of the line", "hello world\r\x1b[6C\x1b[K\n", []string{"hello"}},
		{"columns by CHA, as Claude writes spaces", "\x1b[3G?\x1b[5Gfor\x1b[9Gshortcuts\r\n", []string{"  ? for shortcuts"}},
		{"a carriage return then a move down keeps the line", "● turn 2\x1b[K\r\x1b[102C\x1b[1B\x1b[K\r\r\n", []string{"● turn 2"}},
		{"a move up ends the line, the column kept", "one\x1b[4Atwo\n", []string{"one", "   two"}},
		{"a move to a row and column", "top\x1b[5;3Hx\n", []string{"top", "  x"}},
		{"a cursor move ends a line", "\x1b[1;1Htop\x1b[2;1Hnext\x1b[3;1H", []string{"top", "next"}},
		{"cursor forward is a space", "a\x1b[1Cb\n", []string{"a b"}},
		{"blank lines are skipped", "\n   \n\x1b[2J\nx\n", []string{"x"}},
		{"a prompt waits on its line", "fake> ", []string{"partial:fake>"}},
		{"a sequence split across writes", "\x1b[3", []string{}},
		{"NUL and DEL go", "a\x00b\x7fc\n", []string{"abc"}},
		{"C1 CSI and OSC in UTF-8 go", "a\u009b31mb\u009d0;title\x07c\u0085\n", []string{"abc"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tx TermText
			got := []string{}
			emit := func(b []byte, _ bool, _ int) { got = append(got, string(b)) }
			// Byte by byte and whole: the result is the same.
			for i := 0; i < len(tt.in); i++ {
				tx.Write([]byte{tt.in[i]}, emit)
			}
			if p := tx.Partial(); len(p) > 0 {
				got = append(got, "partial:"+string(p))
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTermTextBounded(t *testing.T) {
	tx := TermText{Max: 10, Rows: 2}
	var lines []string
	var cut []bool
	tx.Write([]byte(strings.Repeat("x", 25)+"\n1\n2\n3\n"), func(b []byte, truncated bool, n int) {
		lines = append(lines, string(b))
		cut = append(cut, truncated)
		if truncated && n != 25 {
			t.Errorf("a cut line of 25 bytes says %d", n)
		}
	})
	if lines[0] != strings.Repeat("x", 10) || !cut[0] || cut[1] {
		t.Errorf("lines %q, cut %v", lines, cut)
	}
	if got := tx.Screen(); got != "2\n3" {
		t.Errorf("screen keeps %q, want the last 2 lines", got)
	}
}

func TestQuiet(t *testing.T) {
	m := Machine{Mode: Terminal, Prompts: []Prompt{
		{Reason: ReasonPermission, Re: regexp.MustCompile(`Allow \w+\?`)},
		{Working: true, Re: regexp.MustCompile(`esc to interrupt`)},
		{Reason: ReasonInput, Re: regexp.MustCompile(`(?m)^> $`)},
	}}
	for screen, want := range map[string]string{
		"working…":                          ReasonQuiet,
		"Allow Bash?\n 1. Yes":              ReasonPermission,
		"done\n> ":                          ReasonInput,
		"Allow Bash? no: > \nnope ":         ReasonPermission, // the first match wins
		"✻ Hatching…\n> \nesc to interrupt": "working",
	} {
		got := m.Quiet(screen)
		if got.Working {
			got.Reason = "working"
		}
		if got.Reason != want {
			t.Errorf("Quiet(%q) = %s, want %s", screen, got.Reason, want)
		}
	}
	if got := (Machine{Mode: Terminal}).Quiet("> "); got.Reason != ReasonQuiet {
		t.Errorf("without prompts: %s", got.Reason)
	}
	// Judged working, a quiet agent stays as it was, busy: it stalls, and falls quiet no more.
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m.IdleAfter, m.StallAfter = 5*time.Second, time.Minute
	prev := Snapshot{State: Running, Since: t0, Activity: t0, Progress: t0}
	quiet := m.Tick(prev, t0.Add(5*time.Second))
	got := m.Judge(prev, quiet, "✻ Hatching…\nesc to interrupt")
	if got.State != Running || !got.Busy || !got.Since.Equal(t0) {
		t.Fatalf("judged working: %+v", got)
	}
	if due := m.Due(got); !due.Equal(t0.Add(time.Minute)) {
		t.Errorf("a busy agent is due at %v, want its stall", due)
	}
	if got := m.Screen(got, t0.Add(10*time.Second), true); got.Busy {
		t.Errorf("new words left it busy: %+v", got)
	}
	if got := m.Judge(prev, quiet, "done\n> "); got.State != Waiting || got.Reason != ReasonInput {
		t.Errorf("judged waiting: %+v", got)
	}
}

// A full-screen program that redraws what it shows (Claude's permission box blinks a dot in
// place) writes no new line and changes nothing: the agent is quiet, and its box stays on the
// screen kept.
func TestTermTextRedrawIsNoChange(t *testing.T) {
	var tt TermText
	var lines []string
	add := func(b []byte, _ bool, _ int) { lines = append(lines, string(b)) }
	tt.Write([]byte("\x1b[30;1HDo you want to proceed?\x1b[31;1H❯ 1. Yes\x1b[34;2H"), add)
	if !tt.Changed() {
		t.Fatal("the first drawing changed nothing")
	}
	for i := 0; i < 50; i++ {
		dot := "●"
		if i%2 == 1 {
			dot = " "
		}
		tt.Write([]byte("\x1b[H\r\x1b[20B"+dot+"\x1b[40;1H\x1b[34;2H"), add)
		if ch := tt.Changed(); i > 0 && ch {
			t.Fatalf("redraw %d changed the screen; lines %q", i, lines)
		}
	}
	if want := []string{"Do you want to proceed?", "❯ 1. Yes", "●"}; strings.Join(lines, "|") != strings.Join(want, "|") {
		t.Errorf("lines %q, want %q", lines, want)
	}
	if !strings.Contains(tt.Screen(), "Do you want to proceed?") {
		t.Errorf("the box left the screen: %q", tt.Screen())
	}
	tt.Write([]byte("\x1b[35;1Hnew text\n"), add)
	if !tt.Changed() {
		t.Error("new text changed nothing")
	}
}

// FuzzTermText: whatever a program writes, the lines that come out hold no control (C0, DEL or
// C1, ESC included) and are valid UTF-8, and none is longer than Max characters.
func FuzzTermText(f *testing.F) {
	f.Add([]byte("a\x1b[31mred\x1b[0m\r\nb\u009b2Jc\u009d0;t\x07d\x1b]52;c;eA==\x1b\\e\tf\bg\x1b[3Gh\n"), 8)
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		tt := TermText{Max: 1 + (max%64+64)%64, Rows: 3}
		check := func(line []byte, _ bool, _ int) {
			if !utf8.Valid(line) {
				t.Fatalf("line %q is not valid UTF-8", line)
			}
			n := 0
			for _, r := range string(line) {
				n++
				if r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f {
					t.Fatalf("line %q holds the control %U", line, r)
				}
			}
			if n > tt.Max {
				t.Fatalf("line %q of %d characters, longer than %d", line, n, tt.Max)
			}
		}
		tt.Write(data, check)
		tt.EndPartial(check)
		tt.Screen()
	})
}
