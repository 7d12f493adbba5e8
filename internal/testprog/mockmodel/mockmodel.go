// Package mockmodel is a loopback model server for the real-agent tests (TestRealAgents): the
// real agent CLIs talk to it instead of a provider. One port speaks three APIs: Anthropic
// Messages (Claude Code, opencode), OpenAI Responses (Codex) and Gemini (Gemini CLI). A keyword
// in the text of the last user message chooses what a request gets, so one server serves every
// scenario at once:
//
//	tool          call the shell tool with a harmless command; once the tool result comes back,
//	              answer with text that quotes it
//	toolhang      call the shell tool likewise, then hang on the request with its result: the
//	              agent is alive mid-turn, after the model answered once
//	patch         Codex only: add a file with apply_patch, then answer with text
//	slow=40s      stream text for the given time (default 40s), a chunk every half second;
//	              while the gate is held (Hold), the last chunk waits until Open
//	hang          accept the request and never answer
//	stall         start the stream, send one chunk, then stall
//	http401       the API's own 401 error; http429 and http500 likewise
//	flaky         a 500 for the first request of a conversation, then a plain answer
//	unknownmodel  the API's answer for a model that does not exist (as does a model whose name
//	              holds no-such-model, whatever the text)
//	echo          "turn N: you said TEXT", N the number of user messages in the conversation
//	write         call the shell tool with a command that writes (mkdir agt-write-N && touch
//	              agt-write-N/x, N as for echo), which an agent asks permission for; once the
//	              tool result comes back, answer "The tool said: OUTPUT", or "The tool failed:
//	              OUTPUT" when the result is an error (a denial)
//	plan          Claude only: call ExitPlanMode with a plan (when the request offers it), then
//	              answer with text as write does
//
// When the text holds several keywords (a client may merge two user messages into one), the
// last one counts. Errors answer every request that carries their keyword, side requests too
// (a bad key is bad for all). The other scenarios answer only requests that offer tools, the
// agent's own loop: side requests (titles, routing) and requests without a keyword get a short
// plain answer. Every request is recorded; a handler that waits returns
// when its client goes away or the server closes.
package mockmodel

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Request is the record of one request the mock model served.
type Request struct {
	Seq    int    `json:"seq"`
	Time   string `json:"time"` // UTC, milliseconds
	Method string `json:"method"`
	Path   string `json:"path"`
	API    string `json:"api"` // anthropic, openai, gemini, or other
	Model  string `json:"model,omitempty"`
	Stream bool   `json:"stream,omitempty"`
	// Scenario is the keyword found in the last user message, if any.
	Scenario string `json:"scenario,omitempty"`
	// Users is the number of user messages in the conversation, LastUser the text of the last
	// one. Context that clients send as user text (reminders, environment) is left out.
	Users    int      `json:"users"`
	LastUser string   `json:"last_user,omitempty"`
	Tools    []string `json:"tools,omitempty"`
	// ToolResult: a tool result follows the last user message; ToolError: it is an error
	// (Anthropic's is_error), ToolOutput its text.
	ToolResult bool   `json:"tool_result,omitempty"`
	ToolError  bool   `json:"tool_error,omitempty"`
	ToolOutput string `json:"tool_output,omitempty"`
	// Main: the request offers tools, so it is the agent's own loop, not a side request.
	Main bool `json:"main"`
	// Status is the HTTP status answered, 0 for a request never answered (hang).
	Status int `json:"status"`
	// Answer is what the mock sent: text, tool, slow, stall, hang, error, or side (a plain
	// answer to a side request).
	Answer string `json:"answer"`
	// Sent counts the text chunks of a slow answer sent so far (in memory only).
	Sent int `json:"sent,omitempty"`
}

