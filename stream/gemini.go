package stream

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// NewGemini returns the decoder of gemini -p --output-format stream-json.
//
// It reads:
//   - init → session (session_id, model);
//   - message role assistant → text with delta true for every chunk (delta:true); when the
//     message ends (at the next event of another kind, or at exit) the chunks joined follow as one
//     complete text, as with Claude's partial messages: a reader takes either the chunks or the
//     complete texts. An assistant message without delta is a complete text by itself. The
//     echoed user prompt is skipped;
//   - tool_use → tool_use (tool_id, tool_name, parameters); tool_result → tool_result, ok when
//     status is success (a shell command that exits non-zero is still a success), output the
//     output as sent, or the error object when there is no output;
//   - error → a warning (error, fatal false): Gemini's error events are loop and turn warnings,
//     whatever their severity;
//   - result → result, preceded by a fatal error when status is error. Gemini's result has no
//     text: the result's text is the last complete assistant text. Usage comes from stats:
//     input (uncached; input_tokens minus cached on builds without it), cached, output_tokens,
//     duration_ms; summed over stats.models when the totals are missing. Gemini reports no cost.
//
// Unknown types are skipped.
//
// One process runs one turn, from its start. Gemini writes no result when SIGINT or SIGTERM stops
// it mid-tool (it exits 0) or when it dies retrying: End then writes a failed result, naming what
// Gemini's exit code stands for (55 untrusted workspace, 41 authentication, API errors exit with
// their HTTP status mod 256: 400 → 144, …).
func NewGemini() Decoder { return &geminiDecoder{open: true} }

type geminiDecoder struct {
	open    bool   // the turn is under way
	chunks  []byte // assistant text of the message under way, from delta chunks
	pending bool   // chunks holds a message that has not been sent whole yet
	text    string // last complete assistant text, the result's text
	tools   map[string]string
}

// geminiMaxKeep is the largest chunk buffer kept for the next message.
const geminiMaxKeep = 1 << 20

// geminiMaxTools bounds the tool names kept for results that never come.
const geminiMaxTools = 4096

// Decode implements Decoder.
func (d *geminiDecoder) Decode(dst []Event, line []byte) []Event {
	root, blank, ok := jsonLine(line)
	if !ok {
		if blank {
			return dst
		}
		return append(dst, Unparsed(line))
	}
	var typ, role, content, delta gjson.Result
	var sessionID, model, toolName, toolID, params, status, output, errv, message, stats gjson.Result
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "type":
			typ = v
		case "role":
			role = v
		case "content":
			content = v
		case "delta":
			delta = v
		case "session_id":
			sessionID = v
		case "model":
			model = v
		case "tool_name":
			toolName = v
		case "tool_id":
			toolID = v
		case "parameters":
			params = v
		case "status":
			status = v
		case "output":
			output = v
		case "error":
			errv = v
		case "message":
			message = v
		case "stats":
			stats = v
		}
		return true
	})
	switch typ.Str {
	case "message":
		if role.Str != "assistant" {
			return dst
		}
		if content.Type != gjson.String {
			return append(dst, Unparsed(line))
		}
		d.open = true
		if jsonTrue(delta) {
			if content.Str == "" {
				return dst
			}
			d.chunks = append(d.chunks, content.Str...)
			d.pending = true
			return append(dst, Event{Type: TypeText, Text: jsonString(content), Delta: true})
		}
		dst = d.flush(dst)
		if content.Str == "" {
			return dst
		}
		d.text = jsonString(content)
		return append(dst, Event{Type: TypeText, Text: d.text})
	case "init":
		dst = d.flush(dst)
		if sessionID.Type != gjson.String {
			return append(dst, Unparsed(line))
		}
		d.open = true
		return append(dst, Event{Type: TypeSession, SessionID: jsonString(sessionID), Model: jsonString(model)})
	case "tool_use":
		dst = d.flush(dst)
		ev := Event{Type: TypeToolUse, ID: jsonString(toolID), Tool: jsonString(toolName), Input: jsonRaw(params)}
		if ev.ID != "" {
			if d.tools == nil || len(d.tools) >= geminiMaxTools {
				d.tools = make(map[string]string)
			}
			d.tools[ev.ID] = ev.Tool
		}
		return append(dst, ev)
	case "tool_result":
		dst = d.flush(dst)
		ev := Event{Type: TypeToolResult, ID: jsonString(toolID), OK: status.Str == "success"}
		ev.Tool = d.tools[ev.ID]
		delete(d.tools, ev.ID)
		if output.Exists() {
			ev.Output = jsonRaw(output)
		} else {
			ev.Output = jsonRaw(errv)
		}
		return append(dst, ev)
	case "error":
		dst = d.flush(dst)
		if message.Type != gjson.String {
			return append(dst, Unparsed(line))
		}
		return append(dst, agentError(jsonString(message), false))
	case "result":
		dst = d.flush(dst)
		return d.result(dst, status, errv, stats)
	case "":
		return append(dst, Unparsed(line))
	}
	return dst
}

