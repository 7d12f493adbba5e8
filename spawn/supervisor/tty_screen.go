package supervisor

import (
	"regexp"
	"strconv"

	"agt/state"
	"agt/stream"
)

// screenWatch is what the supervisor reads off a terminal agent's whole screen (stream.Screen,
// fed what the agent writes): whether a chunk said something new
// (progress: new words, not a spinner that turns, a clock that ticks or a dot that blinks),
// whether the screen shows the agent retrying a failed model request, and whether it shows a
// failure it gave up on. The patterns are its kind's (spec RetryScreen and ErrorScreen). The
// supervisor's mu guards it.
type screenWatch struct {
	screen         *stream.Screen
	rows, cols     uint16
	text, still    string // what the screen shows; that Unblinked, for life
	mark           string // its Mark, for progress
	retry, failure *regexp.Regexp
	attempt        string // the retry attempt last told, "" when the screen shows none
	shown          string // the failure last told, "" when the screen shows none
	told           string // the status error that shown became (classified, one line)
}

func newScreenWatch(spec *state.Spec, rows, cols uint16) *screenWatch {
	w := &screenWatch{screen: stream.NewScreen(int(cols), int(rows)), rows: rows, cols: cols}
	// A pattern that no longer compiles (a hand-edited record) is left out, as prompts does.
	w.retry, _ = compileScreen(spec.RetryScreen)
	w.failure, _ = compileScreen(spec.ErrorScreen)
	return w
}

func compileScreen(expr string) (*regexp.Regexp, error) {
	if expr == "" {
		return nil, nil
	}
	return regexp.Compile(expr)
}

// write feeds the screen a chunk of the agent's output, at the terminal's size now, and reports
// whether the screen changed by more than a blink (alive: a clock that ticks is life), and
// whether it says something new (progress).
func (w *screenWatch) write(p []byte, rows, cols uint16) (alive, progress bool) {
	if rows != w.rows || cols != w.cols {
		w.rows, w.cols = rows, cols
		w.screen.Resize(int(cols), int(rows))
	}
	w.screen.Write(p)
	w.text = w.screen.Text()
	still, mark := stream.Unblinked(w.text), stream.Mark(w.text)
	alive, progress = still != w.still, mark != w.mark
	w.still, w.mark = still, mark
	return alive, progress
}

// retrying reports whether the screen shows the agent retrying a failed model request, and
// its retry notice when the attempt is one not told yet (fresh).
func (w *screenWatch) retrying() (ev stream.Event, fresh, shows bool) {
	if w.retry == nil {
		return ev, false, false
	}
	m := w.retry.FindStringSubmatch(w.text)
	if m == nil {
		w.attempt = ""
		return ev, false, false
	}
	attempt, msg := group(w.retry, m, "attempt"), group(w.retry, m, "msg")
	if attempt == "" {
		attempt = "1"
	}
	if msg == "" {
		msg = m[0]
	}
	if attempt == w.attempt {
		return ev, false, true
	}
	w.attempt = attempt
	n, err := strconv.Atoi(attempt)
	if err != nil || n < 1 {
		n = 1
	}
	return stream.RetryNotice(msg, n), true, true
}

// failed is the failure the screen shows, "" for none, and whether it is one not told yet.
func (w *screenWatch) failed() (msg string, fresh bool) {
	if w.failure == nil {
		return "", false
	}
	m := w.failure.FindStringSubmatch(w.text)
	if m == nil {
		w.shown = ""
		return "", false
	}
	msg = group(w.failure, m, "msg")
	if msg == "" {
		msg = m[0]
	}
	fresh, w.shown = msg != w.shown, msg
	return msg, fresh
}

// group is the named group of a match, "" when the pattern has none.
func group(re *regexp.Regexp, m []string, name string) string {
	if i := re.SubexpIndex(name); i > 0 && i < len(m) {
		return m[i]
	}
	return ""
}
