package stream

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/tidwall/gjson"
)

// LineMax bounds what one line shows of a tool's input or result.
const LineMax = 100

// FirstLine is the first line of s, tabs made spaces, cut to LineMax characters (with … when
// cut, or when more lines followed).
func FirstLine(s string) string {
	s, _, cut := strings.Cut(strings.TrimSpace(s), "\n")
	s = strings.TrimSpace(strings.ReplaceAll(s, "\t", "  "))
	if r := []rune(s); len(r) > LineMax {
		return string(r[:LineMax-1]) + "…"
	} else if cut {
		return s + " …"
	}
	return s
}

// InputLine is one line of a tool's input for people: the command, path, pattern or the like
// it names, else its JSON; "" for none.
func InputLine(input json.RawMessage) string {
	in := gjson.ParseBytes(input)
	var s string
	for _, key := range []string{"command", "cmd", "file_path", "path", "pattern", "url", "query", "description", "prompt"} {
		if v := in.Get(key); v.Exists() {
			if v.IsArray() { // Codex: ["bash", "-lc", "go test ./..."]
				var parts []string
				for _, p := range v.Array() {
					parts = append(parts, p.String())
				}
				s = strings.Join(parts, " ")
			} else {
				s = v.String()
			}
			break
		}
	}
	trimmed := bytes.TrimSpace(input)
	if s == "" && len(trimmed) > 0 && string(trimmed) != "{}" && string(trimmed) != "null" {
		var b bytes.Buffer
		if json.Compact(&b, input) == nil {
			s = b.String()
		}
	}
	return FirstLine(s)
}