// Model is the server. Close it at the end of the test.
type Model struct {
	srv  *httptest.Server
	done chan struct{} // closed by Close: every waiting handler returns
	Tick time.Duration // between the chunks of a slow stream; set before the first request
	file string        // when set, each record is appended to it as a JSON line
	// bodies, when set, is a directory where each request body is saved (for research).
	bodies string
	logf   func(format string, args ...any) // told of paths the mock does not know

	mu    sync.Mutex
	reqs  []Request
	tries map[string]int // requests seen per conversation, for flaky
	gate  chan struct{}  // closed while slow answers may end; nil: open
}

// Hold makes slow answers wait before their last chunk until Open: a turn a script can sample
// mid-way, however slowly a busy machine runs the agent.
func (m *Model) Hold() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.gate == nil {
		m.gate = make(chan struct{})
	}
}

// Open lets the slow answers that Hold kept waiting end.
func (m *Model) Open() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.gate != nil {
		close(m.gate)
		m.gate = nil
	}
}

// passGate waits while the gate is held. It reports false when the client went away or the
// server closed first.
func (m *Model) passGate(ctx context.Context) bool {
	m.mu.Lock()
	gate := m.gate
	m.mu.Unlock()
	if gate == nil {
		return true
	}
	select {
	case <-gate:
		return true
	case <-ctx.Done():
		return false
	case <-m.done:
		return false
	}
}

// New starts a mock on 127.0.0.1. logFile, when not empty, receives each record as a
// JSON line; logf, when not nil, is told of paths the mock does not know.
func New(logFile string, logf func(string, ...any)) *Model {
	m := &Model{done: make(chan struct{}), Tick: 500 * time.Millisecond, file: logFile, logf: logf, tries: map[string]int{}}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	return m
}

// URL is the server's base URL, http://127.0.0.1:PORT.
func (m *Model) URL() string { return m.srv.URL }

// Close ends every handler still waiting, cuts the connections and shuts the server down.
func (m *Model) Close() {
	select {
	case <-m.done:
		return
	default:
	}
	close(m.done)
	m.srv.CloseClientConnections()
	m.srv.Close()
}

// Requests returns a copy of the records so far.
func (m *Model) Requests() []Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Request(nil), m.reqs...)
}

// add records a request once its answer is chosen, before the handler streams or waits.
func (m *Model) add(rec *Request, body []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec.Seq = len(m.reqs) + 1
	rec.Time = time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	m.reqs = append(m.reqs, *rec)
	if m.bodies != "" && body != nil {
		os.WriteFile(filepath.Join(m.bodies, fmt.Sprintf("%03d-%s.json", rec.Seq, rec.API)), body, 0o600)
	}
	if m.file == "" {
		return
	}
	if b, err := json.Marshal(rec); err == nil {
		if f, err := os.OpenFile(m.file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
			f.Write(append(b, '\n'))
			f.Close()
		}
	}
}

// sent records that n chunks of a slow answer went out.
func (m *Model) sent(seq, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reqs[seq-1].Sent = n
}

// wait blocks until the client goes away or the server closes, or d passes (d 0: no limit). It
// reports whether d passed.
func (m *Model) wait(ctx context.Context, d time.Duration) bool {
	var after <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		after = t.C
	}
	select {
	case <-ctx.Done():
		return false
	case <-m.done:
		return false
	case <-after:
		return true
	}
}

