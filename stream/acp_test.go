package stream

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// acpFixtures are the ACP transcripts in testdata/acp: ">>> " lines agt writes, "<<< " lines the
// agent writes, "### " notes.
func acpFixtures(t testing.TB) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join("testdata", "acp", "*_*.txt"))
	if err != nil || len(m) == 0 {
		t.Fatalf("no ACP fixtures in testdata/acp: %v", err)
	}
	return m
}

// playACP drives a client through a transcript as the supervisor would: Connect, the prompt the
// transcript sends, the agent's lines through Decode (through a buffer clobbered after each
// call), and for each line the driver wrote, the call that makes agt write it (a cancel, an
// answer allowing the request). Every line the client writes must be the one the transcript's
// driver wrote: the same method and id, the same option chosen. It returns the events and End's
// failure for the exit code the transcript notes.
func playACP(t testing.TB, data []byte) ([]Event, Failure) {
	t.Helper()
	a := NewACP("agt", "test")
	var prompt string
	for line := range bytes.Lines(data) {
		if l, ok := bytes.CutPrefix(line, []byte(">>> ")); ok && gjson.GetBytes(l, "method").Str == "session/prompt" {
			prompt = gjson.GetBytes(l, "params.prompt.0.text").Str
			break
		}
	}
	a.Connect("/work", "")
	a.Prompt(prompt)
	prompts := 0
	var sent [][]byte
	var events []Event
	var buf, early []byte
	exit := Exit{}
	for line := range bytes.Lines(data) {
		line = bytes.TrimSuffix(line, []byte("\n"))
		switch {
		case bytes.HasPrefix(line, []byte("<<< ")):
			buf = append(buf[:0], line[4:]...)
			n := len(events)
			events = a.Decode(events, buf)
			early = append(early, serialize(events[n:])...)
			for i := range buf {
				buf[i] = '#'
			}
		case bytes.HasPrefix(line, []byte(">>> ")):
			want := gjson.ParseBytes(line[4:])
			switch {
			case want.Get("method").Str == "session/prompt":
				if prompts++; prompts > 1 { // the first went before the session opened
					a.Prompt(want.Get("params.prompt.0.text").Str)
				}
			case want.Get("method").Str == "session/cancel":
				a.Cancel()
			case want.Get("result.outcome.optionId").Exists():
				allow := strings.HasPrefix(acpOptionKind(data, want.Get("result.outcome.optionId").Str), "allow")
				if _, err := a.Answer(want.Get("id").Raw, allow, false); err != nil {
					t.Fatal(err)
				}
			}
			sent = append(sent, a.Lines()...)
			if len(sent) == 0 {
				t.Fatalf("agt wrote nothing where the driver wrote %s", line)
			}
			got := gjson.ParseBytes(sent[0])
			sent = sent[1:]
			for _, path := range []string{"method", "id", "result.outcome.optionId", "params.sessionId", "params.cwd", "params.protocolVersion"} {
				if path == "params.cwd" && got.Get(path).Str == "/work" {
					continue // the transcript's own directory
				}
				if g, w := got.Get(path).Raw, want.Get(path).Raw; g != w && !(path == "id" && strings.TrimSpace(g) == strings.TrimSpace(w)) {
					t.Errorf("agt wrote %s: %s, the driver %s\n agt: %s\n driver: %s", path, g, w, got.Raw, want.Raw)
				}
			}
		case bytes.HasPrefix(line, []byte("### ")):
			if m := rcPattern.FindSubmatch(line); m != nil {
				exit.Code = int(gjson.ParseBytes(m[1]).Int())
			}
		}
	}
	if late := serialize(events); !bytes.Equal(early, late) {
		t.Errorf("events changed when the line buffer was reused:\nbefore:\n%s\nafter:\n%s", early, late)
	}
	ended := a.errClass
	events, f := a.End(events, exit)
	checkACPFailure(t, f, exit, ended)
	return events, f
}

// acpOptionKind returns the kind of the option optionID in the transcript's permission requests.
func acpOptionKind(data []byte, optionID string) string {
	for line := range bytes.Lines(data) {
		if l, ok := bytes.CutPrefix(line, []byte("<<< ")); ok {
			if k := gjson.GetBytes(l, `params.options.#(optionId=="`+optionID+`").kind`); k.Exists() {
				return k.Str
			}
		}
	}
	return ""
}

// checkACPFailure checks End's failure as checkFailure does, except that a run the client
// ended itself (ended, the class it failed with) fails with that class however it exited.
func checkACPFailure(t testing.TB, f Failure, exit Exit, ended string) {
	t.Helper()
	if ended != "" && exit.Clean() {
		if f.Class != ended || f.Message == "" {
			t.Errorf("a run the client ended (%s) gave failure %+v", ended, f)
		}
		return
	}
	checkFailure(t, f, exit)
}

