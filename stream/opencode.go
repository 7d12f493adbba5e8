package stream

import (
	"strings"

	"github.com/tidwall/gjson"
)

// NewOpencode returns the decoder of opencode run --format json.
//
// It reads:
//   - sessionID, on every line → session, when it first appears or changes (opencode names no
//     model and no cwd: the supervisor knows the model from --model);
//   - text → text (opencode sends a text part once, finished, never in chunks); reasoning
//     (--thinking) and step_start are skipped;
//   - tool_use → tool_use then tool_result from the same line (opencode sends a tool part only
//     once it completed or failed; a pending or running part, should a build send one, gives the
//     tool_use alone). The id is the provider's callID, input is state.input, output is
//     state.output, or state.error when the tool failed (an auto-rejected permission fails so);
//   - step_finish → adds the step's cost and tokens to the turn, and counts the step;
//   - error → a fatal error (session.error or a failed prompt: opencode exits 1), classified by
//     data.statusCode and the name and message (ProviderAuthError is auth);
//   - done (newer builds) → the turn's result.
//
// Unknown types are skipped. Stderr serves the failure: "Session not found" (an unknown
// --session) is session.
//
// 1.18 sends no done event: the turn ends with the process, so End writes the result, ok when no
// error came and either the last step finished with reason stop or the process exited 0 (after
// an auto-rejected permission the run ends with reason tool-calls and exit 0). Cost and tokens
// are the sums over the turn's steps; cost is null when no step reported one; steps counts the
// step_finish events (model calls). Tokens: opencode's input excludes cached tokens and its
// output excludes reasoning, which the event counts as output like the other agents do.
func NewOpencode() Decoder { return &opencodeDecoder{open: true} }

type opencodeDecoder struct {
	open      bool // the turn is under way
	sessionID string
	steps     int
	cost      float64
	haveCost  bool
	usage     Usage
	text      string // last text part, the result's text
	lastStop  bool   // the last step finished with reason stop
	errText   string // message of the error event, when one came
	running   map[string]bool
	evidence  // what the run showed of why it may fail; DecodeStderr records stderr
	// retries counts the turn's failed model requests, which opencode retries (opencode_retry.go).
	retries int
}

// DecodeStderr implements Decoder: opencode's log says what it does before its stdout does
// (opencode_log.go): the session it created is a session event, a failed model request that it
// retries a retry notice. Every line but a routine entry is evidence.
func (d *opencodeDecoder) DecodeStderr(dst []Event, line []byte) []Event {
	if id := opencodeCreated(line); id != "" && id != d.sessionID {
		d.sessionID = id
		return append(dst, Event{Type: TypeSession, SessionID: id})
	}
	if opencodeRoutine(line) {
		return dst
	}
	d.evidence.stderrLine(line)
	if ev, ok := opencodeRetry(line, d.retries+1); ok && d.open {
		d.retries++
		d.evidence.sawEvents([]Event{ev})
		dst = append(dst, ev)
	}
	return dst
}

// Routine implements LogReader: opencode's INFO entries are no stderr events.
func (d *opencodeDecoder) Routine(line []byte) bool { return opencodeRoutine(line) }

// opencodeMaxTools bounds the running tool parts kept for completions that never come.
const opencodeMaxTools = 4096

// Decode implements Decoder.
func (d *opencodeDecoder) Decode(dst []Event, line []byte) []Event {
	n := len(dst)
	dst = d.decode(dst, line)
	d.evidence.sawEvents(dst[n:])
	return dst
}

func (d *opencodeDecoder) decode(dst []Event, line []byte) []Event {
	root, blank, ok := jsonLine(line)
	if !ok {
		if blank {
			return dst
		}
		return append(dst, Unparsed(line))
	}
	var typ, sessionID, part, errv gjson.Result
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "type":
			typ = v
		case "sessionID":
			sessionID = v
		case "part":
			part = v
		case "error":
			errv = v
		}
		return true
	})
	if typ.Type != gjson.String || typ.Str == "" {
		return append(dst, Unparsed(line))
	}
	switch typ.Str {
	case "step_start", "text", "reasoning", "tool_use", "step_finish", "error", "done":
	default:
		return dst
	}
	if sessionID.Type == gjson.String && sessionID.Str != "" && sessionID.Str != d.sessionID {
		d.sessionID = jsonString(sessionID)
		dst = append(dst, Event{Type: TypeSession, SessionID: d.sessionID})
	}
	if typ.Str != "done" && !d.open {
		d.open = true // a new turn in the same process
	}
	switch typ.Str {
	case "text":
		text := part.Get("text")
		if text.Type != gjson.String {
			return append(dst, Unparsed(line))
		}
		if text.Str == "" {
			return dst
		}
		d.text = jsonString(text)
		return append(dst, Event{Type: TypeText, Text: d.text})
	case "tool_use":
		if !part.IsObject() {
			return append(dst, Unparsed(line))
		}
		return d.tool(dst, part)
	case "step_finish":
		if !part.IsObject() {
			return append(dst, Unparsed(line))
		}
		d.step(part)
		return dst
	case "error":
		d.errText = opencodeErrorText(errv)
		return append(dst, fatalError(d.errText, int(jsonInt(errv.Get("data.statusCode")))))
	case "done":
		if !d.open {
			return dst
		}
		return append(dst, d.result(d.errText == ""))
	}
	return dst
}

