package commands

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"
	"golang.org/x/sys/unix"

	"agt/hosts"
	"agt/stream"
	"agt/termsafe"
)

// transcript renders events for people: what tail shows on a terminal (or with --format
// table), and spawn --follow and --wait. One event is one line, or a few for prose:
//
//	14:02:11  fix-auth  I'll run the tests first.
//	14:02:12  fix-auth  ▸ Bash  go test ./...
//	14:02:15  fix-auth    ✓ ok  	agt/commands	2.667s (+3 lines)
//	14:02:40  fix-auth  ■ turn 1 done in 29.1s · 12,034 in / 1,210 out tokens · $0.0421
//
// The time is local, the agent's name has a colour of its own, stderr and bookkeeping are
// dim, failures red. Colour only on a terminal, and never with NO_COLOR set.
type transcript struct {
	color bool
	// width is the terminal's, to wrap prose in; 0 (not a terminal, or unknown) wraps nothing.
	width int
	// nameWidth pads names so that what agents say starts in one column.
	nameWidth int
	// denied holds the agents whose last event was a denied permission: the failed tool
	// result that follows says the denial again, and is not shown.
	denied map[string]bool
	// bell rings the terminal's bell when an agent starts to wait for its user or fails, once
	// live is set: for what happens now, not for the past printed first.
	bell, live bool
}

// newTranscript returns the view for out, with names padded to the longest of names.
func newTranscript(out *output, names []string) *transcript {
	t := &transcript{color: out.color}
	if f, ok := out.w.(*os.File); ok && isTerminal(f) {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil {
			t.width = int(ws.Col)
		}
	}
	for _, n := range names {
		t.nameWidth = max(t.nameWidth, utf8.RuneCountInString(n))
	}
	return t
}

// SGR colours.
const (
	sgrReset  = "\x1b[0m"
	sgrBold   = "\x1b[1m"
	sgrDim    = "\x1b[2m"
	sgrRed    = "\x1b[31m"
	sgrGreen  = "\x1b[32m"
	sgrYellow = "\x1b[33m"
)

// nameColors are the agents' colours: none of them red, green or yellow, which mean things.
var nameColors = []string{"\x1b[36m", "\x1b[35m", "\x1b[34m", "\x1b[96m", "\x1b[95m", "\x1b[94m"}

func (t *transcript) paint(sgr, s string) string {
	if !t.color || sgr == "" || s == "" {
		return s
	}
	return sgr + s + sgrReset
}

// nameColor is the agent's colour, the same in every view: picked by a hash of its name.
func nameColor(name string) string {
	h := fnv.New32a()
	h.Write([]byte(name))
	return nameColors[h.Sum32()%uint32(len(nameColors))]
}

