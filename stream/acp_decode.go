package stream

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// What the client reads: the agent's answers, requests and session updates, as events.

// Decode implements Decoder.
func (a *ACP) Decode(dst []Event, line []byte) []Event {
	root, blank, ok := jsonLine(line)
	if !ok {
		if blank {
			return dst
		}
		if a.phase == acpInitializing {
			a.fail(0, "it wrote something other than JSON-RPC: "+oneLine(string(line)))
		}
		return append(dst, Unparsed(line))
	}
	var id, method, params, result, errv gjson.Result
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "id":
			id = v
		case "method":
			method = v
		case "params":
			params = v
		case "result":
			result = v
		case "error":
			errv = v
		}
		return true
	})
	n := len(dst)
	switch {
	case method.Type == gjson.String && id.Exists():
		dst = a.request(dst, id, method.Str, params)
	case method.Type == gjson.String:
		dst = a.notification(dst, line, method.Str, params)
	case id.Type == gjson.Number && (result.Exists() || errv.IsObject()):
		dst = a.answer(dst, line, id.Int(), result, errv)
	default:
		if a.phase == acpInitializing {
			a.fail(0, "it wrote JSON that is no JSON-RPC message: "+oneLine(string(line)))
		}
		dst = append(dst, Unparsed(line))
	}
	if a.promptID == 0 {
		// No turn open: nothing more of the message is coming before the next turn, so a
		// late update lands now, in order.
		dst = a.flushText(dst)
	}
	a.evidence.sawEvents(dst[n:])
	return dst
}

// request handles a request of the agent.
func (a *ACP) request(dst []Event, id gjson.Result, method string, params gjson.Result) []Event {
	rawID := []byte(id.Raw)
	if method != "session/request_permission" {
		a.refuse(rawID, -32601, "method not found: agt offers no "+method)
		return dst
	}
	dst = a.flushText(dst)
	call := params.Get("toolCall")
	t, toolID := a.tool(call)
	t.asked = true
	dst = a.startTool(dst, t, toolID)
	key := jsonString(id)
	if key == "" {
		key = strings.Clone(id.Raw) // kept: the line's buffer is reused
	}
	if a.asks == nil || len(a.asks) >= acpMaxTools || a.askBytes >= acpMaxKept {
		a.asks, a.askBytes = make(map[string]acpAsk), 0
	}
	options := jsonRaw(params.Get("options"))
	a.forgetAsk(key)
	ask := acpAsk{rawID: rawID, options: options, tool: t.toolName()}
	a.asks[key] = ask
	a.askBytes += len(ask.options) + len(ask.rawID) + len(ask.tool)
	return append(dst, Event{Type: TypePermission, ID: key, Tool: t.toolName(), Input: t.toolInput(), Options: options})
}

// notification handles a notification of the agent.
func (a *ACP) notification(dst []Event, line []byte, method string, params gjson.Result) []Event {
	switch {
	case method == "session/update":
		return a.update(dst, line, params.Get("update"))
	case strings.HasPrefix(method, "_"):
		return dst // an extension (claude-agent-acp's _auth/status_update)
	}
	return append(dst, Unparsed(line))
}

