package stream

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// ACPVersion is the highest ACP protocol version agt speaks, the one it offers in initialize.
// An agent may answer with a lower one it prefers; agt accepts 1.
//
// ACP v2 (a draft in the SDK) adds the session/update kind state_update {state: running |
// requires_action | idle}. Speaking it is a small change: offer 2 here, accept it in
// initialized, and in update map running to a turn under way (no event: activity),
// requires_action to the permission request that carries the detail, idle to nothing (the
// prompt's response still ends the turn). Until then a state_update lands as unparsed.
const ACPVersion = 1

// ACP is the client side of the Agent Client Protocol (JSON-RPC 2.0, one JSON object per line,
// over the agent's stdin and stdout). It is pure: it decodes what the agent writes into events
// and keeps the lines agt must write back (Lines), and never does I/O itself. The supervisor
// feeds it stdout through Decode and tells it what a person asked for (Prompt, Answer, Cancel).
//
// The conversation: initialize (offering ACPVersion and no fs or terminal capability, since agt
// serves neither), then session/new {cwd, mcpServers: []} (or session/load, else
// session/resume, of the session to resume when the agent advertises it), then session/prompt
// for the prompt and for every message after it.
//
// It reads:
//   - the answer to session/new, session/load, session/resume → session;
//   - session/update: agent_message_chunk → one text event per message (chunks joined until
//     the message id changes, another kind of update comes or the turn ends);
//     agent_thought_chunk → likewise a text event marked thought; tool_call and
//     tool_call_update → tool_use once the call starts (in_progress, done, or asked about),
//     with the input it had by then, and tool_result when its status is completed or failed;
//     plan → a tool_use of the tool "plan" with the entries, and its tool_result;
//     usage_update → the session's cost, of which each result reports the growth; notice → a
//     warning; user_message_chunk, available_commands_update, current_mode_update,
//     config_option_update, session_info_update and the compaction updates → nothing; any
//     other kind → unparsed. While session/load replays the past, its updates are skipped;
//   - session/request_permission → permission (id is the request's JSON-RPC id, options the
//     agent's options as sent), answered by Answer or Cancel. Any other request of the agent
//     (fs, terminal: capabilities agt does not claim) is refused with -32601;
//   - the answer to session/prompt → result: stopReason end_turn is ok, any other stopReason
//     (refusal, max_tokens, max_turn_requests, cancelled) is not, with the reason as text;
//     usage from the answer's usage (or Gemini's _meta.quota.token_count); an error answer →
//     a fatal error event with the JSON-RPC code and message, then a failed result;
//   - other error answers → error events with the code and message; notifications whose
//     method starts with "_" (extensions) → nothing.
//
// The agent's request ids are its own id space: a line with a method is a request (or a
// notification without an id); a line without one answers a request of ours, by its id.
type ACP struct {
	cwd, resume string // where the session runs; the session to load or resume, if any
	name        string // the client name agt gives in initialize
	version     string

	nextID  int64
	calls   map[int64]string // requests of ours awaiting an answer: id → method
	out     [][]byte         // lines to write to the agent
	phase   int
	err     string // why the connection failed, once it did
	errCode int

	canLoad, canResume bool
	sessionID          string
	promptID           int64    // the open session/prompt's id; 0 when no turn is open
	held               []string // prompts given before the session was open
	replaying          bool     // session/load replays the conversation: its updates are the past
	chunk              acpChunk // the message being joined
	last               string   // the turn's last message text, the result's text
	tools              map[string]*acpTool
	asks               map[string]acpAsk // pending permission requests by id text
	cost, costAtTurn   float64           // the session's cumulative cost; where it stood when the turn began
	haveCost           bool
	plans              int
	evidence
}

// Connection phases.
const (
	acpIdle         = iota // Connect not called
	acpInitializing        // initialize sent
	acpOpening             // initialize answered; the session is being opened
	acpReady               // the session is open
	acpFailed              // the connection failed: Failure says why
)

type acpChunk struct {
	thought bool
	id      string
	text    strings.Builder
}

