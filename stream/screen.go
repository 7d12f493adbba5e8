package stream

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mattn/go-runewidth"
)

// Screen is what a terminal agent's screen shows, cell for cell: a small virtual terminal that
// the agent's output is written to, as the terminal of a person attached to it would be. A
// full-screen program (Claude's TUI) redraws only the cells that change, with cursor moves
// between them; only a whole screen says what it shows: the box that asks for a permission,
// the line that says it retries, the footer of a request under way.
//
// It keeps characters and where they are, nothing of their looks: the cursor moves and sets
// (CUP, CUU/CUD/CUF/CUB, CNL/CPL, CHA, VPA, saves and restores), erases (ED, EL, ECH), inserts
// and deletes of characters and lines, scrolling with a scroll region (DECSTBM, IND, RI, SU,
// SD), wide characters (two cells), automatic wrap and the alternate screen. Colours, modes,
// titles and every other sequence are read and dropped. Its size is bounded (maxScreen*), so
// its memory is, whatever is written to it; scrolling moves rows, not cells, so that a program
// that floods its terminal costs little more than reading its bytes.
//
// Work shows on a screen as a change of what it says: a spinner that turns, a clock that ticks
// (Claude: "✻ Thinking… (12s · esc to interrupt)", "retrying in 8s · attempt 6/10") change it
// without saying anything new. Mark masks them: two screens that differ only in those have the
// same Mark. It is not safe for concurrent use.
type Screen struct {
	cols, rows int
	lines      [][]rune // rows of cols cells; 0 is an empty cell, wideTail the second cell of a wide one
	alt        [][]rune // the main screen while the alternate one shows; nil otherwise
	x, y       int      // the cursor
	wrap       bool     // the cursor is past the last column: the next character goes on the next row
	top, bot   int      // the scroll region, rows top to bot
	saved      [2]int   // the saved cursor

	rd termReader
}

// wideTail marks the cell a wide character's second half takes.
const wideTail = -1

// The largest screen kept: a terminal larger than this is kept to its top left.
const (
	maxScreenCols = 1000
	maxScreenRows = 500
)

// NewScreen returns a blank screen of cols columns and rows rows.
func NewScreen(cols, rows int) *Screen {
	s := &Screen{}
	s.Resize(cols, rows)
	return s
}

// Resize gives the screen another size, as the program's terminal got: what fits stays, the
// cursor too.
func (s *Screen) Resize(cols, rows int) {
	cols, rows = min(max(cols, 1), maxScreenCols), min(max(rows, 1), maxScreenRows)
	lines := make([][]rune, rows)
	for y := range lines {
		lines[y] = make([]rune, cols)
		if y < len(s.lines) {
			copy(lines[y], s.lines[y])
		}
	}
	s.lines, s.cols, s.rows, s.alt = lines, cols, rows, nil
	s.x, s.y, s.wrap = min(s.x, cols-1), min(s.y, rows-1), false
	s.top, s.bot = 0, rows-1
}

// Write feeds the screen what the program wrote to its terminal.
func (s *Screen) Write(p []byte) {
	for _, c := range p {
		switch act, r := s.rd.step(c); act {
		case actControl:
			s.control(c)
		case actRune:
			s.put(r)
		case actCSI:
			s.csi(c)
		case actEsc:
			s.esc(c)
		}
	}
}

// control acts on a control character.
func (s *Screen) control(c byte) {
	switch c {
	case '\r':
		s.x, s.wrap = 0, false
	case '\n', '\v', '\f':
		s.linefeed()
	case '\b':
		s.x, s.wrap = max(s.x-1, 0), false
	case '\t':
		s.x = min((s.x/8+1)*8, s.cols-1)
	}
}

// esc acts on a two-byte sequence: ESC and c.
func (s *Screen) esc(c byte) {
	switch c {
	case '7':
		s.saved = [2]int{s.x, s.y}
	case '8':
		s.x, s.y, s.wrap = s.saved[0], s.saved[1], false
	case 'D':
		s.linefeed()
	case 'E':
		s.x = 0
		s.linefeed()
	case 'M':
		if s.y == s.top {
			s.scrollDown(1)
		} else {
			s.y = max(s.y-1, 0)
		}
	case 'c':
		s.clear(0, 0, s.rows-1, s.cols-1)
		s.x, s.y, s.top, s.bot = 0, 0, 0, s.rows-1
	}
}

