package stream

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// NewClaude returns the decoder of Claude Code's stream-json output
// (claude -p --output-format stream-json --verbose, with or without --input-format stream-json).
//
// It reads:
//   - system/init → session (only when the session, model or cwd changed: stdin mode repeats
//     init at every turn); system/api_retry → a retry notice (error, fatal false, attempt, status
//     from error_status, class); system/permission_denied → permission with decision deny (id is
//     the tool_use_id, input the tool_use's when it was small enough to keep);
//   - assistant → one event per content block: text, or tool_use (also server and MCP tool
//     blocks); thinking blocks are skipped, and so is the synthetic message the CLI writes for an
//     API error (is_api_error_message, or an error category on a message of model <synthetic>),
//     whose text the failed result repeats: its error category (authentication_failed,
//     rate_limit, …) is kept to classify the failure;
//   - user → tool_result for every tool_result block; the content, a string or an array of
//     blocks, is kept as sent; user prompts and replays are skipped;
//   - stream_event (--include-partial-messages) → nothing: the assistant line that follows each
//     block carries the complete text, so token deltas would only repeat it;
//   - control_request can_use_tool → permission (id is the request_id to answer, options the
//     permission_suggestions as sent, no decision);
//   - result → a permission with decision deny for each entry of permission_denials not already
//     reported by system/permission_denied, a fatal error when the turn failed (class from
//     api_error_status, the message, the API error category; error_max_turns and
//     error_max_budget_usd are config: the user's own limits), then result with steps =
//     num_turns. is_error decides, not subtype (API and auth failures come as subtype success
//     with is_error true); subtype only when is_error is absent.
//
// Every other type and subtype is skipped (keep_alive, rate_limit_event, tool_progress,
// control_response, control_cancel_request, the other system subtypes, …). Stderr only serves the
// failure: "No conversation found with session ID" (resume of a session never saved) is session,
// "Session ID … is already in use" config, unknown options and flag conflicts config.
//
// Cost and usage are per turn. The cost is the sum of model_usage_since_last_result[*].costUSD;
// without that field it is total_cost_usd minus the previous result's, because total_cost_usd is
// cumulative per process (and a resumed session starts from the transcript's total, which only
// model_usage_since_last_result gets right). Tokens come from model_usage_since_last_result too
// (it counts subagents), else from result.usage.
func NewClaude() Decoder { return &claudeDecoder{} }

type claudeDecoder struct {
	open                  bool                  // a turn is under way: End synthesizes its result
	sessionID, model, cwd string                // of the last session event
	tools                 map[string]claudeTool // tool_use id → the call, for its result or denial
	denied                map[string]bool       // tool_use ids whose denial was sent this turn
	apiError              string                // category of the turn's synthetic API error message
	lastTotal             float64               // total_cost_usd of the previous result, if any
	haveTotal             bool
	evidence              // what the run showed of why it may fail; DecodeStderr records stderr
}

// claudeTool is a tool call waiting for its result: its name, and its input when it is at most
// claudeMaxKeptInput bytes (a denial reports it; the tool_use event shares the bytes).
type claudeTool struct {
	name  string
	input json.RawMessage
}

// claudeMaxTools bounds the tool calls kept for results that never come, and the denials kept
// per turn; claudeMaxKeptInput bounds each kept input.
const (
	claudeMaxTools     = 4096
	claudeMaxKeptInput = 8 << 10
)

// claudeLine holds the top-level fields of one line, read in a single pass.
type claudeLine struct {
	typ, subtype   string
	message        gjson.Result // object on assistant/user, string on system/permission_denied
	event, request gjson.Result
	sessionID      gjson.Result
	model, cwd     gjson.Result
	requestID      gjson.Result
	apiError       bool // is_api_error_message

	content gjson.Result // message.content, of assistant and user lines

	// result
	isError, result, errors, terminalReason gjson.Result
	totalCost, sinceLast, usage             gjson.Result
	numTurns, durationMS                    gjson.Result

	apiErrorStatus, denials gjson.Result

	// system/api_retry, system/permission_denied; error is also the assistant's error category
	attempt, maxRetries, retryDelay, errorStatus, errorName, toolName, toolUseID gjson.Result
}