type acpTool struct {
	name, title string
	input       json.RawMessage
	used, done  bool
}

type acpAsk struct {
	rawID   []byte          // the request's id as the agent wrote it
	options json.RawMessage // the options offered
	tool    string
}

// acpMaxTools bounds the tool calls and permission requests kept; acpMaxText bounds a message
// being joined (a longer one is emitted in pieces).
const (
	acpMaxTools = 4096
	acpMaxText  = 1 << 20
)

// NewACP returns the ACP client for one run of an agent. name and version are what agt calls
// itself in initialize.
func NewACP(name, version string) *ACP {
	return &ACP{name: name, version: version}
}

// Connect starts the conversation: it queues initialize. cwd is the session's directory;
// resume, when not "", the session to load (or resume) instead of opening a new one.
func (a *ACP) Connect(cwd, resume string) {
	a.cwd, a.resume = cwd, resume
	a.phase = acpInitializing
	params := fmt.Appendf(nil, `{"protocolVersion":%d,"clientCapabilities":{"fs":{"readTextFile":false,"writeTextFile":false},"terminal":false},"clientInfo":{"name":`, ACPVersion)
	params = AppendString(params, a.name)
	params = AppendString(append(params, `,"version":`...), a.version)
	a.call("initialize", append(params, "}}"...))
}

// Lines returns the lines to write to the agent's stdin, in order, each ending in a newline,
// and forgets them.
func (a *ACP) Lines() [][]byte {
	out := a.out
	a.out = nil
	return out
}

// Handshake reports how the connection stands: answered once initialize was answered well (the
// agent speaks ACP); failed, a one-line reason, once the connection failed (initialize refused
// or malformed, a version agt does not speak, no session).
func (a *ACP) Handshake() (answered bool, failed string) {
	return a.phase == acpOpening || a.phase == acpReady, a.err
}

// Ready reports whether the session is open: prompts go out as they come.
func (a *ACP) Ready() bool { return a.phase == acpReady }

// FailureCode is the JSON-RPC code of the error that failed the connection, 0 for none.
func (a *ACP) FailureCode() int { return a.errCode }

// Open reports whether a turn is under way: a prompt was sent (or waits for the session) and
// not answered yet.
func (a *ACP) Open() bool { return a.promptID != 0 || len(a.held) > 0 }

// Prompt sends a user message as the next turn; before the session is open it waits for it.
func (a *ACP) Prompt(text string) {
	if a.phase != acpReady {
		a.held = append(a.held, text)
		return
	}
	params := AppendString([]byte(`{"sessionId":`), a.sessionID)
	params = AppendString(append(params, `,"prompt":[{"type":"text","text":`...), text)
	a.promptID = a.call("session/prompt", append(params, "}]}"...))
}

// Answer answers the permission request id: allow picks the option of kind allow_once (or
// allow_always when always, or when it is the only allowing one), deny the option of kind
// reject_once (else reject_always; with no rejecting option the request is cancelled). It
// returns the option id chosen, or why it could not answer.
func (a *ACP) Answer(id string, allow, always bool) (string, error) {
	ask, ok := a.asks[id]
	if !ok {
		return "", fmt.Errorf("no pending permission request %q", id)
	}
	kinds := []string{"reject_once", "reject_always"}
	switch {
	case allow && always:
		kinds = []string{"allow_always", "allow_once"}
	case allow:
		kinds = []string{"allow_once", "allow_always"}
	}
	option := acpOption(ask.options, kinds)
	if option == "" && allow {
		return "", fmt.Errorf("the agent offered no option of kind %s for request %s", strings.Join(kinds, " or "), id)
	}
	delete(a.asks, id)
	if option == "" {
		a.respond(ask.rawID, []byte(`{"outcome":{"outcome":"cancelled"}}`))
		return "", nil
	}
	b := AppendString([]byte(`{"outcome":{"outcome":"selected","optionId":`), option)
	a.respond(ask.rawID, append(b, "}}"...))
	return option, nil
}

