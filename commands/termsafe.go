package commands

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// termSafe makes text an agent controls safe to print on a terminal (R35): every C0 control
// but newline and tab, DEL, every C1 control and every byte that is not UTF-8 is shown escaped
// (\x1b, \u009b, \xff), so that no escape sequence reaches the terminal to be interpreted.
//
// It stands in for the one function of the trust work that all printing commands will share;
// it has the same shape (a string in, a string to print out) so that swapping it is one line.
func termSafe(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\n' && c != '\t' || c == 0x7f || c >= 0x80 {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x20 && r != '\n' && r != '\t', r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && r < 0xa0:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// safeLine is termSafe on one line cut to n runes: for columns that hold an agent's words.
func safeLine(s string, n int) string { return oneLine(termSafe(s), n) }
