package main

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/rogpeppe/go-internal/testscript"
)

// termclean [-sgr] FILE: FILE (stdout, stderr, or a file) holds no byte a terminal acts on: no
// ESC or other C0 control but tab and newline, no DEL, no C1 control (raw or UTF-8 encoded),
// and is not empty (a command that printed nothing proves nothing). With -sgr, the colours agt
// itself writes (ESC [ digits m) are let through, and nothing else.
func cmdTermClean(ts *testscript.TestScript, neg bool, args []string) {
	noNegation(ts, neg, "termclean")
	sgr := len(args) == 2 && args[0] == "-sgr"
	if sgr {
		args = args[1:]
	}
	if len(args) != 1 {
		ts.Fatalf("usage: termclean [-sgr] FILE")
	}
	s := ts.ReadFile(args[0])
	if s == "" {
		ts.Fatalf("termclean %s: empty", args[0])
	}
	for i := 0; i < len(s); {
		if sgr && strings.HasPrefix(s[i:], "\x1b[") {
			j := i + 2
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == ';') {
				j++
			}
			if j < len(s) && s[j] == 'm' {
				i = j + 1
				continue
			}
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		bad := ""
		switch {
		case r == utf8.RuneError && size == 1:
			bad = fmt.Sprintf("byte %#x, not UTF-8", s[i])
		case r < 0x20 && r != '\n' && r != '\t', r >= 0x7f && r <= 0x9f:
			bad = fmt.Sprintf("control %U", r)
		}
		if bad != "" {
			ts.Fatalf("termclean %s: %s at %d, in %q", args[0], bad, i, s[max(0, i-40):min(len(s), i+40)])
		}
		i += size
	}
}
