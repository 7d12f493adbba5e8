package commands

import (
	"math"
	"strconv"

	"agt/spawn"
	"agt/state"
)

// waitingLine says in one line what an agent waits on a person for (spawn.Waiting.Line); the
// agent's words in it are not yet made safe for a terminal.
func waitingLine(w *spawn.Waiting) string { return w.Line() }

// stateLine says where an agent is, for a status line: "fix-auth: running (Bash go test)",
// "fix-auth: waiting (permission: Bash rm -rf build)".
func stateLine(a *state.Agent) string {
	st := spawn.Observe(a)
	s := a.Name + ": " + st.State
	switch w := spawn.WaitingFor(a, st); {
	case w != nil:
		s += " (" + w.Line() + ")"
	case st.Doing != "":
		s += " (" + st.Doing + ")"
	case st.Reason != "":
		s += " (" + st.Reason + ")"
	}
	return termSafe(s)
}

// usd writes a cost with the digits that matter: two decimals from ten cents up, else two
// significant digits ($0.0015, never $0.00 for a cost under a cent), at most to a millionth.
func usd(f float64) string {
	if f == 0 {
		return "$0"
	}
	digits := 2
	if a := math.Abs(f); a < 0.1 {
		digits = min(6, 1-int(math.Floor(math.Log10(a))))
	}
	return "$" + strconv.FormatFloat(f, 'f', digits, 64)
}
