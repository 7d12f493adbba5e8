// Package termsafe makes text that an agent controls safe to show on a terminal. An agent's
// words, tool names, errors and the files of its record may hold bytes that a terminal acts on
// instead of showing: ESC and the escape sequences it starts (OSC 52 writes the clipboard, OSC
// 8 makes links, CSI 2J clears the screen, CSI 6n makes the terminal type back, DCS, window
// titles), the other C0 controls (a carriage return that overwrites a line), DEL, and the C1
// controls, as raw bytes or UTF-8 encoded (U+009B is CSI to many terminals).
//
// Invariants: what Text, Line and JSON return holds none of those bytes (tab and newline only
// where they say), every one of them is shown escaped, never dropped silently, and text
// without them is returned as it is.
package termsafe

import (
	"strconv"
	"unicode/utf8"
)

// Unsafe reports whether a terminal may act on r: a C0 control but tab and newline, DEL, or a
// C1 control.
func Unsafe(r rune) bool {
	return (r < 0x20 && r != '\t' && r != '\n') || (r >= 0x7f && r <= 0x9f)
}

// Text is s with every control but tab and newline shown escaped: ESC as \x1b, a carriage
// return as \r, C1 controls as \u009b, bytes that are not UTF-8 as \xff. For prose that keeps
// its lines.
func Text(s string) string { return escape(s, false) }

// Line is Text with tab and newline escaped too: one line, for a table's cell.
func Line(s string) string { return escape(s, true) }

func escape(s string, oneLine bool) string {
	i := firstUnsafe(s, oneLine)
	if i < 0 {
		return s
	}
	b := make([]byte, 0, len(s)+16)
	b = append(b, s[:i]...)
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, `\x`...)
			b = appendHex(b, s[i])
		case r == '\r':
			b = append(b, `\r`...)
		case r == '\t' && oneLine:
			b = append(b, `\t`...)
		case r == '\n' && oneLine:
			b = append(b, `\n`...)
		case r < 0x80 && Unsafe(r):
			b = append(b, `\x`...)
			b = appendHex(b, byte(r))
		case Unsafe(r):
			b = append(b, `\u00`...)
			b = appendHex(b, byte(r))
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return string(b)
}

// firstUnsafe returns the index of the first byte of s that Text (or Line) escapes, -1 for none.
func firstUnsafe(s string, oneLine bool) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if Unsafe(rune(c)) || (oneLine && (c == '\t' || c == '\n')) {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || Unsafe(r) {
			return i
		}
		i += size
	}
	return -1
}

// JSON is a JSON text with every raw byte a terminal may act on escaped: C1 controls and DEL
// (which JSON allows raw in strings) as \u009b, other controls (which it allows in no string,
// and a carriage return only as space between values) the same, bytes that are not UTF-8 as
// \ufffd. The value it encodes is unchanged where it was valid.
func JSON(b []byte) []byte {
	// firstUnsafe's scan over bytes: a string(b) for it would copy every line printed.
	i := 0
	for i < len(b) {
		c := b[i]
		if c < utf8.RuneSelf {
			if Unsafe(rune(c)) {
				break
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if (r == utf8.RuneError && size == 1) || Unsafe(r) {
			break
		}
		i += size
	}
	if i == len(b) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	out = append(out, b[:i]...)
	for i < len(b) {
		r, size := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			out = append(out, `\ufffd`...)
		case r == '\t' || r == '\n':
			out = append(out, byte(r)) // whitespace between JSON values
		case Unsafe(r):
			out = append(out, `\u00`...)
			out = appendHex(out, byte(r))
		default:
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return out
}

func appendHex(b []byte, c byte) []byte {
	if c < 0x10 {
		b = append(b, '0')
	}
	return strconv.AppendUint(b, uint64(c), 16)
}
