package stream

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/tidwall/gjson"
)

// CodexServer is the client side of Codex's app-server protocol (codex app-server: JSON-RPC 2.0
// with the "jsonrpc" field left out, one object a line, over its stdin and stdout), the
// interface through which Codex asks for approvals, takes a message while a turn runs and keeps
// threads. Like ACP it is pure: it decodes what the server writes into events and keeps the
// lines to write back (Lines), and never does I/O itself. Its shapes follow the schema the
// server prints (codex app-server generate-json-schema), as of codex-cli 0.171.0.
//
// The conversation: initialize {clientInfo} and, once answered, the notification initialized;
// then thread/start {cwd, model?, approvalPolicy "untrusted", sandbox "workspace-write"} (or
// thread/resume {threadId} of the thread to resume); then turn/start {threadId, input} for the
// prompt, and for every message after it: turn/steer {threadId, input, expectedTurnId} while a
// turn runs, turn/start between turns. Cancel sends turn/interrupt {threadId, turnId}.
//
// It reads:
//   - the answer to thread/start or thread/resume → session (thread.id, the model);
//   - item/started and item/completed: commandExecution → tool_use and tool_result of the tool
//     Bash, input {"command","cwd"}, output the aggregated output, ok when completed with exit
//     code 0; fileChange → Edit, input {"file_path" (the first), "changes":[{path,kind}]},
//     output the paths changed; mcpToolCall → "<server>.<tool>" with its arguments;
//     agentMessage (completed) → text; reasoning (completed) → text marked thought, from its
//     summary; other items → nothing. (Claude's names, so that one agt.toml rule holds for
//     Codex as for the others.);
//   - item/commandExecution/requestApproval → permission of Bash {"command","cwd","reason"},
//     item/fileChange/requestApproval → permission of Edit {"reason","grantRoot"}, with the item's
//     input when its item/started came first; options the decisions the server takes. Answer
//     picks accept, acceptForSession or decline; Cancel answers cancel. Any other request of the
//     server is refused with -32601;
//   - error {error, willRetry}: a retry (willRetry) → a retry notice (attempt counted in the
//     turn); otherwise a fatal error, classified from its message;
//   - turn/completed → result: ok when its status is completed, else the turn's error message
//     (or the status, interrupted); usage the growth of thread/tokenUsage/updated's total since
//     the turn began; Codex reports no cost;
//   - other notifications (turn/started, deltas, thread/status/changed, …) → nothing; a line that
//     is no JSON-RPC message → unparsed.
type CodexServer struct {
	// Sandbox is the sandbox thread/start asks for: "workspace-write" when "". Codex's own
	// sandbox needs its helper binaries, which it refuses to install under a temporary
	// directory: tests there ask for "danger-full-access".
	Sandbox string

	name, version string
	cwd, model    string
	resume        string

	nextID  int64
	calls   map[int64]string // requests of ours awaiting an answer: id → method
	out     [][]byte
	phase   int  // the phases of ACP: acpIdle … acpFailed
	opened  bool // the thread was opened (Ready), whatever came after
	err     string
	errCode int

	threadID, turnID string
	turnOpen         bool     // a turn/start was sent and its turn/completed not seen
	held             []string // prompts given before the thread was open
	steers           []string // messages for the running turn before its id was known
	interrupt        bool     // Cancel came before the running turn's id: interrupt it once known
	items            map[string]*codexServerItem
	itemBytes        int               // the inputs items hold
	asks             map[string][]byte // pending approvals: id text → the request's raw id
	last             string            // the turn's last agent message
	total, atTurn    Usage             // the thread's token total; where it stood when the turn began
	retries          int
	evidence
}

type codexServerItem struct {
	tool  string
	input json.RawMessage
	used  bool
}

// codexServerMax bounds the items and approvals kept, and codexServerKept the bytes of the
// items' inputs: past either they are forgotten (R36).
const (
	codexServerMax  = 4096
	codexServerKept = 16 << 20
)

// codexDecisions are the answers the server takes to an approval, offered as the permission's
// options.
var codexDecisions = json.RawMessage(`["accept","acceptForSession","decline","cancel"]`)

// NewCodexServer returns the app-server client for one run; name and version are what agt
// calls itself in initialize.
func NewCodexServer(name, version string) *CodexServer {
	return &CodexServer{name: name, version: version}
}

