package commands

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// didYouMean is the one of known closest to what was typed, when it is close enough to be
// what was meant (an edit or two, or a prefix of it); "" otherwise.
func didYouMean(typed string, known []string) string {
	best, bestD := "", 3
	if len(typed) <= 3 {
		bestD = 2 // a short word is near everything
	}
	for _, k := range known {
		d := editDistance(typed, k)
		if strings.HasPrefix(k, typed) && len(typed) >= 2 {
			d = min(d, 1)
		}
		if d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// commandNames are the names and aliases of cmds that people type (not the hidden ones).
func commandNames(cmds []*cli.Command) []string {
	var out []string
	for _, c := range cmds {
		if !c.Hidden {
			out = append(out, c.Names()...)
		}
	}
	return out
}

// flagSpellings are the flags of the command c runs (the app's at the top), spelled as typed:
// --follow, -f.
func flagSpellings(c *cli.Context) []string {
	flags := c.App.Flags
	if c.Command != nil && c.Command.Name != "" && c.Command.Name != c.App.Name {
		flags = c.Command.Flags
	}
	var out []string
	for _, f := range flags {
		for _, n := range f.Names() {
			if len(n) == 1 {
				out = append(out, "-"+n)
			} else {
				out = append(out, "--"+n)
			}
		}
	}
	return append(out, "--help", "-h")
}