// acpOption returns the id of the first option of the first kind in kinds, "" when none.
func acpOption(options json.RawMessage, kinds []string) string {
	r := gjson.ParseBytes(options)
	for _, k := range kinds {
		var id string
		r.ForEach(func(_, o gjson.Result) bool {
			if o.Get("kind").Str == k && o.Get("optionId").Type == gjson.String {
				id = o.Get("optionId").Str
				return false
			}
			return true
		})
		if id != "" {
			return id
		}
	}
	return ""
}

// Cancel ends the running turn: every pending permission request is answered cancelled (the
// protocol requires it) and session/cancel is sent when a prompt is open. It returns the ids of
// the requests it answered.
func (a *ACP) Cancel() []string {
	var ids []string
	for id, ask := range a.asks {
		a.respond(ask.rawID, []byte(`{"outcome":{"outcome":"cancelled"}}`))
		ids = append(ids, id)
	}
	clear(a.asks)
	a.held = nil
	if a.promptID != 0 && a.sessionID != "" {
		b := AppendString([]byte(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":`), a.sessionID)
		a.out = append(a.out, append(b, "}}\n"...))
	}
	return ids
}

// call queues a request of ours and returns its id.
func (a *ACP) call(method string, params []byte) int64 {
	a.nextID++
	if a.calls == nil {
		a.calls = make(map[int64]string)
	}
	a.calls[a.nextID] = method
	b := strconv.AppendInt([]byte(`{"jsonrpc":"2.0","id":`), a.nextID, 10)
	b = AppendString(append(b, `,"method":`...), method)
	b = append(append(b, `,"params":`...), params...)
	a.out = append(a.out, append(b, "}\n"...))
	return a.nextID
}

// respond queues the answer to a request of the agent.
func (a *ACP) respond(rawID, result []byte) {
	b := append([]byte(`{"jsonrpc":"2.0","id":`), rawID...)
	b = append(append(b, `,"result":`...), result...)
	a.out = append(a.out, append(b, "}\n"...))
}

// refuse queues an error answer to a request of the agent.
func (a *ACP) refuse(rawID []byte, code int, msg string) {
	b := append([]byte(`{"jsonrpc":"2.0","id":`), rawID...)
	b = strconv.AppendInt(append(b, `,"error":{"code":`...), int64(code), 10)
	b = AppendString(append(b, `,"message":`...), msg)
	a.out = append(a.out, append(b, "}}\n"...))
}

// fail records that the connection failed, once.
func (a *ACP) fail(code int, msg string) {
	if a.phase == acpFailed {
		return
	}
	a.phase, a.err, a.errCode = acpFailed, oneLine(msg), code
}

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
	dst = a.startTool(dst, t, toolID)
	key := jsonString(id)
	if key == "" {
		key = id.Raw
	}
	if a.asks == nil || len(a.asks) >= acpMaxTools {
		a.asks = make(map[string]acpAsk)
	}
	options := jsonRaw(params.Get("options"))
	a.asks[key] = acpAsk{rawID: rawID, options: options, tool: t.name}
	return append(dst, Event{Type: TypePermission, ID: key, Tool: t.name, Input: t.input, Options: options})
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
	case "user_message_chunk", "available_commands_update", "current_mode_update",
		"config_option_update", "session_info_update", "compaction_update", "compaction_summary_chunk":
		return dst
	}
	dst = a.flushText(dst)
	switch kind {
	case "tool_call", "tool_call_update":
		t, id := a.tool(u)
		status := u.Get("status").Str
		if status != "" && status != "pending" {
			dst = a.startTool(dst, t, id)
		}
		if (status == "completed" || status == "failed") && !t.done {
			t.done = true
			output := jsonRaw(u.Get("rawOutput"))
			if output == nil {
				output = jsonRaw(u.Get("content"))
			}
			dst = append(dst, Event{Type: TypeToolResult, ID: id, Tool: t.name, OK: status == "completed", Output: output})
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
		return append(dst, agentWarning(msg))
	}
	return append(dst, Unparsed(line))
}

// tool returns the state of the tool call a ToolCall or ToolCallUpdate names, made on first
// sight (a permission request can be the first), with the fields it brings patched in.
func (a *ACP) tool(u gjson.Result) (*acpTool, string) {
	id := jsonString(u.Get("toolCallId"))
	t := a.tools[id]
	if t == nil {
		if a.tools == nil || len(a.tools) >= acpMaxTools {
			a.tools = make(map[string]*acpTool)
		}
		t = &acpTool{}
		a.tools[id] = t
	}
	if !t.used {
		// What the tool_use reports, as it stands when the call starts.
		if n := u.Get("name"); n.Type == gjson.String && n.Str != "" {
			t.name = strings.Clone(n.Str)
		} else if n := u.Get("_meta.claudeCode.toolName"); t.name == "" && n.Type == gjson.String {
			t.name = strings.Clone(n.Str)
		} else if k := u.Get("kind"); t.name == "" && k.Type == gjson.String {
			t.name = strings.Clone(k.Str)
		}
		if title := u.Get("title"); title.Type == gjson.String && title.Str != "" {
			t.title = strings.Clone(title.Str)
		}
		if in := u.Get("rawInput"); in.IsObject() && in.Raw != "{}" {
			t.input = jsonRaw(in)
		}
	}
	return t, id
}

// startTool emits the tool_use of a call once.
func (a *ACP) startTool(dst []Event, t *acpTool, id string) []Event {
	if t.used {
		return dst
	}
	t.used = true
	if t.name == "" {
		t.name = t.title
	}
	if t.input == nil && t.title != "" {
		t.input = stringObject("title", t.title) // Gemini sends no rawInput: the title is the command
	}
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
		if method == "session/load" {
			a.replaying = false
		}
		sid := result.Get("sessionId")
		if method != "session/new" {
			sid = gjson.Result{Type: gjson.String, Str: a.resume}
		}
		if sid.Type != gjson.String || sid.Str == "" {
			a.fail(0, method+" answered without a sessionId: "+oneLine(string(line)))
			return append(dst, Unparsed(line))
		}
		a.sessionID = jsonString(sid)
		a.phase = acpReady
		if method == "session/new" && a.resume != "" {
			dst = append(dst, Event{Type: TypeError, Source: SourceAgent, Class: ClassSession,
				Message: "the agent offers neither session/load nor session/resume: session " + a.resume + " is not resumed; a new session instead"})
			a.resume = ""
		}
		model := result.Get("models.currentModelId").Str
		dst = append(dst, Event{Type: TypeSession, SessionID: a.sessionID, Model: strings.Clone(model), Cwd: a.cwd})
		held := a.held
		a.held = nil
		for _, p := range held {
			a.Prompt(p)
		}
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
		// The session is gone: a new one instead, which is no failure of the run.
		a.replaying = false
		ev.Fatal, ev.Class = false, ClassSession
		ev.Message = fmt.Sprintf("%s; a new session instead", ev.Message)
		a.resume = ""
		a.call("session/new", append(AppendString([]byte(`{"cwd":`), a.cwd), `,"mcpServers":[]}`...))
	case "session/prompt":
		if id != a.promptID {
			return dst
		}
		dst = a.flushText(dst)
		dst = append(dst, ev)
		a.promptID = 0
		a.costAtTurn = a.cost
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
			delete(a.tools, id)
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

// End implements Decoder: a turn left open gets a failed result; a connection that failed says
// why.
func (a *ACP) End(dst []Event, exit Exit) ([]Event, Failure) {
	dst = a.flushText(dst)
	if a.promptID != 0 {
		dst = append(dst, cutOffResult(exit, nil))
	}
	f := a.evidence.failure(exit, nil)
	if a.err != "" && !exit.Clean() && (f.Class == "" || f.Class == ClassTransient) {
		f = Failure{ClassTransient, a.err}
		if a.errCode == -32000 {
			f.Class = ClassAuth
		}
	}
	name, version := a.name, a.version
	*a = ACP{name: name, version: version}
	return dst, f
}