// put writes r at the cursor, wrapping at the last column.
func (s *Screen) put(r rune) {
	w := runewidth.RuneWidth(r)
	if w == 0 {
		return // a combining mark: the cell keeps its character
	}
	if s.wrap || s.x+w > s.cols {
		s.x, s.wrap = 0, false
		s.linefeed()
	}
	line := s.lines[s.y]
	if line[s.x] == wideTail && s.x > 0 {
		line[s.x-1] = 0 // half of a wide character is none
	}
	line[s.x] = r
	if w == 2 && s.x+1 < s.cols {
		line[s.x+1] = wideTail
	}
	s.x += w
	if s.x >= s.cols {
		s.x, s.wrap = s.cols-1, true
	}
}

// linefeed moves the cursor down a row, scrolling the region at its bottom.
func (s *Screen) linefeed() {
	s.wrap = false
	if s.y == s.bot {
		s.scrollUp(1)
		return
	}
	s.y = min(s.y+1, s.rows-1)
}

// scrollUp scrolls the region up n rows: rows move, blank ones come in at its bottom.
func (s *Screen) scrollUp(n int) {
	region := s.lines[s.top : s.bot+1]
	n = min(n, len(region))
	gone := append([][]rune(nil), region[:n]...)
	copy(region, region[n:])
	for i, l := range gone {
		clear(l)
		region[len(region)-n+i] = l
	}
}

// scrollDown scrolls the region down n rows, blank ones coming in at its top.
func (s *Screen) scrollDown(n int) {
	region := s.lines[s.top : s.bot+1]
	n = min(n, len(region))
	gone := append([][]rune(nil), region[len(region)-n:]...)
	copy(region[n:], region)
	for i, l := range gone {
		clear(l)
		region[i] = l
	}
}

// clear blanks the cells from row y0 column x0 to row y1 column x1, in reading order.
func (s *Screen) clear(y0, x0, y1, x1 int) {
	for y := y0; y <= y1; y++ {
		from, to := 0, s.cols-1
		if y == y0 {
			from = x0
		}
		if y == y1 {
			to = x1
		}
		if from <= to {
			clear(s.lines[y][from : to+1])
		}
	}
}

// csi carries out a control sequence.
func (s *Screen) csi(final byte) {
	params := s.rd.params
	private := len(params) > 0 && (params[0] == '?' || params[0] == '>' || params[0] == '<' || params[0] == '=')
	var num [2]int // the first two parameters
	i := 0
	for _, c := range params {
		switch {
		case c == ';' && i == 0:
			i++
		case c >= '0' && c <= '9':
			num[i] = min(num[i]*10+int(c-'0'), 1<<16)
		}
	}
	n := max(num[0], 1) // a count: 0 or none is 1
	if private {
		if final == 'h' || final == 'l' {
			s.mode(num[0], final == 'h')
		}
		return
	}
	switch final {
	case 'A':
		s.moveTo(s.x, max(s.y-n, 0))
	case 'B':
		s.moveTo(s.x, min(s.y+n, s.rows-1))
	case 'C':
		s.moveTo(min(s.x+n, s.cols-1), s.y)
	case 'D':
		s.moveTo(max(s.x-n, 0), s.y)
	case 'E':
		s.moveTo(0, min(s.y+n, s.rows-1))
	case 'F':
		s.moveTo(0, max(s.y-n, 0))
	case 'G', '`':
		s.moveTo(min(n-1, s.cols-1), s.y)
	case 'd':
		s.moveTo(s.x, min(n-1, s.rows-1))
	case 'H', 'f':
		s.moveTo(min(max(num[1], 1)-1, s.cols-1), min(n-1, s.rows-1))
	case 'J':
		switch num[0] {
		case 0:
			s.clear(s.y, s.x, s.rows-1, s.cols-1)
		case 1:
			s.clear(0, 0, s.y, s.x)
		default:
			s.clear(0, 0, s.rows-1, s.cols-1)
		}
	case 'K':
		switch num[0] {
		case 0:
			s.clear(s.y, s.x, s.y, s.cols-1)
		case 1:
			s.clear(s.y, 0, s.y, s.x)
		default:
			s.clear(s.y, 0, s.y, s.cols-1)
		}
	case 'X':
		s.clear(s.y, s.x, s.y, min(s.x+n, s.cols)-1)
	case 'P':
		line := s.lines[s.y][s.x:]
		n = min(n, len(line))
		copy(line, line[n:])
		clear(line[len(line)-n:])
	case '@':
		line := s.lines[s.y][s.x:]
		n = min(n, len(line))
		copy(line[n:], line)
		clear(line[:n])
	case 'L', 'M':
		if s.y < s.top || s.y > s.bot {
			return
		}
		top := s.top
		s.top = s.y
		if final == 'L' {
			s.scrollDown(n)
		} else {
			s.scrollUp(n)
		}
		s.top = top
		s.x = 0
	case 'S':
		s.scrollUp(n)
	case 'T':
		s.scrollDown(n)
	case 'r':
		top, bot := max(num[0], 1)-1, num[1]-1
		if num[1] == 0 || bot >= s.rows {
			bot = s.rows - 1
		}
		if top < bot {
			s.top, s.bot = top, bot
			s.moveTo(0, 0)
		}
	case 's':
		s.saved = [2]int{s.x, s.y}
	case 'u':
		s.moveTo(s.saved[0], s.saved[1])
	}
}

