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
//	slow=40s      stream text for the given time (default 40s), a chunk every half second
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

// ---- Anthropic Messages ----

type anthropicAPI struct{}

func (anthropicAPI) name() string { return "anthropic" }

type anthropicBlock struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Content json.RawMessage `json:"content"`  // of a tool_result: a string or blocks
	IsError bool            `json:"is_error"` // of a tool_result
}

// anthropicText reads content that is a string or a list of blocks as its texts.
func anthropicText(raw json.RawMessage) []string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}
	}
	var blocks []anthropicBlock
	json.Unmarshal(raw, &blocks)
	var out []string
	for _, b := range blocks {
		if b.Type == "text" {
			out = append(out, b.Text)
		}
	}
	return out
}

func (anthropicAPI) parse(r *http.Request, body []byte) *conv {
	var req struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	json.Unmarshal(body, &req)
	c := &conv{model: req.Model, stream: req.Stream}
	for _, t := range req.Tools {
		c.tools = append(c.tools, t.Name)
		if c.shell == "" && (t.Name == "Bash" || t.Name == "bash") {
			c.shell = t.Name
		}
		c.exitPlan = c.exitPlan || t.Name == "ExitPlanMode"
	}
	for _, msg := range req.Messages {
		if msg.Role != "user" {
			continue
		}
		var blocks []anthropicBlock
		if json.Unmarshal(msg.Content, &blocks) != nil {
			c.userText(anthropicText(msg.Content))
			continue
		}
		var texts []string
		for _, b := range blocks {
			switch b.Type {
			case "text":
				texts = append(texts, b.Text)
			case "tool_result":
				c.result(strings.Join(anthropicText(b.Content), "\n"), b.IsError)
			}
		}
		c.userText(texts)
	}
	return c
}

func (anthropicAPI) writeError(w http.ResponseWriter, c *conv, p plan, seq int) {
	var typ, msg string
	switch p.errKind {
	case "auth":
		typ, msg = "authentication_error", "invalid x-api-key"
	case "rate":
		typ, msg = "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"
	case "server":
		typ, msg = "api_error", "Internal server error"
	case "model":
		typ, msg = "not_found_error", "model: "+c.model
	}
	w.Header().Set("request-id", fmt.Sprintf("req_mock_%d", seq))
	writeJSON(w, p.status, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg},
		"request_id": fmt.Sprintf("req_mock_%d", seq)})
}

// anthropicAnswer writes a Messages answer: SSE events when streamed, else one JSON message.
type anthropicAnswer struct {
	s       *sse // nil: not streamed
	w       http.ResponseWriter
	c       *conv
	seq     int
	open    bool   // a text block is open
	content []any  // the blocks, for an answer not streamed
	whole   string // the text so far, for an answer not streamed
	stop    string
}

func (anthropicAPI) answer(w http.ResponseWriter, c *conv, seq int) answerWriter {
	w.Header().Set("request-id", fmt.Sprintf("req_mock_%d", seq))
	a := &anthropicAnswer{w: w, c: c, seq: seq, stop: "end_turn"}
	if c.stream {
		a.s = newSSE(w)
		a.s.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
			"id": fmt.Sprintf("msg_mock_%d", seq), "type": "message", "role": "assistant", "model": c.model,
			"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": 100, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}})
		a.s.event("ping", map[string]any{"type": "ping"})
	}
	return a
}

func (a *anthropicAnswer) text(t string) {
	if a.s == nil {
		a.whole += t
		return
	}
	if !a.open {
		a.open = true
		a.s.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
	}
	a.s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
		"delta": map[string]any{"type": "text_delta", "text": t}})
}

func (a *anthropicAnswer) tool(cmd string) {
	a.call(a.c.shell, map[string]any{"command": cmd, "description": "Run a command"})
}

// call calls the tool name with input.
func (a *anthropicAnswer) call(name string, input map[string]any) {
	a.stop = "tool_use"
	id := fmt.Sprintf("toolu_mock_%d", a.seq)
	if a.s == nil {
		a.content = append(a.content, map[string]any{"type": "tool_use", "id": id, "name": name, "input": input})
		return
	}
	in, _ := json.Marshal(input)
	a.s.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
		"content_block": map[string]any{"type": "tool_use", "id": id, "name": name, "input": map[string]any{}}})
	a.s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
		"delta": map[string]any{"type": "input_json_delta", "partial_json": string(in)}})
	a.s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
}

