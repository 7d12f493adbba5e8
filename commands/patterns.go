package commands

import (
	"fmt"
	"path"
	"strings"

	"agt/state"
)

// isPattern reports whether a NAME argument is a pattern (fix-*, fix-[12]): agent names hold
// none of *, ? and [.
func isPattern(name string) bool {
	return strings.ContainsAny(name, "*?[")
}

// expandPatterns replaces each pattern among names with the names of the agents it matches,
// in order; a pattern that matches none is an error, as an unknown name is. Names that are no
// pattern stay as they are.
func expandPatterns(d *state.Dir, names []string) ([]string, error) {
	var all []*state.Agent
	out := make([]string, 0, len(names))
	seen := map[string]bool{}
	for _, n := range names {
		if !isPattern(n) {
			if !seen[n] {
				out = append(out, n)
			}
			seen[n] = true
			continue
		}
		if _, err := path.Match(n, ""); err != nil {
			return nil, fmt.Errorf("bad pattern %q: %v", n, err)
		}
		if all == nil {
			var err error
			if all, err = d.Agents(); err != nil {
				return nil, err
			}
		}
		matched := false
		for _, a := range all {
			if ok, _ := path.Match(n, a.Name); ok {
				matched = true
				if !seen[a.Name] {
					out = append(out, a.Name)
				}
				seen[a.Name] = true
			}
		}
		if !matched {
			return nil, withHint(fmt.Errorf("no agent matches %q", n), "run 'agt ps' to list agents")
		}
	}
	return out, nil
}