// moveTo sets the cursor, within the screen.
func (s *Screen) moveTo(x, y int) {
	s.x, s.y, s.wrap = min(max(x, 0), s.cols-1), min(max(y, 0), s.rows-1), false
}

// mode sets or resets a private mode: of them only the alternate screen changes what shows.
func (s *Screen) mode(m int, set bool) {
	if m != 1049 && m != 1047 && m != 47 {
		return
	}
	switch {
	case set && s.alt == nil:
		s.alt = s.lines
		s.lines = make([][]rune, s.rows)
		for y := range s.lines {
			s.lines[y] = make([]rune, s.cols)
		}
		if m == 1049 {
			s.saved = [2]int{s.x, s.y}
		}
	case !set && s.alt != nil:
		s.lines, s.alt = s.alt, nil
		if m == 1049 {
			s.moveTo(s.saved[0], s.saved[1])
		}
	}
}

// Text is what the screen shows: its rows, without trailing blanks, joined by newlines, the
// blank rows at its end left out.
func (s *Screen) Text() string {
	var b []byte
	end := 0 // the length of b up to the last row that is not blank
	for y, line := range s.lines {
		if y > 0 {
			b = append(b, '\n')
		}
		row := len(b)
		for _, r := range line {
			switch r {
			case wideTail:
			case 0:
				b = append(b, ' ')
			default:
				b = utf8.AppendRune(b, r)
			}
		}
		for len(b) > row && b[len(b)-1] == ' ' {
			b = b[:len(b)-1]
		}
		if len(b) > row {
			end = len(b)
		}
	}
	return string(b[:end])
}

// Unblinked is a screen's text (Text) with every glyph a spinner draws or a dot blinks with
// (dingbat stars, braille dots, arcs, bullets) a blank: two screens that differ in those alone
// differ by a blink, which is no sign of life (Claude blinks a dot for ever beside a tool that
// waits for a permission). A clock that ticks is one.
func Unblinked(text string) string { return mask(text, false) }

// Mark is a screen's text (Text) with what turns, ticks and blinks by itself masked: as
// Unblinked, and every run of digits one 0 (a clock that grows a digit says nothing new). Two
// screens with the same Mark say the same.
func Mark(text string) string { return mask(text, true) }

func mask(text string, digits bool) string {
	out := make([]byte, 0, len(text))
	for i, line := range strings.Split(text, "\n") {
		if i > 0 {
			out = append(out, '\n')
		}
		row, inDigits := len(out), false
		for _, r := range line {
			switch {
			case digits && unicode.IsDigit(r):
				if !inDigits {
					out = append(out, '0')
				}
				inDigits = true
				continue
			case spinnerGlyph(r):
				out = append(out, ' ')
			default:
				out = utf8.AppendRune(out, r)
			}
			inDigits = false
		}
		for len(out) > row && out[len(out)-1] == ' ' {
			out = out[:len(out)-1] // a glyph that blinks off leaves its row as it was
		}
	}
	return string(out)
}

// spinnerGlyph reports whether r is drawn by the spinners of terminal agents, or blinks: Claude's
// stars (✢ ✳ ✶ ✻ ✽ · *) and the dot it blinks beside a tool that waits (●), braille dots
// (⠋⠙⠹…), quarter circles and arcs (◐◓◑◒ ◜◝◞◟), and the like.
func spinnerGlyph(r rune) bool {
	switch {
	case r == '·' || r == '*' || r == '•' || r == '●' || r == '○' || r == '⏺':
		return true
	case r >= 0x2720 && r <= 0x274B: // dingbat stars and asterisks
		return true
	case r >= 0x2800 && r <= 0x28FF: // braille
		return true
	case r >= 0x25D0 && r <= 0x25DF, r >= 0x25E2 && r <= 0x25E5: // circles and arcs
		return true
	case r >= 0x2596 && r <= 0x259F: // quadrant blocks
		return true
	}
	return false
}
