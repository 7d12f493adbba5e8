package commands

import (
	"math"
	"strconv"
	"strings"

	"agt/spawn"
	"agt/state"
	"agt/termsafe"
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
	return termsafe.Text(s)
}

// usd writes a cost with the digits that matter: cents from ten cents up ($1.50, $0.12);
// below, up to four decimals, or two significant digits for less ($0.0421, $0.05, $0.0015,
// $0.000012): never $0.00 for a cost under a cent.
func usd(f float64) string {
	if f == 0 {
		return "$0"
	}
	a := math.Abs(f)
	if a >= 0.1 {
		return "$" + strconv.FormatFloat(f, 'f', 2, 64)
	}
	digits := max(4, min(6, 1-int(math.Floor(math.Log10(a)))))
	s := strings.TrimRight(strconv.FormatFloat(f, 'f', digits, 64), "0")
	if i := strings.IndexByte(s, '.'); len(s)-i < 3 {
		s += strings.Repeat("0", 3-(len(s)-i)) // at least cents: $0.05
	}
	return "$" + s
}
