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
//   - message role assistant → one text per message: the delta chunks are joined and sent at the
//     next event of another kind (a user message included), at the result and at exit, or early
//     when they reach geminiMaxChunks. An assistant message without delta is a complete text by
//     itself. The echoed user prompt is skipped;
//   - tool_use → tool_use (tool_id, tool_name, parameters); tool_result → tool_result, ok when
//     status is success (a shell command that exits non-zero is still a success), output the
//     output as sent, or the error object when there is no output;
//   - error → a warning (error, fatal false): Gemini's error events are loop and turn warnings,
//     whatever their severity;
//   - result → result, preceded by a fatal error when status is error (classified from the
//     message, which quotes the API's "code"). Gemini's result has no text: the result's text is
//     the last complete assistant text. Usage comes from stats: input (uncached; input_tokens
//     minus cached on builds without it), cached, output_tokens, duration_ms; summed over
//     stats.models when the totals are missing. Gemini reports no cost. When init named no model
//     or "auto…", the model that did the work is the stats.models key with the most tokens: a
//     session event with an empty session_id carries it, before the result.
//
// Unknown types are skipped. On stderr, Gemini's retry lines ("Attempt 1 failed with status 429.
// Retrying with backoff...", "Attempt 2 failed: <quota message>. Retrying after 5000ms...")
// become retry notices (error, fatal false, attempt, status, class): Gemini retries 429 and 5xx
// for minutes with nothing on stdout.
//
// One process runs one turn, from its start. Gemini writes no result when SIGINT or SIGTERM stops
// it mid-tool (it exits 0) or when it dies retrying: End then writes a failed result, naming what
// Gemini's exit code stands for (55 untrusted workspace, 41 authentication, API errors exit with
// their HTTP status mod 256: 400 → 144, …), which also classifies the failure.
func NewGemini() Decoder { return &geminiDecoder{open: true} }

type geminiDecoder struct {
	open    bool   // the turn is under way
	chunks  []byte // assistant text of the message under way, from delta chunks
	text    string // last complete assistant text, the result's text
	model   string // of init
	session string // of init
	tools   map[string]string
	// resolved is the model an "auto" session turned out to use, by session id: it outlives End,
	// so that each later turn (a process per turn) reports it at once, and no second session
	// event comes at its end.
	resolved map[string]string
	evidence // what the run showed of why it may fail; DecodeStderr records stderr
}

// geminiMaxChunks is the most text of one message held before it is sent, and the largest
// chunk buffer kept for the next message.
const geminiMaxChunks = 1 << 20

// geminiMaxTools bounds the tool names kept for results that never come.
const geminiMaxTools = 4096

// Decode implements Decoder.
func (d *geminiDecoder) Decode(dst []Event, line []byte) []Event {
	n := len(dst)
	dst = d.decode(dst, line)
	d.evidence.sawEvents(dst[n:])
	return dst
}

func (d *geminiDecoder) decode(dst []Event, line []byte) []Event {
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
	if typ.Str != "message" || role.Str != "assistant" || !jsonTrue(delta) {
		dst = d.flush(dst) // a message's chunks end at the first line that is not one of them
	}
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
			d.chunks = append(d.chunks, content.Str...)
			if len(d.chunks) >= geminiMaxChunks {
				dst = d.flush(dst)
			}
			return dst
		}
		if content.Str == "" {
			return dst
		}
		d.text = jsonString(content)
		return append(dst, Event{Type: TypeText, Text: d.text})
	case "init":
		if sessionID.Type != gjson.String {
			return append(dst, Unparsed(line))
		}
		d.open = true
		d.model, d.session = jsonString(model), jsonString(sessionID)
		report := d.model
		if m := d.resolved[d.session]; m != "" && geminiAuto(d.model) {
			report = m
		}
		return append(dst, Event{Type: TypeSession, SessionID: d.session, Model: report})
	case "tool_use":
		ev := Event{Type: TypeToolUse, ID: jsonString(toolID), Tool: jsonString(toolName), Input: jsonRaw(params)}
		if ev.ID != "" {
			if d.tools == nil || len(d.tools) >= geminiMaxTools {
				d.tools = make(map[string]string)
			}
			d.tools[ev.ID] = ev.Tool
		}
		return append(dst, ev)
	case "tool_result":
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
		if message.Type != gjson.String {
			return append(dst, Unparsed(line))
		}
		return append(dst, agentWarning(jsonString(message)))
	case "result":
		return d.result(dst, status, errv, stats)
	case "":
		return append(dst, Unparsed(line))
	}
	return dst
}

// flush sends the assistant message built from chunks as one text.
func (d *geminiDecoder) flush(dst []Event) []Event {
	if len(d.chunks) == 0 {
		return dst
	}
	d.text = string(d.chunks)
	d.chunks = d.chunks[:0]
	if cap(d.chunks) > geminiMaxChunks {
		d.chunks = nil // do not hold on to the buffer of one huge message
	}
	return append(dst, Event{Type: TypeText, Text: d.text})
}