// update decodes one session/update.
func (a *ACP) update(dst []Event, line []byte, u gjson.Result) []Event {
	kind := u.Get("sessionUpdate").Str
	if a.replaying {
		return dst // session/load replays what was said before: no new output
	}
	switch kind {
	case "agent_message_chunk", "agent_thought_chunk":
		thought := kind == "agent_thought_chunk"
		id := u.Get("messageId").Str
		if a.chunk.text.Len() > 0 && (a.chunk.thought != thought || a.chunk.id != id) {
			dst = a.flushText(dst)
		}
		content := u.Get("content")
		if content.Get("type").Str != "text" {
			return dst
		}
		a.chunk.thought, a.chunk.id = thought, strings.Clone(id)
		a.chunk.text.WriteString(content.Get("text").Str)
		if a.chunk.text.Len() >= acpMaxText {
			dst = a.flushText(dst)
		}
		return dst
	case "current_mode_update":
		a.mode = strings.Clone(u.Get("currentModeId").Str)
		return dst
	case "user_message_chunk", "available_commands_update",
		"config_option_update", "session_info_update", "compaction_update", "compaction_summary_chunk":
		return dst
	}
	dst = a.flushText(dst)
	switch kind {
	case "tool_call", "tool_call_update":
		t, id := a.tool(u)
		status := u.Get("status")
		// A call runs once its status says so, or (claude-agent-acp, which announces a call
		// pending and then sends its input without a status) once its input comes.
		if status.Exists() && status.Str != "pending" || !status.Exists() && kind == "tool_call_update" && t.input != nil {
			dst = a.startTool(dst, t, id)
			dst = a.actedAlone(dst, t)
		}
		if (status.Str == "completed" || status.Str == "failed") && !t.done {
			t.done = true
			dst = append(dst, Event{Type: TypeToolResult, ID: id, Tool: t.toolName(), OK: status.Str == "completed", Output: acpOutput(u)})
		}
		return dst
	case "plan":
		a.plans++
		id := "plan-" + strconv.Itoa(a.plans)
		input := append(append([]byte(`{"entries":`), u.Get("entries").Raw...), '}')
		if !json.Valid(input) {
			input = []byte(`{"entries":[]}`)
		}
		return append(dst, Event{Type: TypeToolUse, ID: id, Tool: "plan", Input: input},
			Event{Type: TypeToolResult, ID: id, Tool: "plan", OK: true})
	case "usage_update":
		if c := u.Get("cost.amount"); c.Type == gjson.Number {
			a.cost, a.haveCost = c.Num, true
		}
		return dst
	case "notice":
		msg := jsonString(u.Get("title"))
		if d := u.Get("description").Str; d != "" {
			msg += ": " + d // a string of its own
		}
		if msg == "" {
			return dst
		}
		return append(dst, acpNotice(msg))
	}
	return append(dst, Unparsed(line))
}

// startTool emits the tool_use of a call once.
func (a *ACP) startTool(dst []Event, t *acpTool, id string) []Event {
	if t.used {
		return dst
	}
	t.used = true
	before := t.size()
	t.name, t.input = t.toolName(), t.toolInput() // as the call stands now, for good
	a.toolBytes += t.size() - before
	return append(dst, Event{Type: TypeToolUse, ID: id, Tool: t.name, Input: t.input})
}

// flushText emits the message being joined.
func (a *ACP) flushText(dst []Event) []Event {
	if a.chunk.text.Len() == 0 {
		return dst
	}
	text := a.chunk.text.String()
	a.chunk.text = strings.Builder{}
	if !a.chunk.thought {
		a.last = text
	}
	return append(dst, Event{Type: TypeText, Text: text, Thought: a.chunk.thought})
}

// answer handles the answer to a request of ours.
func (a *ACP) answer(dst []Event, line []byte, id int64, result, errv gjson.Result) []Event {
	method, ok := a.calls[id]
	if !ok {
		return append(dst, Unparsed(line))
	}
	delete(a.calls, id)
	if errv.IsObject() {
		return a.refused(dst, method, id, errv)
	}
	switch method {
	case "initialize":
		a.initialized(result)
	case "session/new", "session/load", "session/resume":
		// After session/load the replay goes on until the next prompt: Gemini answers first
		// and replays after (its streamHistory is not awaited), where the protocol has the
		// replay come before the answer.
		sid := result.Get("sessionId")
		if method != "session/new" {
			sid = gjson.Result{Type: gjson.String, Str: a.resume}
		}
		if sid.Type != gjson.String || sid.Str == "" {
			a.fail(0, method+" answered without a sessionId: "+oneLine(string(line)))
			return append(dst, Unparsed(line))
		}
		a.sessionID = jsonString(sid)
		if method == "session/new" && a.resume != "" {
			dst = append(dst, Event{Type: TypeError, Source: SourceAgent, Class: ClassSession,
				Message: "the agent offers neither session/load nor session/resume: session " + a.resume + " is not resumed; a new session instead"})
			a.resume = ""
		}
		model := result.Get("models.currentModelId").Str
		dst = append(dst, Event{Type: TypeSession, SessionID: a.sessionID, Model: strings.Clone(model), Cwd: a.cwd})
		if mode := a.askingMode(result); mode != "" {
			a.setMode(mode) // the prompts wait for the mode that asks
			return dst
		}
		a.open()
	case "session/set_mode":
		dst = a.modeSet(dst, "")
	case "session/prompt":
		if id == a.promptID {
			dst = a.result(dst, result)
		}
	}
	return dst
}