// Decode implements Decoder.
func (d *claudeDecoder) Decode(dst []Event, line []byte) []Event {
	root, blank, ok := jsonLine(line)
	if !ok {
		if blank {
			return dst
		}
		return append(dst, Unparsed(line))
	}
	var l claudeLine
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "type":
			l.typ = v.Str
		case "subtype":
			l.subtype = v.Str
		case "message":
			l.message = v
		case "event":
			l.event = v
		case "request":
			l.request = v
		case "request_id":
			l.requestID = v
		case "session_id":
			l.sessionID = v
		case "model":
			l.model = v
		case "cwd":
			l.cwd = v
		case "is_api_error_message":
			l.apiError = jsonTrue(v)
		case "is_error":
			l.isError = v
		case "result":
			l.result = v
		case "errors":
			l.errors = v
		case "terminal_reason":
			l.terminalReason = v
		case "total_cost_usd", "total_cost":
			l.totalCost = v
		case "model_usage_since_last_result":
			l.sinceLast = v
		case "usage":
			l.usage = v
		case "num_turns":
			l.numTurns = v
		case "duration_ms":
			l.durationMS = v
		case "attempt":
			l.attempt = v
		case "max_retries":
			l.maxRetries = v
		case "retry_delay_ms":
			l.retryDelay = v
		case "error_status":
			l.errorStatus = v
		case "error":
			l.errorName = v
		case "tool_name":
			l.toolName = v
		case "tool_use_id":
			l.toolUseID = v
		case "api_error_status":
			l.apiErrorStatus = v
		case "permission_denials":
			l.denials = v
		}
		return true
	})
	if l.typ == "assistant" || l.typ == "user" {
		l.content = l.message.Get("content") // once: a thinking line can be a megabyte
	}
	n := len(dst)
	switch l.typ {
	case "system":
		dst = d.system(dst, &l)
	case "assistant":
		d.open = true
		dst = d.assistant(dst, &l)
	case "user":
		d.open = true
		dst = d.user(dst, &l)
	case "stream_event":
		d.open = true // deltas only: the complete block follows as an assistant line
	case "control_request":
		dst = d.controlRequest(dst, &l)
	case "result":
		dst = d.result(dst, &l)
	case "":
		return append(dst, Unparsed(line))
	}
	if len(dst) == n && l.typ != "" && claudeMalformed(&l) {
		return append(dst, Unparsed(line))
	}
	d.evidence.sawEvents(dst[n:])
	return dst
}

// claudeMalformed reports a known line type without the field that carries its meaning.
func claudeMalformed(l *claudeLine) bool {
	switch l.typ {
	case "assistant":
		return !l.content.IsArray()
	case "user":
		return !l.content.IsArray() && l.content.Type != gjson.String
	case "stream_event":
		return !l.event.IsObject()
	case "result":
		return !jsonIsBool(l.isError) && l.subtype == ""
	case "system":
		return l.subtype == "init" && l.sessionID.Type != gjson.String
	}
	return false
}

func (d *claudeDecoder) system(dst []Event, l *claudeLine) []Event {
	switch l.subtype {
	case "init":
		if l.sessionID.Type != gjson.String {
			return dst
		}
		d.open = true
		if l.sessionID.Str == d.sessionID && l.model.Str == d.model && l.cwd.Str == d.cwd {
			return dst
		}
		d.sessionID, d.model, d.cwd = jsonString(l.sessionID), jsonString(l.model), jsonString(l.cwd)
		return append(dst, Event{Type: TypeSession, SessionID: d.sessionID, Model: d.model, Cwd: d.cwd})
	case "api_retry":
		return append(dst, retryNotice(claudeRetryText(l), int(jsonInt(l.errorStatus)), max(int(jsonInt(l.attempt)), 1)))
	case "permission_denied":
		if l.toolUseID.Str == "" && l.toolName.Str == "" {
			return dst // names no call
		}
		return d.deny(dst, l.toolUseID, l.toolName, gjson.Result{})
	}
	return dst
}

// deny appends a permission event with decision deny for a tool call, once per tool_use_id and
// turn: system/permission_denied and result.permission_denials report the same denial.
func (d *claudeDecoder) deny(dst []Event, id, tool, input gjson.Result) []Event {
	ev := Event{Type: TypePermission, Decision: "deny", ID: jsonString(id), Tool: jsonString(tool), Input: jsonRaw(input)}
	if ev.ID != "" {
		if d.denied[ev.ID] {
			return dst
		}
		if d.denied == nil || len(d.denied) >= claudeMaxTools {
			d.denied = make(map[string]bool)
		}
		d.denied[ev.ID] = true
		if call, ok := d.tools[ev.ID]; ok {
			if ev.Tool == "" {
				ev.Tool = call.name
			}
			if ev.Input == nil {
				ev.Input = call.input
			}
		}
	}
	return append(dst, ev)
}

// claudeRetryText describes a system/api_retry line: "API request failed (529 overloaded),
// retry 1/1 in 520 ms".
func claudeRetryText(l *claudeLine) string {
	b := make([]byte, 0, 96)
	b = append(b, "API request failed"...)
	if l.errorStatus.Type == gjson.Number || l.errorName.Str != "" {
		b = append(b, " ("...)
		if l.errorStatus.Type == gjson.Number {
			b = append(b, l.errorStatus.Raw...)
			if l.errorName.Str != "" {
				b = append(b, ' ')
			}
		}
		b = append(b, l.errorName.Str...)
		b = append(b, ')')
	}
	if l.attempt.Type == gjson.Number {
		b = append(b, ", retry "...)
		b = append(b, l.attempt.Raw...)
		if l.maxRetries.Type == gjson.Number {
			b = append(b, '/')
			b = append(b, l.maxRetries.Raw...)
		}
	}
	if l.retryDelay.Type == gjson.Number {
		b = append(b, " in "...)
		b = strconv.AppendInt(b, int64(math.Round(l.retryDelay.Num)), 10) // 2.1.330 sends 561.298…
		b = append(b, " ms"...)
	}
	return string(b)
}