func (d *opencodeDecoder) tool(dst []Event, part gjson.Result) []Event {
	var id, callID, tool, state gjson.Result
	part.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "id":
			id = v
		case "callID":
			callID = v
		case "tool":
			tool = v
		case "state":
			state = v
		}
		return true
	})
	if callID.Type == gjson.String && callID.Str != "" {
		id = callID
	}
	var status, input, output, errv gjson.Result
	state.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "status":
			status = v
		case "input":
			input = v
		case "output":
			output = v
		case "error":
			errv = v
		}
		return true
	})
	ev := Event{Type: TypeToolUse, ID: jsonString(id), Tool: jsonString(tool)}
	if !d.running[ev.ID] {
		ev.Input = jsonRaw(input)
		dst = append(dst, ev)
	}
	switch status.Str {
	case "completed":
		ev.OK, ev.Output = true, jsonRaw(output)
	case "error":
		ev.Output = jsonRaw(errv)
	default:
		if d.running == nil || len(d.running) >= opencodeMaxTools {
			d.running = make(map[string]bool)
		}
		d.running[ev.ID] = true
		return dst
	}
	delete(d.running, ev.ID)
	ev.Type, ev.Input = TypeToolResult, nil
	return append(dst, ev)
}

func (d *opencodeDecoder) step(part gjson.Result) {
	d.steps++
	var reason, cost, tokens gjson.Result
	part.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "reason":
			reason = v
		case "cost":
			cost = v
		case "tokens":
			tokens = v
		}
		return true
	})
	d.lastStop = reason.Str == "stop"
	if cost.Type == gjson.Number {
		d.cost += cost.Num
		d.haveCost = true
	}
	tokens.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "input":
			d.usage.InputTokens += nonNegative(jsonInt(v))
		case "output", "reasoning":
			d.usage.OutputTokens += nonNegative(jsonInt(v))
		case "cache":
			v.ForEach(func(k, v gjson.Result) bool {
				switch k.Str {
				case "read":
					d.usage.CacheReadTokens += nonNegative(jsonInt(v))
				case "write":
					d.usage.CacheWriteTokens += nonNegative(jsonInt(v))
				}
				return true
			})
		}
		return true
	})
}

// opencodeErrorText is the message of an error event: "APIError: mock invalid_request_error".
func opencodeErrorText(errv gjson.Result) string {
	name, msg := errv.Get("name").Str, errv.Get("data.message").Str
	if msg == "" && errv.Type == gjson.String {
		msg = errv.Str
	}
	switch {
	case name != "" && msg != "":
		return name + ": " + msg
	case msg != "":
		return strings.Clone(msg)
	case name != "":
		return strings.Clone(name)
	}
	return "opencode reported an error"
}

// result ends the turn and resets its sums.
func (d *opencodeDecoder) result(ok bool) Event {
	ev := Event{Type: TypeResult, OK: ok, Text: d.text, Steps: d.steps}
	if d.errText != "" {
		ev.Text = d.errText
	}
	if d.haveCost {
		c := d.cost
		ev.CostUSD = &c
	}
	u := d.usage
	ev.Usage = &u
	d.open, d.steps, d.cost, d.haveCost, d.usage = false, 0, 0, false, Usage{}
	d.text, d.lastStop, d.errText, d.retries = "", false, "", 0
	clear(d.running)
	return ev
}

// End implements Decoder.
func (d *opencodeDecoder) End(dst []Event, exit Exit) ([]Event, Failure) {
	if d.open {
		errText := d.errText
		ok := errText == "" && (d.lastStop || exit.Clean())
		ev := d.result(ok)
		if !ok && errText == "" {
			ev.Text = cutOffText(exit, nil)
		}
		dst = append(dst, ev)
	}
	f := d.evidence.failure(exit, nil)
	*d = opencodeDecoder{open: true}
	return dst, f
}