func (a *anthropicAnswer) end() {
	if a.s == nil {
		content := a.content
		if a.whole != "" {
			content = append([]any{map[string]any{"type": "text", "text": a.whole}}, content...)
		}
		writeJSON(a.w, 200, map[string]any{"id": fmt.Sprintf("msg_mock_%d", a.seq), "type": "message", "role": "assistant",
			"model": a.c.model, "content": content, "stop_reason": a.stop, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": 100, "output_tokens": 10}})
		return
	}
	if a.open {
		a.s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	}
	a.s.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": a.stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 10}})
	a.s.event("message_stop", map[string]any{"type": "message_stop"})
}

// ---- OpenAI Responses ----

type openaiAPI struct{}

func (openaiAPI) name() string { return "openai" }

// openaiText reads message content or a tool output (a string, or a list of parts) as its texts.
func openaiText(raw json.RawMessage) []string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}
	}
	var parts []struct {
		Text string `json:"text"`
	}
	json.Unmarshal(raw, &parts)
	var out []string
	for _, p := range parts {
		out = append(out, p.Text)
	}
	return out
}

func (openaiAPI) parse(r *http.Request, body []byte) *conv {
	var req struct {
		Model  string          `json:"model"`
		Stream bool            `json:"stream"`
		Input  json.RawMessage `json:"input"`
		Tools  []struct {
			Type string `json:"type"`
			Name string `json:"name"`
		} `json:"tools"`
	}
	json.Unmarshal(body, &req)
	c := &conv{model: req.Model, stream: req.Stream}
	for _, t := range req.Tools {
		name := t.Name
		if name == "" {
			name = t.Type
		}
		c.tools = append(c.tools, name)
		if c.shell == "" && (name == "exec_command" || name == "shell_command" || name == "shell") {
			c.shell = name
		}
		c.patch = c.patch || name == "apply_patch"
	}
	var items []struct {
		Type    string          `json:"type"`
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
		Output  json.RawMessage `json:"output"`
	}
	if json.Unmarshal(req.Input, &items) != nil {
		c.userText(openaiText(req.Input))
		return c
	}
	for _, it := range items {
		switch {
		case strings.HasSuffix(it.Type, "_call_output"):
			c.result(strings.Join(openaiText(it.Output), "\n"), false)
		case (it.Type == "message" || it.Type == "") && it.Role == "user":
			c.userText(openaiText(it.Content))
		}
	}
	return c
}

func (openaiAPI) writeError(w http.ResponseWriter, c *conv, p plan, seq int) {
	var typ, msg string
	var code any
	switch p.errKind {
	case "auth":
		typ, code, msg = "invalid_request_error", "invalid_api_key", "Incorrect API key provided: test-key. You can find your API key at https://platform.openai.com/account/api-keys."
	case "rate":
		typ, code, msg = "tokens", "rate_limit_exceeded", "Rate limit reached for "+c.model+" in organization org-mock on tokens per min (TPM): Limit 1000, Used 1000, Requested 100. Please try again in 1s."
	case "server":
		typ, msg = "server_error", "The server had an error while processing your request. Sorry about that!"
	case "model":
		typ, code, msg = "invalid_request_error", "model_not_found", "The model `"+c.model+"` does not exist or you do not have access to it."
	}
	w.Header().Set("x-request-id", fmt.Sprintf("req_mock_%d", seq))
	writeJSON(w, p.status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}})
}

// openaiAnswer writes a Responses answer as SSE (Codex always streams).
type openaiAnswer struct {
	s      *sse
	c      *conv
	seq    int
	n      int // sequence_number of the next event
	open   bool
	whole  strings.Builder
	output []any
}

func (openaiAPI) answer(w http.ResponseWriter, c *conv, seq int) answerWriter {
	w.Header().Set("x-request-id", fmt.Sprintf("req_mock_%d", seq))
	a := &openaiAnswer{s: newSSE(w), c: c, seq: seq}
	a.event("response.created", map[string]any{"response": a.response("in_progress", nil)})
	a.event("response.in_progress", map[string]any{"response": a.response("in_progress", nil)})
	return a
}

