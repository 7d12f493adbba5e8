package commands

import (
	"math"
	"strconv"

	"github.com/tidwall/gjson"

	"agt/spawn"
	"agt/stream"
)

// waitingLine says in one line what an agent waits on a person for: "permission: Bash mkdir x
// && …", "plan: 1. add the test …", "question: which database?", or the bare reason. The
// agent's words in it are not yet made safe for a terminal.
func waitingLine(w *spawn.Waiting) string {
	if w == nil {
		return ""
	}
	if w.Tool == "" {
		return w.Reason
	}
	in := gjson.ParseBytes(w.Input)
	switch {
	case w.Reason == stream.ReasonPlan || in.Get("plan").Type == gjson.String:
		return "plan: " + firstLine(in.Get("plan").String())
	case in.Get("questions.0.question").Exists():
		return "question: " + firstLine(in.Get("questions.0.question").String())
	case in.Get("question").Type == gjson.String:
		return "question: " + firstLine(in.Get("question").String())
	}
	return w.Reason + ": " + w.Tool + summary(" ", w.Input)
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