// initialized checks the answer to initialize and opens the session.
func (a *ACP) initialized(result gjson.Result) {
	v := result.Get("protocolVersion")
	switch {
	case !result.IsObject() || v.Type != gjson.Number:
		a.fail(0, "its answer to initialize has no protocolVersion: "+oneLine(result.Raw))
		return
	case v.Int() != ACPVersion:
		a.fail(0, fmt.Sprintf("it speaks ACP version %s; agt speaks %d", v.Raw, ACPVersion))
		return
	}
	caps := result.Get("agentCapabilities")
	a.canLoad = caps.Get("loadSession").Type == gjson.True
	a.canResume = caps.Get("sessionCapabilities.resume").IsObject()
	a.phase = acpOpening
	a.openSession()
}

// openSession loads or resumes the session to resume when the agent can, else opens a new one.
func (a *ACP) openSession() {
	params := AppendString([]byte(`{"cwd":`), a.cwd)
	params = append(params, `,"mcpServers":[]`...)
	switch {
	case a.resume != "" && a.canLoad:
		a.replaying = true
		params = AppendString(append(params, `,"sessionId":`...), a.resume)
		a.call("session/load", append(params, '}'))
	case a.resume != "" && a.canResume:
		params = AppendString(append(params, `,"sessionId":`...), a.resume)
		a.call("session/resume", append(params, '}'))
	default:
		a.call("session/new", append(params, '}'))
	}
}

// Resumed reports whether the session the run was to resume was taken up; false when the agent
// offers neither session/load nor session/resume, or refused them (the session is new).
func (a *ACP) Resumed() bool { return a.resume != "" && a.sessionID == a.resume }

// refused handles an error answer to a request of ours.
func (a *ACP) refused(dst []Event, method string, id int64, errv gjson.Result) []Event {
	code := int(jsonInt(errv.Get("code")))
	msg := strings.Clone(errv.Get("message").Str)
	if d := errv.Get("data"); d.Exists() && d.Type == gjson.String && d.Str != "" {
		msg += ": " + d.Str
	}
	ev := fatalError(msg, acpStatus(code))
	if code == -32000 {
		ev.Class = ClassAuth // "authentication required"
	}
	ev.Message = method + " failed: " + ev.Message
	ev.Code = &code
	switch method {
	case "initialize", "session/new":
		a.fail(code, fmt.Sprintf("%s (code %d)", ev.Message, code))
	case "session/load", "session/resume":
		// The session is gone: a new one instead, which is no failure of the run, but one
		// that knows nothing of what was said before.
		a.replaying = false
		ev.Fatal, ev.Class = false, ClassSession
		ev.Message = fmt.Sprintf("%s of session %s failed: %s; a new session instead, which has none of the conversation so far", method, a.resume, strings.TrimPrefix(ev.Message, method+" failed: "))
		a.resume = ""
		a.call("session/new", append(AppendString([]byte(`{"cwd":`), a.cwd), `,"mcpServers":[]}`...))
	case "session/set_mode":
		return a.modeSet(dst, ev.Message)
	case "session/prompt":
		if id != a.promptID {
			return dst
		}
		dst = a.flushText(dst)
		dst = append(dst, ev)
		a.promptID = 0
		a.costAtTurn = a.cost
		if ev.Class == ClassAuth || ev.Class == ClassConfig && missingModel(ev.Message) {
			// No later prompt can go better (a bad key, a model that does not exist): the run
			// ends, failed, with the agent's words (claude-agent-acp says what is wrong in the
			// turn's text, "Invalid API key"). Other errors leave the conversation open.
			msg := ev.Message
			if said := oneLine(a.last); said != "" {
				msg = said + " (" + msg + ")"
			}
			a.failClass(code, ev.Class, msg)
		}
		return append(dst, Event{Type: TypeResult, Text: ev.Message, Usage: &Usage{}})
	default:
		ev.Fatal, ev.Class = false, ""
	}
	return append(dst, ev)
}