// flush sends the assistant message built from chunks as one complete text.
func (d *geminiDecoder) flush(dst []Event) []Event {
	if !d.pending {
		return dst
	}
	d.text = string(d.chunks)
	d.chunks, d.pending = d.chunks[:0], false
	if cap(d.chunks) > geminiMaxKeep {
		d.chunks = nil // do not hold on to the buffer of one huge message
	}
	return append(dst, Event{Type: TypeText, Text: d.text})
}

func (d *geminiDecoder) result(dst []Event, status, errv, stats gjson.Result) []Event {
	ev := Event{Type: TypeResult, OK: status.Str == "success", Text: d.text}
	u := geminiUsage(stats)
	ev.Usage = &u
	ev.DurationMS = jsonInt(stats.Get("duration_ms"))
	if !ev.OK {
		msg := errv.Get("message").Str
		if msg == "" && errv.Type == gjson.String {
			msg = errv.Str
		}
		switch {
		case msg != "":
			ev.Text = strings.Clone(msg)
		case status.Str != "":
			ev.Text = "turn ended with status " + status.Str
		default:
			ev.Text = "turn failed"
		}
		dst = append(dst, agentError(ev.Text, true))
	}
	d.open, d.text = false, ""
	clear(d.tools)
	return append(dst, ev)
}

// geminiUsage reads result.stats, or sums stats.models when the totals are missing.
func geminiUsage(stats gjson.Result) Usage {
	u, ok := geminiTokens(stats)
	if ok {
		return u
	}
	stats.Get("models").ForEach(func(_, m gjson.Result) bool {
		mu, _ := geminiTokens(m)
		u.Add(mu)
		return true
	})
	return u
}

// geminiTokens reads one set of Gemini token counts: input_tokens counts cached tokens, input
// does not. ok is false when the set has neither input nor output counts.
func geminiTokens(stats gjson.Result) (u Usage, ok bool) {
	var inputTokens, input, cached, output gjson.Result
	stats.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "input_tokens":
			inputTokens = v
		case "input":
			input = v
		case "cached":
			cached = v
		case "output_tokens":
			output = v
		}
		return true
	})
	u.CacheReadTokens = nonNegative(jsonInt(cached))
	if input.Type == gjson.Number {
		u.InputTokens = nonNegative(jsonInt(input))
	} else {
		u.InputTokens = nonNegative(jsonInt(inputTokens) - u.CacheReadTokens)
	}
	u.OutputTokens = nonNegative(jsonInt(output))
	return u, inputTokens.Type == gjson.Number || input.Type == gjson.Number || output.Type == gjson.Number
}

// geminiExitMeaning names what Gemini CLI's exit codes stand for.
func geminiExitMeaning(code int) string {
	switch code {
	case 41:
		return "authentication failed"
	case 42:
		return "input error"
	case 44:
		return "sandbox error"
	case 52:
		return "configuration error"
	case 53:
		return "session turn limit reached"
	case 54:
		return "fatal tool error"
	case 55:
		return "untrusted workspace: pass --skip-trust"
	case 130:
		return "cancelled"
	}
	if code >= 144 && code <= 255 {
		return "API error, HTTP status " + strconv.Itoa(code+256)
	}
	return ""
}

// End implements Decoder.
func (d *geminiDecoder) End(dst []Event, exit Exit) []Event {
	dst = d.flush(dst)
	if d.open {
		dst = append(dst, cutOffResult(exit, geminiExitMeaning))
	}
	*d = geminiDecoder{open: true, chunks: d.chunks[:0]}
	return dst
}