// TestACPGolden plays every ACP transcript and compares the events with
// <fixture>.golden.ndjson; go test ./stream -run ACPGolden -u rewrites them.
func TestACPGolden(t *testing.T) {
	for _, file := range acpFixtures(t) {
		t.Run(stem(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			events, failure := playACP(t, data)
			checkGolden(t, events, failure, filepath.Join("testdata", "acp", stem(file)+".golden.ndjson"), "ACPGolden")
		})
	}
}

// acpLines decodes lines with a connected client whose session s-1 is open and a prompt sent,
// and returns the events and what the client wrote after the handshake.
func acpLines(t *testing.T, a *ACP, lines ...string) ([]Event, []string) {
	t.Helper()
	if a.phase == acpIdle {
		a.Connect("/w", "")
		a.Prompt("hi")
		a.Decode(nil, []byte(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true}}}`))
		a.Decode(nil, []byte(`{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s-1"}}`))
		a.Lines()
	}
	var events []Event
	for _, l := range lines {
		events = a.Decode(events, []byte(l))
	}
	var out []string
	for _, l := range a.Lines() {
		out = append(out, string(l))
	}
	return events, out
}

func sessionUpdate(u string) string {
	return `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":` + u + `}}`
}

func TestACPHandshakeFailures(t *testing.T) {
	for _, tt := range []struct{ name, line, want string }{
		{"not JSON", "Starting server on port 3000", "it wrote something other than JSON-RPC: Starting server on port 3000"},
		{"no version", `{"jsonrpc":"2.0","id":1,"result":{}}`, "its answer to initialize has no protocolVersion: {}"},
		{"a later version", `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":3}}`, "it speaks ACP version 3; agt speaks 1"},
		{"refused", `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"boom"}}`, "initialize failed: boom (code -32603)"},
		{"not JSON-RPC", `{"hello":"world"}`, `it wrote JSON that is no JSON-RPC message: {"hello":"world"}`},
	} {
		a := NewACP("agt", "test")
		a.Connect("/w", "")
		a.Decode(nil, []byte(tt.line))
		if answered, failed := a.Handshake(); answered || failed != tt.want {
			t.Errorf("%s: Handshake() = %v, %q; want false, %q", tt.name, answered, failed, tt.want)
		}
	}
}

func TestACPSessionNewRefusedAuth(t *testing.T) {
	a := NewACP("agt", "test")
	a.Connect("/w", "")
	a.Decode(nil, []byte(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}`))
	ev := a.Decode(nil, []byte(`{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"Authentication required"}}`))
	if _, failed := a.Handshake(); failed != "session/new failed: Authentication required (code -32000)" {
		t.Errorf("failed = %q", failed)
	}
	if len(ev) != 1 || ev[0].Type != TypeError || ev[0].Class != ClassAuth || ev[0].Code == nil || *ev[0].Code != -32000 {
		t.Errorf("events %s", serialize(ev))
	}
	_, f := a.End(nil, Exit{Code: -1, Signal: "SIGTERM"})
	if f.Class != ClassAuth {
		t.Errorf("failure %+v, want auth", f)
	}
}

func TestACPLateUpdatesInOrder(t *testing.T) {
	a := NewACP("agt", "test")
	events, _ := acpLines(t, a,
		sessionUpdate(`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a"}}`),
		sessionUpdate(`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"b"}}`),
		`{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`,
		sessionUpdate(`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"late"}}`),
		sessionUpdate(`{"sessionUpdate":"tool_call","toolCallId":"t","title":"ls","kind":"execute","status":"completed"}`),
	)
	var got []string
	for _, e := range events {
		got = append(got, e.Type+":"+e.Text)
	}
	want := "text:ab result:ab text:late tool_use: tool_result:"
	if strings.Join(got, " ") != want {
		t.Errorf("got %s, want %s", strings.Join(got, " "), want)
	}
}