// acpStatus is the HTTP status a JSON-RPC error code stands for, when it is one: Gemini passes
// the model API's status on as the code.
func acpStatus(code int) int {
	if code >= 400 && code <= 599 {
		return code
	}
	return 0
}

// result is the result of the turn that the answer to session/prompt ends.
func (a *ACP) result(dst []Event, result gjson.Result) []Event {
	dst = a.flushText(dst)
	// Calls the agent announced and never started (asked about nothing, never ran).
	for id, t := range a.tools {
		if t.done || t.used {
			a.forgetTool(id)
		}
	}
	reason := jsonString(result.Get("stopReason"))
	ev := Event{Type: TypeResult, OK: reason == "end_turn", Usage: acpUsage(result)}
	if ev.OK {
		ev.Text = a.last
	} else {
		ev.Text = reason
		if reason == "" {
			ev.Text = "the agent ended the turn without a stopReason"
		}
	}
	if a.haveCost {
		c := a.cost - a.costAtTurn
		if c < 0 {
			c = a.cost // the total started over
		}
		ev.CostUSD = &c
	}
	a.costAtTurn, a.promptID, a.last = a.cost, 0, ""
	return append(dst, ev)
}

// acpUsage reads the turn's tokens: PromptResponse.usage (unstable; claude-agent-acp and
// opencode send it), else _meta.quota.token_count (Gemini).
func acpUsage(result gjson.Result) *Usage {
	var u Usage
	if r := result.Get("usage"); r.IsObject() {
		u.InputTokens = jsonInt(r.Get("inputTokens"))
		u.OutputTokens = jsonInt(r.Get("outputTokens"))
		u.CacheReadTokens = jsonInt(r.Get("cachedReadTokens"))
		u.CacheWriteTokens = jsonInt(r.Get("cachedWriteTokens"))
	} else if r := result.Get("_meta.quota.token_count"); r.IsObject() {
		u.InputTokens = jsonInt(r.Get("input_tokens")) + jsonInt(r.Get("inputTokens"))
		u.OutputTokens = jsonInt(r.Get("output_tokens")) + jsonInt(r.Get("outputTokens"))
	}
	u.InputTokens, u.OutputTokens = nonNegative(u.InputTokens), nonNegative(u.OutputTokens)
	u.CacheReadTokens, u.CacheWriteTokens = nonNegative(u.CacheReadTokens), nonNegative(u.CacheWriteTokens)
	return &u
}

// DecodeStderr implements Decoder: every line is evidence of a failure; one that says the agent
// retries a failed model request (opencode acp, run with --print-logs) is a retry notice of the
// turn under way. The other ACP agents say nothing while they retry (see docs/compat.md).
func (a *ACP) DecodeStderr(dst []Event, line []byte) []Event {
	a.evidence.stderrLine(line)
	if ev, ok := opencodeRetry(line, a.retries+1); ok && a.promptID != 0 {
		a.retries++
		a.evidence.sawEvents([]Event{ev})
		dst = append(a.flushText(dst), ev)
	}
	return dst
}

// End implements Decoder: a turn left open gets a failed result; a connection that failed says
// why.
func (a *ACP) End(dst []Event, exit Exit) ([]Event, Failure) {
	dst = a.flushText(dst)
	if a.promptID != 0 {
		dst = append(dst, cutOffResult(exit, nil))
	}
	f := a.evidence.failure(exit, nil)
	switch {
	case a.err != "" && a.errClass != "":
		// The client ended the run for a failure no restart cures: however the agent then
		// exited (at the end of its input, 0), that failure is the run's.
		f = Failure{a.errClass, a.err}
	case a.err != "" && !exit.Clean() && (f.Class == "" || f.Class == ClassTransient):
		f = Failure{ClassTransient, a.err}
		if a.errCode == -32000 {
			f.Class = ClassAuth
		}
	}
	name, version := a.name, a.version
	*a = ACP{name: name, version: version}
	return dst, f
}
