package commands

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// escapeText shows the bytes of s that a terminal would act on as escapes a person can read:
// C0 controls (tab and newline aside), DEL and C1 controls as \xHH or \u00HH, bytes that are
// no UTF-8 as \xHH. Everything else is left as it is.
func escapeText(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x20 && r != '\t' && r != '\n', r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && r < 0xa0:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// terminalSafe passes what is written to it on to w through escapeText. A character split
// across two writes waits for its end; Flush writes what is left.
type terminalSafe struct {
	w    io.Writer
	rest []byte
}

func (t *terminalSafe) Write(p []byte) (int, error) {
	data := append(t.rest, p...)
	end := len(data)
	// Hold back an incomplete UTF-8 sequence at the end, at most 3 bytes.
	for i := 1; i <= 3 && i <= len(data); i++ {
		if c := data[len(data)-i]; utf8.RuneStart(c) {
			if !utf8.FullRune(data[len(data)-i:]) {
				end = len(data) - i
			}
			break
		}
	}
	t.rest = append(t.rest[:0:0], data[end:]...)
	if _, err := io.WriteString(t.w, escapeText(string(data[:end]))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes a last incomplete character, escaped.
func (t *terminalSafe) Flush() error {
	if len(t.rest) == 0 {
		return nil
	}
	_, err := io.WriteString(t.w, escapeText(string(t.rest)))
	t.rest = nil
	return err
}
