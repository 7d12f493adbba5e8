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

	nextID   int64
	calls    map[int64]string // requests of ours awaiting an answer: id → method
	out      [][]byte         // lines to write to the agent
	phase    int
	opened   bool   // the session was opened (Ready), whatever came after
	err      string // why the connection failed, once it did
	errCode  int
	errClass string // the failure class of err, when it names one (auth, config)

	mode, wantMode string // the session's mode; the mode asked for by session/set_mode

	canLoad, canResume bool
	sessionID          string
	promptID           int64    // the open session/prompt's id; 0 when no turn is open
	held               []string // prompts given before the session was open
	replaying          bool     // session/load replays the conversation: its updates are the past
	chunk              acpChunk // the message being joined
	last               string   // the turn's last message text, the result's text
	tools              map[string]*acpTool
	asks               map[string]acpAsk // pending permission requests by id text
	toolBytes          int               // what tools hold (acpTool.size)
	askBytes           int               // what asks hold (their options)
	cost, costAtTurn   float64           // the session's cumulative cost; where it stood when the turn began
	haveCost           bool
	plans              int
	retries            int // the turn's retried model requests, as the agent's stderr told them
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
	name, title, kind string
	path              string // the first location the call names
	input             json.RawMessage
	used, done, asked bool
}

type acpAsk struct {
	rawID   []byte          // the request's id as the agent wrote it
	options json.RawMessage // the options offered
	tool    string
}

// acpMaxTools bounds the tool calls and permission requests kept, in number, and acpMaxKept in
// bytes, each: past either they are forgotten (an agent that floods them holds no more of the
// supervisor's memory: R36). acpMaxText bounds a message being joined (a longer one is emitted
// in pieces).
const (
	acpMaxTools = 4096
	acpMaxKept  = 16 << 20
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
	a.phase, a.opened = acpInitializing, false
	// session.notices: an adapter's own notices come as notice updates, not as the agent's
	// words (claude-agent-acp writes them as message chunks to clients that lack it).
	params := fmt.Appendf(nil, `{"protocolVersion":%d,"clientCapabilities":{"fs":{"readTextFile":false,"writeTextFile":false},"terminal":false,"session":{"notices":{}}},"clientInfo":{"name":`, ACPVersion)
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
// or malformed, a version agt does not speak, no session) or the run must end (a prompt refused
// for a reason no retry cures, auth or config; the agent acting without asking): the
// supervisor then ends the run, and End's Failure carries the class.
func (a *ACP) Handshake() (answered bool, failed string) {
	return a.phase == acpOpening || a.phase == acpReady, a.err
}

// Ready reports whether the session was opened: it stays so when a turn's failure later ends
// the run (a model that does not exist), which is the run's failure, not the connection's.
func (a *ACP) Ready() bool { return a.opened }

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
	a.replaying, a.retries = false, 0 // what comes now is the turn's
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
	a.forgetAsk(id)
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
	a.askBytes = 0
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
	a.failClass(code, "", msg)
}

// failClass records that the run failed for a reason of the given class ("" for none known),
// once: the supervisor ends a run whose Handshake reports a failure.
func (a *ACP) failClass(code int, class, msg string) {
	if a.phase == acpFailed {
		return
	}
	a.phase, a.err, a.errCode, a.errClass = acpFailed, oneLine(msg), code, class
}