// Connect starts the conversation: it queues initialize. cwd is the thread's directory, model
// the model to ask for ("" for Codex's own), resume the thread to resume ("" for a new one).
func (c *CodexServer) Connect(cwd, model, resume string) {
	c.cwd, c.model, c.resume = cwd, model, resume
	c.phase, c.opened = acpInitializing, false
	params := AppendString([]byte(`{"clientInfo":{"name":`), c.name)
	params = AppendString(append(params, `,"version":`...), c.version)
	c.call("initialize", append(params, "}}"...))
}

// Lines returns the lines to write to the server's stdin, each ending in a newline, and forgets
// them.
func (c *CodexServer) Lines() [][]byte {
	out := c.out
	c.out = nil
	return out
}

// Handshake reports whether initialize was answered, and why the connection failed, once it did.
func (c *CodexServer) Handshake() (answered bool, failed string) {
	return c.phase == acpOpening || c.phase == acpReady, c.err
}

// Ready reports whether the thread was opened (as ACP.Ready).
func (c *CodexServer) Ready() bool { return c.opened }

// ThreadID is the thread the conversation runs in, "" before it is open.
func (c *CodexServer) ThreadID() string { return c.threadID }

// Open reports whether a turn is under way.
func (c *CodexServer) Open() bool { return c.turnOpen || len(c.held) > 0 }

// Prompt sends a user message: a new turn between turns, a steer of the running one while a turn
// runs (Codex takes it into the turn under way), held until the thread is open.
func (c *CodexServer) Prompt(text string) {
	if c.phase != acpReady {
		c.held = append(c.held, text)
		return
	}
	if c.turnOpen {
		c.steer(text)
		return
	}
	c.turnOpen, c.last, c.atTurn, c.retries = true, "", c.total, 0
	c.call("turn/start", append(c.input(text), '}'))
}

// Steer adds a user message to the running turn (turn/steer), and reports whether a turn runs
// to take it; when none does, it sends nothing (Prompt starts a turn).
func (c *CodexServer) Steer(text string) bool {
	if !c.Open() {
		return false
	}
	c.Prompt(text)
	return true
}

// steer sends turn/steer, once the running turn's id is known.
func (c *CodexServer) steer(text string) {
	if c.turnID == "" {
		c.steers = append(c.steers, text)
		return
	}
	params := AppendString(append(c.input(text), `,"expectedTurnId":`...), c.turnID)
	c.call("turn/steer", append(params, '}'))
}

// input is the params of a turn/start or turn/steer of text, without the closing brace.
func (c *CodexServer) input(text string) []byte {
	params := AppendString([]byte(`{"threadId":`), c.threadID)
	params = AppendString(append(params, `,"input":[{"type":"text","text":`...), text)
	return append(params, "}]"...)
}

// turnStarted learns the running turn's id, and sends what waited for it: the steers, then
// the interrupt.
func (c *CodexServer) turnStarted(id string) {
	if id == "" || !c.turnOpen || c.turnID == id {
		return
	}
	c.turnID = id
	steers := c.steers
	c.steers = nil
	for _, s := range steers {
		c.steer(s)
	}
	if c.interrupt {
		c.interrupt = false
		c.interruptTurn()
	}
}

// interruptTurn sends turn/interrupt of the running turn.
func (c *CodexServer) interruptTurn() {
	params := AppendString([]byte(`{"threadId":`), c.threadID)
	params = AppendString(append(params, `,"turnId":`...), c.turnID)
	c.call("turn/interrupt", append(params, '}'))
}

// Answer answers the approval request id: allow accepts it (for the session when always),
// deny declines it. It returns the decision sent.
func (c *CodexServer) Answer(id string, allow, always bool) (string, error) {
	raw, ok := c.asks[id]
	if !ok {
		return "", fmt.Errorf("no pending approval request %q", id)
	}
	decision := "decline"
	switch {
	case allow && always:
		decision = "acceptForSession"
	case allow:
		decision = "accept"
	}
	delete(c.asks, id)
	c.respond(raw, AppendString([]byte(`{"decision":`), decision), '}')
	return decision, nil
}

// Cancel interrupts the running turn: every pending approval is answered cancel, and
// turn/interrupt goes out. It returns the ids of the approvals it answered. A turn whose id is
// not known yet (its turn/start unanswered, or the prompt held until the thread opens) is
// interrupted as soon as it is: the prompt still reaches the thread, whose history keeps it,
// and the turn ends interrupted, as a later one would.
func (c *CodexServer) Cancel() []string {
	var ids []string
	for id, raw := range c.asks {
		c.respond(raw, []byte(`{"decision":"cancel"`), '}')
		ids = append(ids, id)
	}
	clear(c.asks)
	switch {
	case c.turnOpen && c.turnID != "":
		c.interruptTurn()
	case c.Open():
		c.interrupt = true
	}
	return ids
}