func TestACPPermissionAnswers(t *testing.T) {
	ask := `{"jsonrpc":"2.0","id":"p","method":"session/request_permission","params":{"sessionId":"s-1","toolCall":{"toolCallId":"t","name":"Bash","rawInput":{"command":"ls"}},"options":[{"optionId":"y","kind":"allow_once"},{"optionId":"Y","kind":"allow_always"},{"optionId":"n","kind":"reject_once"}]}}`
	for _, tt := range []struct {
		allow, always bool
		want          string
	}{
		{true, false, `{"jsonrpc":"2.0","id":"p","result":{"outcome":{"outcome":"selected","optionId":"y"}}}`},
		{true, true, `{"jsonrpc":"2.0","id":"p","result":{"outcome":{"outcome":"selected","optionId":"Y"}}}`},
		{false, false, `{"jsonrpc":"2.0","id":"p","result":{"outcome":{"outcome":"selected","optionId":"n"}}}`},
	} {
		a := NewACP("agt", "test")
		events, _ := acpLines(t, a, ask)
		if len(events) != 2 || events[0].Type != TypeToolUse || events[1].Type != TypePermission || events[1].ID != "p" || string(events[1].Input) != `{"command":"ls"}` {
			t.Fatalf("events %s", serialize(events))
		}
		if _, err := a.Answer("p", tt.allow, tt.always); err != nil {
			t.Fatal(err)
		}
		if out := a.Lines(); len(out) != 1 || strings.TrimSpace(string(out[0])) != tt.want {
			t.Errorf("allow=%v always=%v: wrote %q, want %s", tt.allow, tt.always, out, tt.want)
		}
		if _, err := a.Answer("p", true, false); err == nil {
			t.Error("a second answer to the same request was taken")
		}
	}
}

func TestACPCancelAnswersPending(t *testing.T) {
	a := NewACP("agt", "test")
	acpLines(t, a, `{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s-1","toolCall":{"toolCallId":"t"},"options":[{"optionId":"y","kind":"allow_once"}]}}`)
	ids := a.Cancel()
	out := a.Lines()
	if len(ids) != 1 || ids[0] != "0" || len(out) != 2 {
		t.Fatalf("ids %v, lines %q", ids, out)
	}
	if want := `{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled"}}}`; strings.TrimSpace(string(out[0])) != want {
		t.Errorf("wrote %s, want %s", out[0], want)
	}
	if want := `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s-1"}}`; strings.TrimSpace(string(out[1])) != want {
		t.Errorf("wrote %s, want %s", out[1], want)
	}
	ev, _ := acpLines(t, a, `{"jsonrpc":"2.0","id":3,"result":{"stopReason":"cancelled"}}`)
	if len(ev) != 1 || ev[0].Type != TypeResult || ev[0].OK || ev[0].Text != "cancelled" {
		t.Errorf("events %s", serialize(ev))
	}
}

func TestACPRefusesOtherRequests(t *testing.T) {
	a := NewACP("agt", "test")
	ev, out := acpLines(t, a, `{"jsonrpc":"2.0","id":7,"method":"fs/read_text_file","params":{"path":"/etc/passwd"}}`)
	want := `{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"method not found: agt offers no fs/read_text_file"}}`
	if len(ev) != 0 || len(out) != 1 || strings.TrimSpace(out[0]) != want {
		t.Errorf("events %s, wrote %q", serialize(ev), out)
	}
}

func TestACPLoadSkipsReplay(t *testing.T) {
	a := NewACP("agt", "test")
	a.Connect("/w", "s-1")
	a.Decode(nil, []byte(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true}}}`))
	out := a.Lines()
	if len(out) != 2 || gjson.GetBytes(out[1], "method").Str != "session/load" || gjson.GetBytes(out[1], "params.sessionId").Str != "s-1" {
		t.Fatalf("wrote %q", out)
	}
	ev := a.Decode(nil, []byte(sessionUpdate(`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"old"}}`)))
	ev = a.Decode(ev, []byte(`{"jsonrpc":"2.0","id":2,"result":{}}`))
	if len(ev) != 1 || ev[0].Type != TypeSession || ev[0].SessionID != "s-1" || !a.Resumed() {
		t.Errorf("events %s", serialize(ev))
	}
	// Gemini replays after its answer: the past until the next prompt, never glued to it.
	ev = a.Decode(nil, []byte(sessionUpdate(`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"old answer"}}`)))
	if len(ev) != 0 {
		t.Errorf("a replay after the answer: %s", serialize(ev))
	}
	a.Prompt("next")
	a.Lines()
	ev = a.Decode(nil, []byte(sessionUpdate(`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"new"}}`)))
	ev = a.Decode(ev, []byte(`{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`))
	if len(ev) != 2 || ev[0].Text != "new" || ev[1].Type != TypeResult || ev[1].Text != "new" {
		t.Errorf("the next turn: %s", serialize(ev))
	}
}

func TestACPLoadRefusedStartsNew(t *testing.T) {
	a := NewACP("agt", "test")
	a.Connect("/w", "s-1")
	a.Decode(nil, []byte(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true}}}`))
	a.Lines()
	ev := a.Decode(nil, []byte(`{"jsonrpc":"2.0","id":2,"error":{"code":-32002,"message":"Resource not found"}}`))
	out := a.Lines()
	if len(ev) != 1 || ev[0].Type != TypeError || ev[0].Fatal || ev[0].Class != ClassSession ||
		ev[0].Message != "session/load of session s-1 failed: Resource not found; a new session instead, which has none of the conversation so far" {
		t.Errorf("events %s", serialize(ev))
	}
	if len(out) != 1 || gjson.GetBytes(out[0], "method").Str != "session/new" {
		t.Errorf("wrote %q", out)
	}
	if _, failed := a.Handshake(); failed != "" {
		t.Errorf("failed %q", failed)
	}
}