func (d *geminiDecoder) result(dst []Event, status, errv, stats gjson.Result) []Event {
	if geminiAuto(d.model) {
		if m := geminiTopModel(stats.Get("models")); m != "" && m != d.resolved[d.session] {
			if d.resolved == nil || len(d.resolved) >= geminiMaxTools {
				d.resolved = make(map[string]string)
			}
			d.resolved[d.session] = m
			dst = append(dst, Event{Type: TypeSession, SessionID: d.session, Model: m})
		}
	}
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
		fatal := fatalError(ev.Text, 0)
		ev.Text = fatal.Message
		dst = append(dst, fatal)
	}
	d.open, d.text = false, ""
	clear(d.tools)
	return append(dst, ev)
}

// geminiAuto reports whether init's model leaves the choice to Gemini: none, "auto", "auto-…".
func geminiAuto(model string) bool {
	return model == "" || model == "auto" || strings.HasPrefix(model, "auto-")
}

// geminiTopModel returns the stats.models key with the most total_tokens (the first on a tie),
// "" when no model used any: a turn that failed at once names models it never reached.
func geminiTopModel(models gjson.Result) string {
	var top gjson.Result
	var most int64
	models.ForEach(func(k, m gjson.Result) bool {
		if n := jsonInt(m.Get("total_tokens")); k.Str != "" && n > most {
			top, most = k, n
		}
		return true
	})
	return jsonString(top)
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

// geminiExitMeaning names what Gemini CLI's exit codes stand for, and their failure class.
func geminiExitMeaning(code int) (exitMeaning, bool) {
	switch code {
	case 41:
		return exitMeaning{class: ClassAuth, text: "authentication failed"}, true
	case 42:
		return exitMeaning{class: ClassConfig, text: "input error"}, true
	case 44:
		return exitMeaning{class: ClassConfig, text: "sandbox error"}, true
	case 52:
		return exitMeaning{class: ClassConfig, text: "configuration error"}, true
	case 53:
		return exitMeaning{class: ClassConfig, text: "session turn limit reached"}, true
	case 54:
		return exitMeaning{class: ClassTransient, text: "fatal tool error"}, true
	case 55:
		return exitMeaning{class: ClassConfig, text: "untrusted workspace: pass --skip-trust or set GEMINI_CLI_TRUST_WORKSPACE=true", hint: true}, true
	case 130:
		return exitMeaning{class: ClassTransient, text: "cancelled"}, true
	}
	if code >= 144 && code <= 255 { // process.exit(status): 400 → 144, 503 → 247
		status := code + 256
		return exitMeaning{class: orTransient(statusClass(status)), text: "API error, HTTP status " + strconv.Itoa(status)}, true
	}
	return exitMeaning{}, false
}

// DecodeStderr implements Decoder: a retry line becomes a retry notice.
func (d *geminiDecoder) DecodeStderr(dst []Event, line []byte) []Event {
	d.evidence.stderrLine(line)
	if attempt, status, msg := geminiRetry(line); attempt > 0 {
		ev := retryNotice(msg, status, attempt)
		d.evidence.sawEvents([]Event{ev})
		dst = append(d.flush(dst), ev) // the text so far comes before the retry
	}
	return dst
}

// geminiRetry reads a retry line of Gemini's retryWithBackoff: "Attempt N failed with status S.
// Retrying with backoff...", "Attempt N failed with 429 error (no Retry-After header). Retrying
// with backoff...", "Attempt N failed: <message>. Retrying after 5000ms...". It returns N (0 when
// the line is no retry line), the status the line names, and the line from "Attempt" to the end
// of "Retrying…...".
func geminiRetry(line []byte) (attempt, status int, msg string) {
	s := string(line[:min(len(line), classifyMax)])
	i := strings.Index(s, "Attempt ")
	if i < 0 {
		return 0, 0, ""
	}
	s = s[i:]
	j := len("Attempt ")
	for j < len(s) && j < len("Attempt ")+6 && s[j] >= '0' && s[j] <= '9' {
		attempt = attempt*10 + int(s[j]-'0')
		j++
	}
	rest, ok := strings.CutPrefix(s[j:], " failed")
	r := strings.Index(rest, "Retrying")
	if !ok || r < 0 {
		return 0, 0, ""
	}
	if e := strings.Index(rest[r:], "..."); e >= 0 {
		rest = rest[:r+e+len("...")]
	}
	if after, ok := strings.CutPrefix(rest, " with status "); ok {
		status, _ = strconv.Atoi(after[:len(after)-len(strings.TrimLeft(after, "0123456789"))])
	} else if strings.HasPrefix(rest, " with 429 error") {
		status = 429
	}
	return attempt, status, s[:j] + " failed" + rest
}

// End implements Decoder.
func (d *geminiDecoder) End(dst []Event, exit Exit) ([]Event, Failure) {
	dst = d.flush(dst)
	if d.open {
		dst = append(dst, cutOffResult(exit, geminiExitMeaning))
	}
	f := d.evidence.failure(exit, geminiExitMeaning)
	*d = geminiDecoder{open: true, chunks: d.chunks[:0], resolved: d.resolved}
	return dst, f
}