// call queues a request of ours and returns its id.
func (c *CodexServer) call(method string, params []byte) int64 {
	c.nextID++
	if c.calls == nil {
		c.calls = make(map[int64]string)
	}
	c.calls[c.nextID] = method
	b := strconv.AppendInt([]byte(`{"id":`), c.nextID, 10)
	b = AppendString(append(b, `,"method":`...), method)
	b = append(append(b, `,"params":`...), params...)
	c.out = append(c.out, append(b, "}\n"...))
	return c.nextID
}

// respond queues the answer to a request of the server: result, closed by end.
func (c *CodexServer) respond(rawID, result []byte, end byte) {
	b := append([]byte(`{"id":`), rawID...)
	b = append(append(b, `,"result":`...), result...)
	c.out = append(c.out, append(b, end, '}', '\n'))
}

func (c *CodexServer) fail(code int, msg string) {
	if c.phase == acpFailed {
		return
	}
	c.phase, c.err, c.errCode = acpFailed, oneLine(msg), code
}

// openThread starts or resumes the thread, asking Codex to ask before it acts.
func (c *CodexServer) openThread() {
	if c.resume != "" {
		params := AppendString([]byte(`{"threadId":`), c.resume)
		params = AppendString(append(params, `,"cwd":`...), c.cwd)
		c.call("thread/resume", append(params, `,"approvalPolicy":"untrusted"}`...))
		return
	}
	params := AppendString([]byte(`{"cwd":`), c.cwd)
	if c.model != "" {
		params = AppendString(append(params, `,"model":`...), c.model)
	}
	sandbox := c.Sandbox
	if sandbox == "" {
		sandbox = "workspace-write"
	}
	params = AppendString(append(params, `,"approvalPolicy":"untrusted","sandbox":`...), sandbox)
	c.call("thread/start", append(params, '}'))
}

// Decode implements Decoder.
func (c *CodexServer) Decode(dst []Event, line []byte) []Event {
	root, blank, ok := jsonLine(line)
	if !ok {
		if blank {
			return dst
		}
		if c.phase == acpInitializing {
			c.fail(0, "it wrote something other than JSON-RPC: "+oneLine(string(line)))
		}
		return append(dst, Unparsed(line))
	}
	id, method, params := root.Get("id"), root.Get("method"), root.Get("params")
	result, errv := root.Get("result"), root.Get("error")
	n := len(dst)
	switch {
	case method.Type == gjson.String && id.Exists():
		dst = c.request(dst, id, method.Str, params)
	case method.Type == gjson.String:
		dst = c.notification(dst, line, method.Str, params)
	case id.Type == gjson.Number && (result.Exists() || errv.IsObject()):
		dst = c.answer(dst, line, id.Int(), result, errv)
	default:
		dst = append(dst, Unparsed(line))
	}
	c.evidence.sawEvents(dst[n:])
	return dst
}

// DecodeStderr implements Decoder: the server's log lines only explain a failure.
func (c *CodexServer) DecodeStderr(dst []Event, line []byte) []Event {
	c.stderrLine(line)
	return dst
}

// End implements Decoder: a turn left open gets a failed result; a connection that failed says
// why. The client is then ready for the next run of the same thread.
func (c *CodexServer) End(dst []Event, exit Exit) ([]Event, Failure) {
	if c.turnOpen {
		dst = append(dst, cutOffResult(exit, nil))
	}
	f := c.evidence.failure(exit, nil)
	if c.err != "" && !exit.Clean() && (f.Class == "" || f.Class == ClassTransient) {
		f = Failure{ClassTransient, c.err}
	}
	name, version, thread, sandbox, total := c.name, c.version, c.threadID, c.Sandbox, c.total
	*c = CodexServer{name: name, version: version, threadID: thread, Sandbox: sandbox, total: total}
	return dst, f
}

// SessionTotal implements SessionResumer: the thread's token total so far.
func (c *CodexServer) SessionTotal(id string) (Usage, bool) {
	return c.total, id != "" && id == c.threadID
}

// ResumeSession implements SessionResumer: the thread id resumes with total tokens spent, so
// that its first turn reports only what it adds (thread/tokenUsage/updated is the thread's).
func (c *CodexServer) ResumeSession(id string, total Usage) {
	c.threadID, c.total, c.atTurn = id, total, total
}