// event renders one event line of the log to w; a line that is not an event is skipped.
func (t *transcript) event(w io.Writer, line []byte) error {
	var ev stream.Event
	if err := json.Unmarshal(bytes.TrimSpace(line), &ev); err != nil || ev.Type == "" {
		return nil
	}
	safeEvent(&ev)
	t.nameWidth = max(t.nameWidth, utf8.RuneCountInString(ev.Agent))
	if t.denial(&ev) {
		return nil
	}
	style, body := t.body(&ev, line)
	if body == "" {
		return nil
	}
	clock := ev.TS.Local().Format(time.TimeOnly)
	pad := strings.Repeat(" ", t.nameWidth-utf8.RuneCountInString(ev.Agent)) + "  "
	indent := strings.Repeat(" ", len(clock)+2+t.nameWidth+2)
	lines := strings.Split(body, "\n")
	if ev.Type == stream.TypeText && t.width > 0 {
		lines = wrapProse(lines, t.width-len(indent))
	}
	var b strings.Builder
	for i, l := range lines {
		if i == 0 {
			b.WriteString(t.paint(sgrDim, clock) + "  " + t.paint(nameColor(ev.Agent), ev.Agent) + pad)
		} else {
			b.WriteString(indent)
		}
		b.WriteString(t.paint(style, l))
		b.WriteByte('\n')
	}
	if t.bell && t.live && ev.Type == stream.TypeState && notifies(ev.From, ev.To) {
		b.WriteByte('\a')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// safeEvent escapes what an agent wrote in ev's fields (R35): the transcript shows it, and the
// terminal never acts on it. Inputs and outputs are escaped as they are summed up (firstLine).
func safeEvent(ev *stream.Event) {
	for _, p := range []*string{&ev.Agent, &ev.Type, &ev.Kind, &ev.Cwd, &ev.From, &ev.To, &ev.Reason,
		&ev.SessionID, &ev.Model, &ev.ID, &ev.Tool, &ev.Decision, &ev.Rule, &ev.Source, &ev.Class, &ev.Signal} {
		*p = termsafe.Line(*p)
	}
	for _, p := range []*string{&ev.Text, &ev.Line, &ev.Message, &ev.Raw} {
		*p = termsafe.Text(*p)
	}
	for i := range ev.Argv {
		ev.Argv[i] = termsafe.Line(ev.Argv[i])
	}
}

// notifies reports whether a change of state is one a person hears of: an agent starts to wait
// for them, or fails.
func notifies(from, to string) bool {
	return to == stream.Failed || to == stream.Waiting && from != stream.Waiting && from != stream.Stale
}

// denial reports whether ev is the failed tool result that follows a denied permission, which
// the denial's line said already, and remembers denials.
func (t *transcript) denial(ev *stream.Event) bool {
	switch ev.Type {
	case stream.TypePermission:
		if t.denied == nil {
			t.denied = map[string]bool{}
		}
		t.denied[ev.Agent] = ev.Decision == "deny"
	case stream.TypeToolResult:
		was := t.denied[ev.Agent]
		delete(t.denied, ev.Agent)
		return was && !ev.OK
	case stream.TypeToolUse, stream.TypeResult, stream.TypeText, stream.TypeExit:
		delete(t.denied, ev.Agent)
	}
	return false
}

// body is what the transcript shows of an event, and its style.
func (t *transcript) body(ev *stream.Event, line []byte) (style, body string) {
	switch ev.Type {
	case stream.TypeSpawned:
		what := ev.Kind
		if ev.Kind == "exec" || ev.Kind == "" {
			what = hosts.Words(ev.Argv) // each already escaped (safeEvent)
		}
		where := termsafe.Line(workspaceLine(gjson.GetBytes(line, "workspace")))
		if where == "" {
			where = ev.Cwd
		}
		return sgrBold, fmt.Sprintf("▶ started %s (pid %d) in %s", what, ev.PID, where)
	case stream.TypeState:
		s := "· " + ev.To
		if ev.From != "" {
			s = "· " + ev.From + " → " + ev.To
		}
		if ev.Reason != "" {
			s += " (" + ev.Reason + ")"
		}
		return sgrDim, s
	case stream.TypeSession:
		s := "· session " + ev.SessionID
		if ev.SessionID == "" {
			s = "· session"
		}
		if ev.Model != "" {
			s += ", model " + ev.Model
		}
		return sgrDim, s
	case stream.TypeText:
		return "", strings.TrimRight(ev.Text, " \t\n")
	case stream.TypeToolUse:
		return "", t.paint(sgrBold, "▸ "+ev.Tool) + summary("  ", ev.Input)
	case stream.TypeToolResult:
		mark, style := "✓", sgrGreen
		if !ev.OK {
			mark, style = "✗", sgrRed
		}
		return "", "  " + t.paint(style, mark) + resultSummary(ev.Output)
	case stream.TypePermission:
		switch ev.Decision {
		case "allow":
			return "", t.paint(sgrGreen, "✓ allowed "+ev.Tool) + summary("  ", ev.Input)
		case "deny":
			return "", t.paint(sgrRed, "✗ denied "+ev.Tool) + summary("  ", ev.Input)
		}
		return sgrYellow, "? " + ev.Tool + " asks permission" + summary(": ", ev.Input) +
			fmt.Sprintf("\n  answer: agt approve %s %s · agt deny --message TEXT %s %s", ev.Agent, ev.ID, ev.Agent, ev.ID)
	case stream.TypeResult:
		return t.result(ev)
	case stream.TypeOutput:
		return "", ev.Line
	case stream.TypeStderr:
		return sgrDim, ev.Line
	case stream.TypeError:
		if !ev.Fatal && ev.Attempt > 0 {
			return sgrYellow, fmt.Sprintf("retrying (attempt %d): %s", ev.Attempt, firstLine(ev.Message))
		}
		s := "error: " + firstLine(ev.Message)
		if ev.Class != "" {
			s += " (" + ev.Class + ")"
		}
		return sgrRed, s
	case stream.TypeRestart:
		return sgrYellow, fmt.Sprintf("↻ restarting in %s (attempt %d): %s", time.Duration(ev.DelayMS)*time.Millisecond, ev.Attempt, ev.Reason)
	case stream.TypeExit:
		switch {
		case ev.Signal != "":
			return sgrRed, "■ killed by " + ev.Signal
		case ev.Code != nil && *ev.Code == 0:
			return sgrGreen, "■ exit code 0"
		case ev.Code != nil:
			return sgrRed, fmt.Sprintf("■ exit code %d", *ev.Code)
		}
		return "", "■ exited"
	case stream.TypeUnparsed:
		return sgrDim, ev.Raw
	case stream.TypeGap:
		return sgrYellow, fmt.Sprintf("… %d events missed (seq %d to %d): this reader fell behind the log's rotations", ev.Missed, ev.FromSeq, ev.ToSeq)
	}
	return sgrDim, termsafe.Line(string(bytes.TrimSpace(line)))
}

// result renders a turn's result: how long it took, its tokens and its cost; a failed turn
// says why.
func (t *transcript) result(ev *stream.Event) (string, string) {
	var b strings.Builder
	b.WriteString("■ turn")
	if ev.Turns > 0 {
		b.WriteString(" " + strconv.Itoa(ev.Turns))
	}
	if ev.OK {
		b.WriteString(" done")
	} else {
		b.WriteString(" failed")
	}
	if ev.DurationMS > 0 {
		b.WriteString(" in " + humanDuration(time.Duration(ev.DurationMS)*time.Millisecond))
	}
	if u := ev.Usage; u != nil && u.InputTokens+u.OutputTokens+u.CacheReadTokens+u.CacheWriteTokens > 0 {
		fmt.Fprintf(&b, " · %s in / %s out tokens", thousands(u.InputTokens+u.CacheReadTokens+u.CacheWriteTokens), thousands(u.OutputTokens))
	}
	if ev.CostUSD != nil {
		b.WriteString(" · " + usd(*ev.CostUSD))
	}
	if !ev.OK {
		if text := firstLine(ev.Text); text != "" {
			b.WriteString(": " + text)
		}
		return sgrRed, b.String()
	}
	return sgrBold, b.String()
}

// summary is sep and one line of a tool's input (stream.InputLine), escaped for a terminal;
// "" for none.
func summary(sep string, input json.RawMessage) string {
	if s := stream.InputLine(input); s != "" {
		return sep + termsafe.Line(s)
	}
	return ""
}

// resultSummary is the first line of a tool's output, cut, and how many lines more it had.
func resultSummary(output json.RawMessage) string {
	out := gjson.ParseBytes(output)
	text := out.String()
	if !(out.Type == gjson.String) {
		text = string(bytes.TrimSpace(output))
	}
	text = strings.TrimSpace(text)
	if text == "" || text == "null" {
		return ""
	}
	lines := strings.Split(text, "\n")
	s := " " + firstLine(lines[0])
	if n := len(lines) - 1; n > 0 {
		s += fmt.Sprintf(" (+%d line%s)", n, plural(n))
	}
	return s
}

// firstLine is the first line of s, cut (stream.FirstLine), what a terminal would act on
// escaped.
func firstLine(s string) string { return termsafe.Line(stream.FirstLine(s)) }

// wrapProse breaks lines longer than width at spaces.
func wrapProse(lines []string, width int) []string {
	if width < 20 {
		return lines
	}
	var out []string
	for _, l := range lines {
		for utf8.RuneCountInString(l) > width {
			r := []rune(l)
			cut := width
			for cut > width/2 && r[cut] != ' ' {
				cut--
			}
			if r[cut] != ' ' {
				cut = width
			}
			out = append(out, strings.TrimRight(string(r[:cut]), " "))
			l = strings.TrimLeft(string(r[cut:]), " ")
		}
		out = append(out, l)
	}
	return out
}

// humanDuration rounds a duration for people: 850ms, 12.3s, 4m05s, 1h12m.
func humanDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// thousands writes n with thousands separators: 12,034.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
