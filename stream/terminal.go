package stream

import (
	"bytes"
	"regexp"
	"strings"
	"unicode/utf8"
)

// TermText turns what a program writes to its terminal into plain lines. It follows one line
// with a cursor: text overwrites at the cursor, a carriage return and the column moves (CHA,
// CUF, CUB) move it, an erase to the end of the line (EL) cuts; a move to another row ends the
// line, so a full-screen program's redraws still come out as lines. Other escape sequences (CSI,
// OSC, DCS and the short ones, in their 7-bit and UTF-8 C1 forms) and control characters are
// dropped. It keeps the last Rows lines
// for Screen, in bounded memory: a line longer than Max characters is cut and flagged.
type TermText struct {
	Max  int // the longest line kept whole, in characters; 0 means 4096
	Rows int // the lines Screen keeps; 0 means 24

	rd     termReader
	line   []rune
	col    int // the cursor, in characters
	cut    int // characters of the current line dropped past Max
	screen []string
	out    []byte

	changed     bool   // a line was completed since Changed was last called
	lastPartial string // the partial line when Changed was last called
}

// Write feeds a chunk of terminal output, calling line for every line it completes (without
// trailing blanks; lines of blanks only are skipped). n is the line's length in bytes before it
// was cut. The slice passed to line is reused after the call.
func (t *TermText) Write(p []byte, line func(text []byte, truncated bool, n int)) {
	for _, c := range p {
		switch act, r := t.rd.step(c); act {
		case actControl:
			t.control(c, line)
		case actRune:
			t.put(r)
		case actCSI:
			t.csi(c, line)
		}
	}
}

// csi carries out the sequences that matter to the text of a line.
func (t *TermText) csi(final byte, line func([]byte, bool, int)) {
	var num [2]int // the first two parameters
	i := 0
	for _, c := range t.rd.params {
		switch {
		case c == ';' && i == 0:
			i++
		case c >= '0' && c <= '9':
			num[i] = min(num[i]*10+int(c-'0'), 1<<16)
		}
	}
	n := num[0]
	switch final {
	case 'H', 'f':
		t.endMoved(line) // another row: what is on this one is a line
		t.col = max(num[1], 1) - 1
	case 'A', 'B', 'E', 'F', 'd', 'J':
		t.endMoved(line)
	case 'G', '`': // to column n
		t.col = max(n, 1) - 1
	case 'C': // forward
		t.col += max(n, 1)
	case 'D': // back
		t.col = max(t.col-max(n, 1), 0)
	case 'K': // erase: to the end of the line (0), the whole line (2)
		switch n {
		case 0:
			if t.col < len(t.line) {
				t.line = t.line[:t.col]
			}
		case 2:
			t.line = t.line[:0]
		}
	}
}

// control acts on a control character: the line ends at a newline, the cursor moves.
func (t *TermText) control(c byte, line func([]byte, bool, int)) {
	switch c {
	case '\n':
		t.end(line)
		t.col = 0 // as the terminal's ONLCR has it, and text does
	case '\r':
		t.col = 0
	case '\b':
		t.col = max(t.col-1, 0)
	case '\t':
		t.col = (t.col/8 + 1) * 8
	}
}

// put writes r at the cursor.
func (t *TermText) put(r rune) {
	max := t.Max
	if max <= 0 {
		max = 4096
	}
	if t.col >= max {
		t.cut++
		return
	}
	for len(t.line) < t.col {
		t.line = append(t.line, ' ')
	}
	if t.col < len(t.line) {
		t.line[t.col] = r
	} else {
		t.line = append(t.line, r)
	}
	t.col++
}

// text is the current line without trailing blanks.
func (t *TermText) text() []byte {
	t.out = t.out[:0]
	for _, r := range t.line {
		t.out = utf8.AppendRune(t.out, r)
	}
	return bytes.TrimRight(t.out, " \t")
}

// end completes the current line; the next starts empty, the cursor where it was.
func (t *TermText) end(line func([]byte, bool, int)) { t.endLine(line, false) }

// endMoved completes the current line as the cursor leaves its row. A line that a full-screen
// program redraws as it was (a blinking cursor, a box drawn again) is still on the screen kept:
// it is no new line, and no sign of work.
func (t *TermText) endMoved(line func([]byte, bool, int)) { t.endLine(line, true) }

func (t *TermText) endLine(line func([]byte, bool, int), moved bool) {
	text := t.text()
	n, cut := len(t.out)+t.cut, t.cut > 0
	if len(text) > 0 && !(moved && t.onScreen(text)) {
		t.keep(string(text))
		t.changed = true
		if line != nil {
			line(text, cut, n)
		}
	}
	t.line, t.cut = t.line[:0], 0
}

// onScreen reports whether text is one of the lines kept.
func (t *TermText) onScreen(text []byte) bool {
	for _, l := range t.screen {
		if l == string(text) {
			return true
		}
	}
	return false
}

// Changed reports whether what the program shows changed since the last call: a line completed,
// or the line being written is another. Redraws of what is on the screen already change nothing:
// a terminal agent that only redraws is quiet.
func (t *TermText) Changed() bool {
	p := t.Partial()
	ch := t.changed || string(p) != t.lastPartial
	if string(p) != t.lastPartial {
		t.lastPartial = string(p)
	}
	t.changed = false
	return ch
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
// without trailing blanks; empty when there is none. The slice is reused by the next call.
func (t *TermText) Partial() []byte { return t.text() }

// EndPartial ends the line written so far, as a newline would: a prompt that has waited long
// enough is a line of its own.
func (t *TermText) EndPartial(line func([]byte, bool, int)) {
	t.end(line)
	t.col = 0
}

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

// Prompt is a screen a terminal agent shows when it falls quiet: the reason it waits for a
// person (input, permission), or, Working, that it works though nothing on its screen moves
// but a blinking spinner (Claude's "esc to interrupt"); and the pattern that tells the screen.
type Prompt struct {
	Reason  string
	Working bool
	Re      *regexp.Regexp
}

// Quiet is what the screen of a terminal agent that has been silent for IdleAfter says: the
// first of m.Prompts that matches it, else waiting for no reason it can tell (quiet).
func (m Machine) Quiet(screen string) Prompt {
	for _, p := range m.Prompts {
		if p.Re != nil && p.Re.MatchString(screen) {
			return p
		}
	}
	return Prompt{Reason: ReasonQuiet}
}

// Judge is the state of a terminal agent that fell quiet (quiet: Tick's waiting, quiet) while
// it was in prev, showing screen: waiting, for the reason the screen gives; or, when the screen
// says it works, prev as it was, busy: it falls quiet no more, and stalls at StallAfter after
// its screen last said something new.
func (m Machine) Judge(prev, quiet Snapshot, screen string) Snapshot {
	p := m.Quiet(screen)
	if p.Working {
		prev.Busy = true
		return prev
	}
	quiet.Reason = p.Reason
	return quiet
}
