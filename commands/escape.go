package commands

import (
	"io"
	"unicode/utf8"

	"agt/termsafe"
)

// terminalSafe passes what is written to it on to w through termsafe.Text. A character split
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
	if _, err := io.WriteString(t.w, termsafe.Text(string(data[:end]))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes a last incomplete character, escaped.
func (t *terminalSafe) Flush() error {
	if len(t.rest) == 0 {
		return nil
	}
	_, err := io.WriteString(t.w, termsafe.Text(string(t.rest)))
	t.rest = nil
	return err
}