func (d *claudeDecoder) assistant(dst []Event, l *claudeLine) []Event {
	// 2.1.330 flags the synthetic message; 2.1.197 only names the category and the model.
	if l.apiError || l.errorName.Str != "" && l.message.Get("model").Str == "<synthetic>" {
		if l.errorName.Type == gjson.String {
			d.apiError = jsonString(l.errorName)
		}
		return dst
	}
	l.content.ForEach(func(_, block gjson.Result) bool {
		dst = d.block(dst, block)
		return true
	})
	return dst
}

// block decodes one content block of an assistant or user message.
func (d *claudeDecoder) block(dst []Event, block gjson.Result) []Event {
	if t := block.Get("type").Str; t == "thinking" || t == "redacted_thinking" {
		return dst // before reading every field: thinking text is long and skipped
	}
	var typ, id, name, text, input, content, isError gjson.Result
	block.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "type":
			typ = v
		case "id":
			id = v
		case "name":
			name = v
		case "text":
			text = v
		case "input":
			input = v
		case "tool_use_id":
			id = v
		case "content":
			content = v
		case "is_error":
			isError = v
		}
		return true
	})
	switch t := typ.Str; {
	case t == "text":
		if text.Str == "" {
			return dst
		}
		return append(dst, Event{Type: TypeText, Text: jsonString(text)})
	case t == "tool_use" || t == "server_tool_use" || t == "mcp_tool_use":
		ev := Event{Type: TypeToolUse, ID: jsonString(id), Tool: jsonString(name), Input: jsonRaw(input)}
		d.remember(ev.ID, ev.Tool, ev.Input)
		return append(dst, ev)
	case strings.HasSuffix(t, "tool_result"):
		ev := Event{Type: TypeToolResult, ID: jsonString(id), OK: !jsonTrue(isError), Output: jsonRaw(content)}
		if t != "tool_result" && content.IsObject() {
			// Server tool results report failure as a content block of type *_error.
			if strings.HasSuffix(content.Get("type").Str, "_error") {
				ev.OK = false
			}
		}
		ev.Tool = d.forget(id.Str)
		return append(dst, ev)
	}
	return dst
}

func (d *claudeDecoder) remember(id, tool string, input json.RawMessage) {
	if id == "" {
		return
	}
	if d.tools == nil || len(d.tools) >= claudeMaxTools {
		d.tools = make(map[string]claudeTool)
	}
	if len(input) > claudeMaxKeptInput {
		input = nil
	}
	d.tools[id] = claudeTool{tool, input}
}

func (d *claudeDecoder) forget(id string) string {
	call, ok := d.tools[id]
	if ok {
		delete(d.tools, id)
	}
	return call.name
}

func (d *claudeDecoder) user(dst []Event, l *claudeLine) []Event {
	if !l.content.IsArray() {
		return dst // a prompt as plain text
	}
	l.content.ForEach(func(_, block gjson.Result) bool {
		if strings.HasSuffix(block.Get("type").Str, "tool_result") {
			dst = d.block(dst, block)
		}
		return true
	})
	return dst
}

func (d *claudeDecoder) controlRequest(dst []Event, l *claudeLine) []Event {
	var subtype, tool, input, suggestions, toolUseID gjson.Result
	l.request.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "tool_use_id":
			toolUseID = v
		case "subtype":
			subtype = v
		case "tool_name":
			tool = v
		case "input":
			input = v
		case "permission_suggestions":
			suggestions = v
		}
		return true
	})
	if subtype.Str != "can_use_tool" {
		return dst
	}
	d.open = true
	if id := toolUseID.Str; id != "" {
		// Whoever answers this request logs its decision: a denial of the call that the
		// result's permission_denials repeats is not a second event.
		if d.denied == nil || len(d.denied) >= claudeMaxTools {
			d.denied = make(map[string]bool)
		}
		d.denied[strings.Clone(id)] = true // id is in the line, whose buffer the next one reuses
	}
	in := jsonRaw(input)
	if call, ok := d.tools[toolUseID.Str]; ok && len(call.input) > 0 && (in == nil || input.IsObject() && len(input.Map()) == 0) {
		// Claude Code 2.1.332 asks about ExitPlanMode with an empty input: the plan the
		// person decides on is in the call the model made.
		in = call.input
	}
	return append(dst, Event{
		Type:    TypePermission,
		ID:      jsonString(l.requestID),
		Tool:    jsonString(tool),
		Input:   in,
		Options: jsonRaw(suggestions),
	})
}

// End implements Decoder.
func (d *claudeDecoder) End(dst []Event, exit Exit) ([]Event, Failure) {
	if d.open {
		dst = append(dst, cutOffResult(exit, nil))
	}
	f := d.evidence.failure(exit, nil)
	*d = claudeDecoder{}
	return dst, f
}
