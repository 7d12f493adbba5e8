package commands

import (
	"bytes"
	"fmt"
	"strings"
)

// keyNames are the keys agt send --keys writes as <Name> (names are case-insensitive), with the
// bytes an xterm sends for them. <C-x> is Ctrl with a letter (or @ [ \ ] ^ _), <lt> a literal <.
var keyNames = []struct{ name, bytes string }{
	{"Enter", "\r"}, {"CR", "\r"}, {"Esc", "\x1b"}, {"Tab", "\t"}, {"BS", "\x7f"}, {"Space", " "},
	{"Up", "\x1b[A"}, {"Down", "\x1b[B"}, {"Right", "\x1b[C"}, {"Left", "\x1b[D"},
	{"Home", "\x1b[H"}, {"End", "\x1b[F"}, {"PgUp", "\x1b[5~"}, {"PgDn", "\x1b[6~"}, {"Del", "\x1b[3~"},
	{"lt", "<"},
}

// keysSyntax is the help on the syntax of send --keys, for its errors.
const keysSyntax = "keys are written <Enter> <Esc> <Tab> <BS> <Space> <Up> <Down> <Left> <Right> <Home> <End> <PgUp> <PgDn> <Del>, <C-x> for Ctrl-X, <lt> for a literal <"

// parseKeys turns the text of send --keys into the bytes a terminal sends: text as it is, and
// every <Name> as its key. A < that begins no known key is an error, so a typo never reaches
// the program as text.
func parseKeys(text string) ([]byte, error) {
	var out []byte
	for i := 0; i < len(text); {
		c := text[i]
		if c != '<' {
			out = append(out, c)
			i++
			continue
		}
		end := strings.IndexByte(text[i:], '>')
		if end < 0 {
			return nil, fmt.Errorf("bad key at byte %d of %q: a < with no >; %s", i+1, text, keysSyntax)
		}
		name := text[i+1 : i+end]
		b, ok := keyBytes(name)
		if !ok {
			return nil, fmt.Errorf("bad key <%s> at byte %d of %q; %s", name, i+1, text, keysSyntax)
		}
		out = append(out, b...)
		i += end + 1
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no keys to send; %s", keysSyntax)
	}
	return out, nil
}

func keyBytes(name string) ([]byte, bool) {
	for _, k := range keyNames {
		if strings.EqualFold(k.name, name) {
			return []byte(k.bytes), true
		}
	}
	if x, ok := strings.CutPrefix(strings.ToLower(name), "c-"); ok && len(x) == 1 {
		switch c := x[0]; {
		case c >= 'a' && c <= 'z':
			return []byte{c - 'a' + 1}, true
		case c == '@' || c == '[' || c == '\\' || c == ']' || c == '^' || c == '_':
			return []byte{c - '@'}, true
		}
	}
	return nil, false
}

// detacher finds the detach keys in what the user types, across reads: bytes that may begin
// them are held back until it is known whether they do.
type detacher struct {
	keys    []byte
	matched int // bytes of keys seen at the end of the input so far
}

// feed takes a chunk of input and returns what to forward to the program, and whether the
// detach keys came (then what followed them is dropped).
func (d *detacher) feed(p []byte) (forward []byte, detach bool) {
	for _, c := range p {
		// What was held back and this byte: the longest end of it that may begin the keys
		// stays held, what comes before goes.
		pending := append(d.keys[:d.matched:d.matched], c)
		d.matched = 0
		for len(pending) > 0 {
			if bytes.HasPrefix(d.keys, pending) {
				if len(pending) == len(d.keys) {
					return forward, true
				}
				d.matched = len(pending)
				break
			}
			forward = append(forward, pending[0])
			pending = pending[1:]
		}
	}
	return forward, false
}
