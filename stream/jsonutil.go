package stream

import (
	"encoding/json"
	"strconv"
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"
)

// The decoders read lines with gjson over a string view of the line buffer: nothing is copied
// until an event keeps it. Every gjson.Result taken from a view points into the buffer, which
// the caller reuses after Decode returns, so whatever an event keeps goes through jsonString or
// jsonRaw, which copy.

// jsonLine classifies one line of a JSON-lines agent. It returns the line's top-level object,
// blank=true for a line with nothing but white space (skipped: it carries nothing), or ok=false
// for anything that is not a valid JSON object (the caller turns it into Unparsed).
func jsonLine(line []byte) (root gjson.Result, blank, ok bool) {
	i, j := 0, len(line)
	for i < j && isJSONSpace(line[i]) {
		i++
	}
	for j > i && isJSONSpace(line[j-1]) {
		j--
	}
	if i == j {
		return gjson.Result{}, true, false
	}
	b := line[i:j]
	if b[0] != '{' || b[len(b)-1] != '}' || !gjson.ValidBytes(b) {
		return gjson.Result{}, false, false
	}
	return gjson.Result{Type: gjson.JSON, Raw: unsafe.String(unsafe.SliceData(b), len(b))}, false, true
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// jsonString returns a copy of a string value, the text of a number, or "" for anything else.
func jsonString(r gjson.Result) string {
	switch r.Type {
	case gjson.String:
		if strings.IndexByte(r.Raw, '\\') >= 0 {
			return r.Str // gjson unescaped it into a string of its own
		}
		return strings.Clone(r.Str)
	case gjson.Number:
		return strings.Clone(r.Raw)
	}
	return ""
}

// jsonRaw returns a copy of a value's JSON text, or nil when the value is absent.
func jsonRaw(r gjson.Result) json.RawMessage {
	if !r.Exists() || r.Raw == "" {
		return nil
	}
	return append(json.RawMessage(nil), r.Raw...)
}

// stringValue returns s as a JSON string.
func stringValue(s string) json.RawMessage {
	return AppendString(make(json.RawMessage, 0, len(s)+2), s)
}

// stringObject returns the JSON object {"key":"value"}.
func stringObject(key, value string) json.RawMessage {
	b := AppendString(append(make(json.RawMessage, 0, len(key)+len(value)+8), '{'), key)
	return append(AppendString(append(b, ':'), value), '}')
}

// jsonInt returns a number as an int64, or 0 for anything else.
func jsonInt(r gjson.Result) int64 {
	if r.Type != gjson.Number {
		return 0
	}
	return r.Int()
}

// jsonTrue reports whether a value is the literal true.
func jsonTrue(r gjson.Result) bool { return r.Type == gjson.True }

// jsonIsBool reports whether a value is true or false.
func jsonIsBool(r gjson.Result) bool { return r.Type == gjson.True || r.Type == gjson.False }

// jsonJoin joins the strings of an array with sep; a string value is returned as it is.
func jsonJoin(r gjson.Result, sep string) string {
	if r.Type == gjson.String {
		return strings.Clone(r.Str)
	}
	if !r.IsArray() {
		return ""
	}
	var b strings.Builder
	r.ForEach(func(_, v gjson.Result) bool {
		if v.Type != gjson.String || v.Str == "" {
			return true
		}
		if b.Len() > 0 {
			b.WriteString(sep)
		}
		b.WriteString(v.Str)
		return true
	})
	return b.String()
}

// nonNegative clamps counters that a subtraction of cumulative figures drove below zero.
func nonNegative(n int64) int64 { return max(n, 0) }

// subUsage returns cur-prev when no counter of cur is below prev's, else cur: a counter that
// shrank means the cumulative figures started over.
func subUsage(cur, prev Usage) Usage {
	if cur.InputTokens < prev.InputTokens || cur.OutputTokens < prev.OutputTokens ||
		cur.CacheReadTokens < prev.CacheReadTokens || cur.CacheWriteTokens < prev.CacheWriteTokens {
		return cur
	}
	return Usage{
		InputTokens:      cur.InputTokens - prev.InputTokens,
		OutputTokens:     cur.OutputTokens - prev.OutputTokens,
		CacheReadTokens:  cur.CacheReadTokens - prev.CacheReadTokens,
		CacheWriteTokens: cur.CacheWriteTokens - prev.CacheWriteTokens,
	}
}

// cutOffText explains a result synthesized at exit for a turn the agent never finished. meaning,
// when not nil, says what an exit code stands for in the agent's own terms.
func cutOffText(exit Exit, meaning func(code int) (exitMeaning, bool)) string {
	var b strings.Builder
	switch {
	case exit.Signal != "":
		b.WriteString("agent killed by ")
		b.WriteString(exit.Signal)
	case exit.Code < 0:
		b.WriteString("agent killed by a signal")
	case exit.Code == 0:
		b.WriteString("agent exited with code 0")
	default:
		b.WriteString("agent exited with code ")
		b.WriteString(strconv.Itoa(exit.Code))
		var m string
		if meaning != nil {
			if em, ok := meaning(exit.Code); ok {
				m = em.text
			}
		}
		if m == "" {
			m = signalExitMeaning(exit.Code)
		}
		if m != "" {
			b.WriteString(" (")
			b.WriteString(m)
			b.WriteString(")")
		}
	}
	b.WriteString(" before the turn ended")
	return b.String()
}

// signalExitMeaning names the signal a shell-style exit code 128+N stands for: agents that catch
// a signal often exit so.
func signalExitMeaning(code int) string {
	switch code {
	case 129:
		return "128+SIGHUP"
	case 130:
		return "128+SIGINT"
	case 131:
		return "128+SIGQUIT"
	case 134:
		return "128+SIGABRT"
	case 137:
		return "128+SIGKILL"
	case 139:
		return "128+SIGSEGV"
	case 141:
		return "128+SIGPIPE"
	case 143:
		return "128+SIGTERM"
	}
	return ""
}

// cutOffResult is the failed result synthesized for a turn the process left open.
func cutOffResult(exit Exit, meaning func(code int) (exitMeaning, bool)) Event {
	return Event{Type: TypeResult, Text: cutOffText(exit, meaning)}
}

// agentWarning is an error the agent reported that did not end its turn.
func agentWarning(msg string) Event {
	return Event{Type: TypeError, Message: readable(msg), Source: SourceAgent}
}
