package stream

import (
	"bytes"
	"regexp"
	"strings"
)

// TermText turns what a program writes to its terminal into plain lines: escape sequences
// (CSI, OSC, DCS and the short ones) and control characters are dropped, a carriage return
// not followed by a newline lets the next text overwrite the line (a spinner keeps its last
// frame), and a cursor move to another row ends the line, so a full-screen program's redraws
// still come out as lines. It keeps the last Rows lines for Screen, in bounded memory: a line
// longer than Max bytes is cut and flagged.
type TermText struct {
	Max  int // the longest line kept whole; 0 means 4096
	Rows int // the lines Screen keeps; 0 means 24

	st     termState
	line   []byte
	cut    int  // bytes of the current line dropped past Max
	cr     bool // a carriage return came: the next text starts the line again
	screen []string
}

type termState uint8

const (
	tGround    termState = iota
	tEsc                 // after ESC
	tEscInter            // ESC and intermediates, until a final byte
	tCSI                 // ESC [ … final
	tString              // OSC, DCS, SOS, PM, APC: until BEL or ST
	tStringEsc           // ESC inside a string: ST when a backslash follows
)

// Write feeds a chunk of terminal output, calling line for every line it completes (without
// trailing blanks; lines of blanks only are skipped). n is the line's length before it was cut.
// The slice passed to line is reused after the call.
func (t *TermText) Write(p []byte, line func(text []byte, truncated bool, n int)) {
	for _, c := range p {
		switch t.st {
		case tGround:
			t.ground(c, line)
		case tEsc:
			switch {
			case c == '[':
				t.st = tCSI
			case c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_':
				t.st = tString
			case c >= 0x20 && c <= 0x2f:
				t.st = tEscInter
			default:
				t.st = tGround // a two-byte sequence: ESC 7, ESC =, ESC M…
			}
		case tEscInter:
			if c >= 0x30 && c <= 0x7e {
				t.st = tGround
			}
		case tCSI:
			if c >= 0x40 && c <= 0x7e {
				t.st = tGround
				switch c {
				case 'H', 'f', 'd', 'E', 'F', 'J':
					t.end(line) // another row: what was written on this one is a line
				case 'C':
					t.text(' ') // cursor forward: TUIs write spaces so
				}
			} else if c < 0x20 && c != 0x1b {
				t.ground(c, line) // controls inside a sequence act as usual
			} else if c == 0x1b {
				t.st = tEsc
			}
		case tString:
			switch c {
			case 0x07:
				t.st = tGround
			case 0x1b:
				t.st = tStringEsc
			}
		case tStringEsc:
			if c == '\\' {
				t.st = tGround
			} else {
				t.st = tString
			}
		}
	}
}

func (t *TermText) ground(c byte, line func([]byte, bool, int)) {
	switch {
	case c == 0x1b:
		t.st = tEsc
	case c == '\n':
		t.cr = false
		t.end(line)
	case c == '\r':
		t.cr = true
	case c == '\b':
		if n := len(t.line); n > 0 {
			t.line = t.line[:n-1]
		}
	case c == '\t' || c >= 0x20 && c != 0x7f:
		t.text(c)
	}
}

func (t *TermText) text(c byte) {
	if t.cr {
		t.cr = false
		t.line, t.cut = t.line[:0], 0
	}
	max := t.Max
	if max <= 0 {
		max = 4096
	}
	if len(t.line) >= max {
		t.cut++
		return
	}
	t.line = append(t.line, c)
}

// end completes the current line.
func (t *TermText) end(line func([]byte, bool, int)) {
	text := bytes.TrimRight(t.line, " \t")
	n, cut := len(t.line)+t.cut, t.cut > 0
	if len(text) > 0 {
		t.keep(string(text))
		if line != nil {
			line(text, cut, n)
		}
	}
	t.line, t.cut = t.line[:0], 0
}

func (t *TermText) keep(s string) {
	rows := t.Rows
	if rows <= 0 {
		rows = 24
	}
	if len(t.screen) >= rows {
		copy(t.screen, t.screen[1:])
		t.screen = t.screen[:rows-1]
	}
	t.screen = append(t.screen, s)
}

// Partial returns the line written so far and not yet ended (a prompt waiting on its line),
// without trailing blanks; nil when there is none. The slice is reused by the next Write.
func (t *TermText) Partial() []byte { return bytes.TrimRight(t.line, " \t") }

// EndPartial ends the line written so far, as a newline would: a prompt that has waited long
// enough is a line of its own.
func (t *TermText) EndPartial(line func([]byte, bool, int)) { t.end(line) }

// Screen returns the last lines, the one being written included, joined by newlines: what a
// prompt-for-input pattern is matched against.
func (t *TermText) Screen() string {
	s := strings.Join(t.screen, "\n")
	if p := t.Partial(); len(p) > 0 {
		if s != "" {
			s += "\n"
		}
		s += string(p)
	}
	return s
}

// Prompt is a screen a terminal agent shows when it waits for a person: the reason it waits
// (input, permission) and the pattern that tells the screen.
type Prompt struct {
	Reason string
	Re     *regexp.Regexp
}

// Quiet is the reason a terminal agent waits that has been silent for IdleAfter showing screen:
// the first of m.Prompts that matches it, else quiet.
func (m Machine) Quiet(screen string) string {
	for _, p := range m.Prompts {
		if p.Re != nil && p.Re.MatchString(screen) {
			return p.Reason
		}
	}
	return ReasonQuiet
}