// TestACPCostPerTurn: usage_update's cost is the session's running total; each result reports
// what the turn added.
func TestACPCostPerTurn(t *testing.T) {
	a := NewACP("agt", "test")
	ev, _ := acpLines(t, a,
		sessionUpdate(`{"sessionUpdate":"usage_update","used":1,"size":2,"cost":{"amount":0.5,"currency":"USD"}}`),
		`{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`)
	a.Prompt("again")
	ev, _ = acpLines(t, a,
		sessionUpdate(`{"sessionUpdate":"usage_update","used":1,"size":2,"cost":{"amount":0.75,"currency":"USD"}}`),
		`{"jsonrpc":"2.0","id":4,"result":{"stopReason":"max_tokens"}}`)
	if len(ev) != 1 || ev[0].CostUSD == nil || *ev[0].CostUSD != 0.25 || ev[0].OK || ev[0].Text != "max_tokens" {
		t.Errorf("events %s", serialize(ev))
	}
}

// addTranscript seeds a fuzz target with what the agent wrote in a transcript ("<<< " lines):
// all of it, and each line alone.
func addTranscript(f *testing.F, data []byte) {
	var agent [][]byte
	for line := range bytes.Lines(data) {
		if l, ok := bytes.CutPrefix(line, []byte("<<< ")); ok {
			agent = append(agent, bytes.TrimSuffix(l, []byte("\n")))
		}
	}
	f.Add(bytes.Join(agent, []byte("\n")), 0)
	for i, l := range agent {
		f.Add(l, i)
	}
}

// checkWritten fails unless every line a client wrote is one JSON object and a newline.
func checkWritten(t *testing.T, lines [][]byte) {
	t.Helper()
	for _, l := range lines {
		if !gjson.ValidBytes(l) || bytes.IndexByte(l, '\n') != len(l)-1 {
			t.Fatalf("wrote a line that is not one JSON object: %q", l)
		}
	}
}

func FuzzACP(f *testing.F) {
	for _, file := range acpFixtures(f) {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		addTranscript(f, data)
	}
	f.Fuzz(func(t *testing.T, data []byte, code int) {
		a := NewACP("agt", "test")
		a.Connect("/w", "s-0")
		a.Prompt("hi")
		var events []Event
		for i, line := range bytes.Split(data, []byte("\n")) {
			events = a.Decode(events, line)
			switch (i + code) % 5 {
			case 1:
				for id := range a.asks {
					a.Answer(id, i%2 == 0, i%3 == 0)
				}
			case 3:
				a.Cancel()
			}
			checkWritten(t, a.Lines())
		}
		exit := Exit{Code: code % 256}
		ended := a.errClass
		events, f := a.End(events, exit)
		checkACPFailure(t, f, exit, ended)
		checkEvents(t, events)
	})
}

// TestACPPromptFailsAfterOpen: a first prompt answered with an error no later one can cure (a
// model that does not exist) fails the run, but the session was open: Ready stays true, so the
// supervisor's connect takes the failure as the run's, however soon it came.
func TestACPPromptFailsAfterOpen(t *testing.T) {
	a := NewACP("agt", "test")
	a.Connect("/w", "")
	a.Prompt("hi")
	a.Decode(nil, []byte(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}`))
	a.Decode(nil, []byte(`{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s-1"}}`))
	a.Lines()
	a.Decode(nil, []byte(`{"jsonrpc":"2.0","id":3,"error":{"code":400,"message":"model not found: gpt-9"}}`))
	if _, failed := a.Handshake(); failed == "" || !a.Ready() {
		t.Errorf("after the prompt's failure: Ready %v, failed %q; want true and a reason", a.Ready(), failed)
	}
	a.Connect("/w", "") // the next run starts unopened
	if a.Ready() {
		t.Error("Ready before the next run's session opened")
	}
}
