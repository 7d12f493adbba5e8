package commands

import (
	"github.com/tidwall/gjson"

	"agt/state"
	"agt/stream"
)

// lastStateEvent returns the last state event in a's log, looking at its last 8 MiB at most
// (the log is read backwards, so a long log costs no more than its tail). nil when there is none.
func lastStateEvent(a *state.Agent) []byte {
	line, _ := state.LastLine(a.Path(state.EventsFile), 8<<20, func(line []byte) bool {
		return gjson.GetBytes(line, "type").String() == stream.TypeState && gjson.ValidBytes(line)
	})
	return line
}