func (a *openaiAnswer) event(typ string, fields map[string]any) {
	fields["type"] = typ
	fields["sequence_number"] = a.n
	a.n++
	a.s.event(typ, fields)
}

func (a *openaiAnswer) response(status string, usage any) map[string]any {
	return map[string]any{"id": fmt.Sprintf("resp_mock_%d", a.seq), "object": "response", "created_at": time.Now().Unix(),
		"status": status, "model": a.c.model, "output": append([]any{}, a.output...), "usage": usage}
}

func (a *openaiAnswer) itemID() string { return fmt.Sprintf("msg_mock_%d", a.seq) }

func (a *openaiAnswer) text(t string) {
	if !a.open {
		a.open = true
		a.event("response.output_item.added", map[string]any{"output_index": len(a.output), "item": map[string]any{
			"id": a.itemID(), "type": "message", "status": "in_progress", "role": "assistant", "content": []any{}}})
		a.event("response.content_part.added", map[string]any{"item_id": a.itemID(), "output_index": len(a.output),
			"content_index": 0, "part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
	}
	a.whole.WriteString(t)
	a.event("response.output_text.delta", map[string]any{"item_id": a.itemID(), "output_index": len(a.output),
		"content_index": 0, "delta": t})
}

func (a *openaiAnswer) tool(cmd string) {
	args, _ := json.Marshal(map[string]any{"cmd": cmd})
	switch a.c.shell {
	case "shell_command":
		args, _ = json.Marshal(map[string]any{"command": cmd})
	case "shell":
		args, _ = json.Marshal(map[string]any{"command": []string{"bash", "-lc", cmd}})
	}
	item := map[string]any{"id": fmt.Sprintf("fc_mock_%d", a.seq), "type": "function_call", "status": "completed",
		"call_id": fmt.Sprintf("call_mock_%d", a.seq), "name": a.c.shell, "arguments": string(args)}
	a.event("response.output_item.added", map[string]any{"output_index": len(a.output), "item": item})
	a.event("response.function_call_arguments.done", map[string]any{"item_id": item["id"], "output_index": len(a.output),
		"arguments": string(args)})
	a.event("response.output_item.done", map[string]any{"output_index": len(a.output), "item": item})
	a.output = append(a.output, item)
}

// patchText adds one file, agt-patch.txt.
const patchText = "*** Begin Patch\n*** Add File: agt-patch.txt\n+agt-patch-ok\n*** End Patch\n"

// applyPatch calls Codex's apply_patch, a custom (freeform) tool.
func (a *openaiAnswer) applyPatch() {
	item := map[string]any{"id": fmt.Sprintf("ctc_mock_%d", a.seq), "type": "custom_tool_call", "status": "completed",
		"call_id": fmt.Sprintf("call_mock_%d", a.seq), "name": "apply_patch", "input": patchText}
	a.event("response.output_item.added", map[string]any{"output_index": len(a.output), "item": item})
	a.event("response.output_item.done", map[string]any{"output_index": len(a.output), "item": item})
	a.output = append(a.output, item)
}

func (a *openaiAnswer) end() {
	if a.open {
		part := map[string]any{"type": "output_text", "text": a.whole.String(), "annotations": []any{}}
		i := len(a.output)
		a.event("response.output_text.done", map[string]any{"item_id": a.itemID(), "output_index": i, "content_index": 0, "text": a.whole.String()})
		a.event("response.content_part.done", map[string]any{"item_id": a.itemID(), "output_index": i, "content_index": 0, "part": part})
		item := map[string]any{"id": a.itemID(), "type": "message", "status": "completed", "role": "assistant", "content": []any{part}}
		a.event("response.output_item.done", map[string]any{"output_index": i, "item": item})
		a.output = append(a.output, item)
	}
	a.event("response.completed", map[string]any{"response": a.response("completed", map[string]any{
		"input_tokens": 100, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": 10, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 110})})
}

// ---- Gemini ----

type geminiAPI struct{}

func (geminiAPI) name() string { return "gemini" }

func (geminiAPI) parse(r *http.Request, body []byte) *conv {
	model, method, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v1beta/models/"), ":")
	var req struct {
		Contents []struct {
			Role  string `json:"role"`
			Parts []struct {
				Text             string `json:"text"`
				Thought          bool   `json:"thought"`
				FunctionResponse *struct {
					Response json.RawMessage `json:"response"`
				} `json:"functionResponse"`
			} `json:"parts"`
		} `json:"contents"`
		Tools []struct {
			FunctionDeclarations []struct {
				Name string `json:"name"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
		GenerationConfig struct {
			ResponseMimeType   string         `json:"responseMimeType"`
			ResponseJSONSchema map[string]any `json:"responseJsonSchema"`
			ResponseSchema     map[string]any `json:"responseSchema"`
		} `json:"generationConfig"`
	}
	json.Unmarshal(body, &req)
	c := &conv{model: model, stream: method == "streamGenerateContent"}
	for _, t := range req.Tools {
		for _, f := range t.FunctionDeclarations {
			c.tools = append(c.tools, f.Name)
			if f.Name == "run_shell_command" {
				c.shell = f.Name
			}
		}
	}
	for _, content := range req.Contents {
		if content.Role != "user" {
			continue
		}
		var texts []string
		for _, p := range content.Parts {
			switch {
			case p.FunctionResponse != nil:
				c.result(string(p.FunctionResponse.Response), false)
			case !p.Thought:
				texts = append(texts, p.Text)
			}
		}
		c.userText(texts)
	}
	if gc := req.GenerationConfig; gc.ResponseMimeType == "application/json" {
		c.schema = gc.ResponseJSONSchema
		if c.schema == nil {
			c.schema = gc.ResponseSchema
		}
		if c.schema == nil {
			c.schema = map[string]any{"type": "object"}
		}
	}
	return c
}

func (geminiAPI) writeError(w http.ResponseWriter, c *conv, p plan, seq int) {
	var status, msg string
	switch p.errKind {
	case "auth":
		status, msg = "UNAUTHENTICATED", "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential."
	case "rate":
		status, msg = "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."
	case "server":
		status, msg = "INTERNAL", "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"
	case "model":
		status, msg = "NOT_FOUND", "models/"+c.model+" is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods."
	}
	writeJSON(w, p.status, map[string]any{"error": map[string]any{"code": p.status, "message": msg, "status": status}})
}

// geminiAnswer writes a generateContent answer: SSE chunks when streamed, else one response.
type geminiAnswer struct {
	s     *sse // nil: not streamed
	w     http.ResponseWriter
	c     *conv
	seq   int
	parts []any // for an answer not streamed
	done  bool  // the last chunk (finishReason) went out
}

func (geminiAPI) answer(w http.ResponseWriter, c *conv, seq int) answerWriter {
	a := &geminiAnswer{w: w, c: c, seq: seq}
	if c.stream {
		a.s = newSSE(w)
	}
	return a
}

func (a *geminiAnswer) chunk(parts []any, finish bool) map[string]any {
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
	if finish {
		cand["finishReason"] = "STOP"
	}
	return map[string]any{"candidates": []any{cand}, "modelVersion": a.c.model, "responseId": fmt.Sprintf("mock-%d", a.seq),
		"usageMetadata": map[string]any{"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110}}
}

func (a *geminiAnswer) text(t string) {
	part := map[string]any{"text": t}
	if a.s == nil {
		a.parts = append(a.parts, part)
		return
	}
	a.s.event("", a.chunk([]any{part}, false))
}

func (a *geminiAnswer) tool(cmd string) {
	part := map[string]any{"functionCall": map[string]any{"name": "run_shell_command",
		"args": map[string]any{"command": cmd, "description": "Run a command"}}}
	if a.s == nil {
		a.parts = append(a.parts, part)
		return
	}
	// The call and the end of the answer come in one chunk, as the real API sends them.
	a.s.event("", a.chunk([]any{part}, true))
	a.done = true
}

func (a *geminiAnswer) end() {
	switch {
	case a.s == nil:
		writeJSON(a.w, 200, a.chunk(a.parts, true))
	case !a.done:
		a.s.event("", a.chunk([]any{map[string]any{"text": ""}}, true))
	}
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