func (m *Model) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	p := r.URL.Path
	simple := func(api string, status int, answer string, v any) {
		m.add(&Request{Method: r.Method, Path: p, API: api, Status: status, Answer: answer}, body)
		if v == nil {
			w.WriteHeader(status)
			return
		}
		writeJSON(w, status, v)
	}
	switch {
	case p == "/":
		simple("other", 200, "root", nil) // Claude Code checks that the server answers (HEAD /)
	case p == "/v1/messages" && r.Method == http.MethodPost:
		m.model(w, r, body, anthropicAPI{})
	case p == "/v1/messages/count_tokens" && r.Method == http.MethodPost:
		simple("anthropic", 200, "count", map[string]any{"input_tokens": 100 + len(body)/8})
	case p == "/v1/responses" && r.Method == http.MethodPost:
		m.model(w, r, body, openaiAPI{})
	case p == "/v1/models":
		simple("openai", 200, "models", map[string]any{"object": "list", "data": []any{
			map[string]any{"id": "gpt-5.5", "object": "model", "owned_by": "mock"}}})
	case strings.HasPrefix(p, "/v1beta/models/") && strings.HasSuffix(p, ":countTokens"):
		simple("gemini", 200, "count", map[string]any{"totalTokens": 100 + len(body)/8})
	case strings.HasPrefix(p, "/v1beta/models/") && r.Method == http.MethodPost:
		m.model(w, r, body, geminiAPI{})
	default:
		if m.logf != nil {
			m.logf("mock model: unknown path %s %s", r.Method, r.URL)
		}
		simple("other", 404, "unknown path", map[string]any{"type": "error",
			"error": map[string]any{"type": "not_found_error", "message": "mock: no route for " + r.Method + " " + p}})
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// scenarioRE finds the keyword of a request in its last user text.
var scenarioRE = regexp.MustCompile(`(?i)\b(toolhang|tool|patch|slow(?:=[0-9]+(?:ms|s|m))?|hang|stall|http401|http429|http500|flaky|unknownmodel|echo|write|plan)\b`)

// scenarioOf returns the scenario of a request, and for slow its duration.
func scenarioOf(lastUser, model string) (string, time.Duration) {
	if strings.Contains(model, "no-such-model") {
		return "unknownmodel", 0
	}
	all := scenarioRE.FindAllStringSubmatch(lastUser, -1)
	if all == nil {
		return "", 0
	}
	kw := strings.ToLower(all[len(all)-1][1])
	if name, arg, ok := strings.Cut(kw, "="); ok {
		d, _ := time.ParseDuration(arg)
		return name, d
	}
	if kw == "slow" {
		return kw, 40 * time.Second
	}
	return kw, 0
}

// contextPrefixes open the user text that clients add on their own: Claude's system reminders
// and its note of an interrupted turn, Codex's environment and instructions, Gemini's session
// context.
var contextPrefixes = []string{"<system-reminder>", "<environment_context>", "<user_instructions>", "<session_context>",
	"# AGENTS.md instructions", "<permissions instructions>", "<user_shell_command>", "<turn_aborted>", "<command-name>",
	"<local-command", "[Request interrupted by user"}

func isContext(s string) bool {
	s = strings.TrimSpace(s)
	for _, p := range contextPrefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// conv is what the mock reads of a request, whatever the API.
type conv struct {
	model      string
	stream     bool
	users      []string // the user's own texts, one per user message
	toolResult bool     // a tool result follows the last user text
	toolError  bool     // it is an error
	toolOutput string   // its text
	tools      []string // the names of the tools offered
	shell      string   // the name of the shell tool among them, if any
	patch      bool     // apply_patch is among them
	exitPlan   bool     // ExitPlanMode is among them (Claude)
	schema     map[string]any
}

// userText adds the texts of one user message, context left out.
func (c *conv) userText(texts []string) {
	var own []string
	for _, t := range texts {
		if t != "" && !isContext(t) {
			own = append(own, t)
		}
	}
	if len(own) > 0 {
		c.users = append(c.users, strings.Join(own, "\n"))
		c.toolResult, c.toolError, c.toolOutput = false, false, ""
	}
}

func (c *conv) result(output string, isError bool) {
	c.toolResult, c.toolError, c.toolOutput = true, isError, output
}

func (c *conv) last() string {
	if len(c.users) == 0 {
		return ""
	}
	return c.users[len(c.users)-1]
}

// plan is what the mock answers to one request.
type plan struct {
	scenario string
	kind     string // text, tool, exitplan, slow, stall, hang, error
	text     string // for text and stall
	command  string // for tool: the shell command
	status   int    // for error
	errKind  string // for error: auth, rate, server, model
	slowFor  time.Duration
}

// toolCommand is the harmless command the tool scenario runs, and toolMarker what it prints.
const (
	toolCommand = "echo agt-tool-ok"
	toolMarker  = "agt-tool-ok"
)

// writeCommand is the command of the write scenario in turn n: one that writes, so that an
// agent asks permission for it.
func writeCommand(n int) string {
	return fmt.Sprintf("mkdir agt-write-%d && touch agt-write-%d/x", n, n)
}

// planText is the plan the plan scenario presents.
const planText = "Add agt-plan.txt, then say done"

// decide picks the answer to a request.
func (m *Model) decide(api string, c *conv) plan {
	sc, d := scenarioOf(c.last(), c.model)
	p := plan{scenario: sc, kind: "text", text: "ok", command: toolCommand}
	switch sc {
	case "http401":
		p.kind, p.status, p.errKind = "error", 401, "auth"
	case "http429":
		p.kind, p.status, p.errKind = "error", 429, "rate"
	case "http500":
		p.kind, p.status, p.errKind = "error", 500, "server"
	case "unknownmodel":
		p.kind, p.status, p.errKind = "error", 404, "model"
	}
	if p.kind != "text" || len(c.tools) == 0 {
		return p
	}
	switch sc {
	case "hang":
		p.kind = "hang"
	case "stall":
		p.kind, p.text = "stall", "Starting to answer. "
	case "flaky":
		key := fmt.Sprintf("%s|%d|%s", api, len(c.users), c.last())
		m.mu.Lock()
		n := m.tries[key]
		m.tries[key] = n + 1
		m.mu.Unlock()
		if n == 0 {
			p.kind, p.status, p.errKind = "error", 500, "server"
		}
	case "toolhang":
		switch {
		case c.toolResult:
			p.kind = "hang"
		case c.shell != "":
			p.kind = "tool"
		}
	case "tool":
		switch {
		case c.toolResult && strings.Contains(c.toolOutput, toolMarker):
			p.text = "The tool said: " + toolMarker
		case c.toolResult:
			p.text = "The tool said: " + strings.TrimSpace(c.toolOutput)
		case c.shell != "":
			p.kind = "tool"
		default:
			p.text = "mock: no shell tool among " + strings.Join(c.tools, ",")
		}
	case "write", "plan":
		switch {
		case c.toolResult && c.toolError:
			p.text = "The tool failed: " + strings.TrimSpace(c.toolOutput)
		case c.toolResult:
			p.text = "The tool said: " + strings.TrimSpace(c.toolOutput)
		case sc == "plan" && c.exitPlan:
			p.kind = "exitplan"
		case sc == "plan":
			p.text = "mock: no ExitPlanMode among " + strings.Join(c.tools, ",")
		case c.shell != "":
			p.kind, p.command = "tool", writeCommand(len(c.users))
		default:
			p.text = "mock: no shell tool among " + strings.Join(c.tools, ",")
		}
	case "patch":
		switch {
		case c.toolResult:
			p.text = "The patch said: " + strings.TrimSpace(c.toolOutput)
		case c.patch:
			p.kind = "patch"
		default:
			p.text = "mock: no apply_patch among " + strings.Join(c.tools, ",")
		}
	case "slow":
		p.kind, p.slowFor = "slow", d
	case "echo":
		p.text = fmt.Sprintf("turn %d: you said %s", len(c.users), c.last())
	}
	return p
}

// modelAPI is one wire format: how to read a request and how to write errors and answers.
type modelAPI interface {
	name() string
	parse(r *http.Request, body []byte) *conv
	writeError(w http.ResponseWriter, c *conv, p plan, seq int)
	answer(w http.ResponseWriter, c *conv, seq int) answerWriter
}

// answerWriter writes one answer, streamed or whole.
type answerWriter interface {
	text(t string)   // a chunk of assistant text
	tool(cmd string) // a call of the shell tool with the command cmd
	end()            // the end of the answer
}

// model serves one model request in any API.
func (m *Model) model(w http.ResponseWriter, r *http.Request, body []byte, api modelAPI) {
	c := api.parse(r, body)
	p := m.decide(api.name(), c)
	rec := &Request{Method: r.Method, Path: r.URL.Path, API: api.name(), Model: c.model, Stream: c.stream,
		Scenario: p.scenario, Users: len(c.users), LastUser: c.last(), Tools: c.tools, ToolResult: c.toolResult,
		ToolError: c.toolError, ToolOutput: c.toolOutput,
		Main: len(c.tools) > 0, Status: 200, Answer: p.kind}
	if p.kind == "error" {
		rec.Status = p.status
	} else if p.kind == "hang" {
		rec.Status = 0
	}
	if len(c.tools) == 0 && p.kind == "text" {
		rec.Answer = "side"
	}
	m.add(rec, body)
	ctx := r.Context()
	switch p.kind {
	case "error":
		if p.status == 429 {
			w.Header().Set("retry-after", "1")
		}
		api.writeError(w, c, p, rec.Seq)
		return
	case "hang":
		m.wait(ctx, 0)
		return
	}
	if c.schema != nil && p.kind == "text" {
		// A side request that wants JSON (Gemini CLI's model router and the like).
		b, _ := json.Marshal(schemaValue(c.schema))
		p.text = string(b)
	}
	a := api.answer(w, c, rec.Seq)
	switch p.kind {
	case "tool":
		a.tool(p.command)
	case "exitplan":
		a.(*anthropicAnswer).call("ExitPlanMode", map[string]any{"plan": planText})
	case "patch":
		a.(*openaiAnswer).applyPatch()
	case "stall":
		a.text(p.text)
		m.wait(ctx, 0)
		return
	case "slow":
		n := max(int(p.slowFor/m.Tick), 1)
		for i := 1; i <= n; i++ {
			if i == n && !m.passGate(ctx) {
				return
			}
			a.text(fmt.Sprintf("chunk %d of %d. ", i, n))
			m.sent(rec.Seq, i)
			if i < n && !m.wait(ctx, m.Tick) {
				return
			}
		}
	default:
		a.text(p.text)
	}
	a.end()
}

// schemaValue makes a value that fits a JSON schema: each property of an object filled in.
func schemaValue(schema map[string]any) any {
	typ, _ := schema["type"].(string)
	if enum, ok := schema["enum"].([]any); ok && len(enum) > 0 {
		return enum[0]
	}
	switch strings.ToLower(typ) {
	case "object":
		out := map[string]any{}
		props, _ := schema["properties"].(map[string]any)
		for k, v := range props {
			if sub, ok := v.(map[string]any); ok {
				out[k] = schemaValue(sub)
			}
		}
		return out
	case "array":
		return []any{}
	case "integer", "number":
		return 1
	case "boolean":
		return false
	}
	return "mock"
}

// sse writes server-sent events, flushing each one.
type sse struct {
	w http.ResponseWriter
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	s := &sse{w: w}
	s.flush()
	return s
}

func (s *sse) flush() {
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

// event writes one event; with name "" a data line alone (Gemini).
func (s *sse) event(name string, data any) {
	b, _ := json.Marshal(data)
	if name != "" {
		fmt.Fprintf(s.w, "event: %s\n", name)
	}
	fmt.Fprintf(s.w, "data: %s\n\n", b)
	s.flush()
}

// LogLines renders records as JSON lines.
func LogLines(reqs []Request) []byte {
	var b []byte
	for _, r := range reqs {
		j, _ := json.Marshal(r)
		b = append(append(b, j...), '\n')
	}
	return b
}
