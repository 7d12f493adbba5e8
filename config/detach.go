package config

import (
	"fmt"
	"strings"
)

// DefaultDetachKeys detach agt attach: Ctrl-\, which a shell or a TUI rarely needs.
const DefaultDetachKeys = `ctrl-\`

// ParseDetachKeys reads a detach sequence as docker writes it: keys separated by commas, each a
// single character or ctrl-X for X in a-z, @, [, \, ], ^ or _ ("ctrl-\", "ctrl-p,ctrl-q"). It
// returns the bytes the terminal sends for them.
func ParseDetachKeys(spec string) ([]byte, error) {
	if spec == "" {
		return nil, fmt.Errorf("no detach keys; want keys such as %q or \"ctrl-p,ctrl-q\"", DefaultDetachKeys)
	}
	var out []byte
	for _, k := range strings.Split(spec, ",") {
		if x, ok := strings.CutPrefix(k, "ctrl-"); ok && len(x) == 1 {
			c := x[0]
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			switch {
			case c >= 'a' && c <= 'z':
				out = append(out, c-'a'+1)
				continue
			case c == '@' || c == '[' || c == '\\' || c == ']' || c == '^' || c == '_':
				out = append(out, c-'@')
				continue
			}
		} else if len(k) == 1 && k[0] >= 0x20 && k[0] < 0x7f {
			out = append(out, k[0])
			continue
		}
		return nil, fmt.Errorf("bad detach key %q in %q; want a character or ctrl-X (X: a-z, @, [, \\, ], ^, _), comma-separated", k, spec)
	}
	return out, nil
}
