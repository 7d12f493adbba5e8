package spawn

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"agt/state"
)

// Permissions returns the requests a's inbox holds, in no order. A file that is not a regular
// one of at most 1 MiB (a link, a FIFO) is skipped, never followed or waited on (state.ReadSmall).
func Permissions(a *state.Agent) []Permission {
	dir := a.Path(state.PermissionsDir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil // none asked
	}
	var out []Permission
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := state.ReadSmall(filepath.Join(dir, e.Name()))
		var p Permission
		if err == nil && json.Unmarshal(b, &p) == nil && p.ID != "" {
			out = append(out, p)
		}
	}
	return out
}
