package supervisor

import (
	"testing"

	"github.com/tidwall/gjson"

	"agt/config"
	"agt/spawn/ctl"
	"agt/state"
	"agt/stream"
)

// Claude's lines, cut to what the decoder reads.
const (
	claudeInit   = `{"type":"system","subtype":"init","session_id":"s-1","model":"m"}`
	claudeText   = `{"type":"assistant","message":{"content":[{"type":"text","text":"working"}]},"session_id":"s-1"}`
	claudeResult = `{"type":"result","subtype":"success","is_error":false,"result":"done","num_turns":1,"total_cost_usd":0.01,"session_id":"s-1"}`
	claudeAsk    = `{"type":"control_request","request_id":"r-1","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"ls"},"permission_suggestions":[{"type":"addRules","destination":"localSettings"}]}}`
)

// startClaude starts a Claude conversation of spec with the prompt "go", which the agent reads,
// then says lines.
func startClaude(t *testing.T, spec state.Spec, lines ...string) (*supervisor, *testAgent) {
	t.Helper()
	s := newTestSupervisor(t, spec)
	prompt := "go"
	a := startAgent(t, s, false, &prompt)
	a.heard()
	a.say(lines...)
	return s, a
}

func claudeSpec() state.Spec {
	return state.Spec{Kind: "claude", Format: "claude", Stdin: config.StdinStreamJSON,
		Argv: []string{"claude", "-p"}, Resume: []string{"claude", "--resume", "$AGT_SESSION_ID", "-p"}}
}

// TestClaudeTurns: the prompt is the first user message; a message sent while the agent works
// is refused, or held with --queue and written at the turn's result; one sent while it waits
// for input starts the next turn at once.
func TestClaudeTurns(t *testing.T) {
	s := newTestSupervisor(t, claudeSpec())
	prompt := "first task"
	a := startAgent(t, s, false, &prompt)
	if line := a.heard(); gjson.Get(line, "message.content").Str != "first task" || gjson.Get(line, "type").Str != "user" {
		t.Fatalf("first line %q, want the prompt as a user message", line)
	}
	a.say(claudeInit, claudeText)
	waitState(t, s, stream.Running, "")

	refused(t, s.conv.send(ctl.Request{Op: ctl.OpSend, Text: "too soon"}), "not waiting for input; 'agt send --queue'")
	if r := s.conv.send(ctl.Request{Op: ctl.OpSend, Text: "queued", Queue: true}); !r.Queued {
		t.Fatalf("queue: %+v", r)
	}
	a.heardNothing()

	a.say(claudeResult) // the turn ends: the queued message starts the next at once
	if line := a.heard(); gjson.Get(line, "message.content").Str != "queued" {
		t.Fatalf("after the result: %q, want the queued message", line)
	}
	waitState(t, s, stream.Running, "")
	a.say(claudeResult)
	waitState(t, s, stream.Waiting, stream.ReasonInput)

	r := s.conv.send(ctl.Request{Op: ctl.OpSend, Text: "next"})
	accepted(t, r)
	if line := a.heard(); gjson.Get(line, "message.content").Str != "next" {
		t.Fatalf("send: %q", line)
	}
	waitState(t, s, stream.Running, "")
}

// TestClaudePermission: a can_use_tool request waits in the inbox; approve answers it on
// stdin (for the session, with always: the suggestions kept for the session alone), records
// the decision and lets the turn go on.
func TestClaudePermission(t *testing.T) {
	s, a := startClaude(t, claudeSpec(), claudeInit, claudeAsk)
	waitState(t, s, stream.Waiting, stream.ReasonPermission)
	if ps := s.pendingIDs(); len(ps) != 1 || ps[0] != "r-1" {
		t.Fatalf("pending %v", ps)
	}

	refused(t, s.conv.answer(ctl.Request{Op: ctl.OpApprove, ID: "r-9"}), `no pending permission request "r-9"`)
	r := s.conv.answer(ctl.Request{Op: ctl.OpApprove, Always: true})
	accepted(t, r)
	if r.ID != "r-1" || r.Tool != "Bash" {
		t.Fatalf("reply %+v", r)
	}
	line := a.heard()
	if gjson.Get(line, "response.request_id").Str != "r-1" || gjson.Get(line, "response.response.behavior").Str != "allow" ||
		gjson.Get(line, "response.response.updatedPermissions.0.destination").Str != "session" {
		t.Fatalf("answer %q", line)
	}
	waitEvent(t, s, stream.TypePermission, func(ev gjson.Result) bool { return ev.Get("decision").Str == "allow" })
	waitState(t, s, stream.Running, "")
	if ps := s.pendingIDs(); len(ps) != 0 {
		t.Fatalf("still pending: %v", ps)
	}
}

// TestClaudeDenyByPolicy: a request that a deny rule covers is answered at once, as the rule
// says, and nobody is asked.
func TestClaudeDenyByPolicy(t *testing.T) {
	spec := claudeSpec()
	spec.Deny = []string{"Bash(ls)"}
	s, a := startClaude(t, spec, claudeInit, claudeAsk)
	line := a.heard()
	if gjson.Get(line, "response.response.behavior").Str != "deny" ||
		gjson.Get(line, "response.response.message").Str != "denied by the rule Bash(ls) in agt.toml" {
		t.Fatalf("answer %q", line)
	}
	ev := waitEvent(t, s, stream.TypePermission, nil)
	if ev.Get("decision").Str != "deny" || ev.Get("rule").Str != "Bash(ls)" {
		t.Fatalf("event %s", ev.Raw)
	}
	if ps := s.pendingIDs(); len(ps) != 0 {
		t.Fatalf("asked all the same: %v", ps)
	}
}

// TestClaudeInterruptAndEnd: interrupt writes an interrupt control_request while a turn runs;
// stop --after-turn closes stdin once the turn is over, and no message is taken meanwhile.
func TestClaudeInterruptAndEnd(t *testing.T) {
	s, a := startClaude(t, claudeSpec(), claudeInit, claudeText)
	waitState(t, s, stream.Running, "")

	accepted(t, s.conv.interrupt())
	if line := a.heard(); gjson.Get(line, "request.subtype").Str != "interrupt" || gjson.Get(line, "request_id").Str != "agt-interrupt-1" {
		t.Fatalf("interrupt %q", line)
	}
	accepted(t, s.conv.endAfterTurn())
	if s.a.Want() != "down" {
		t.Fatal("want is not down")
	}
	refused(t, s.conv.send(ctl.Request{Op: ctl.OpSend, Text: "more", Queue: true}), "ending after its turn")
	a.heardNothing() // the turn runs on
	a.say(claudeResult)
	a.heardEOF()
}

// TestClaudeResumePlan: a resume runs the resume argv and sends no prompt: the conversation
// waits for the next message where it was.
func TestClaudeResumePlan(t *testing.T) {
	s := newTestSupervisor(t, claudeSpec())
	prompt := "first task"
	p := s.conv.plan(true, &prompt)
	if p.prompt != nil || len(p.argv) != 4 || p.argv[1] != "--resume" || !p.resumed {
		t.Fatalf("plan %+v", p)
	}
	if p := s.conv.plan(false, &prompt); p.prompt != &prompt || p.argv[0] != "claude" || len(p.argv) != 2 {
		t.Fatalf("plan %+v", p)
	}
}

// TestClaudeNoInputBeforeStart: before the first start nothing can be written.
func TestClaudeNoInputBeforeStart(t *testing.T) {
	s := newTestSupervisor(t, claudeSpec())
	s.mu.Lock()
	s.snap.State = stream.Starting
	s.mu.Unlock()
	refused(t, s.conv.send(ctl.Request{Op: ctl.OpSend, Text: "x"}), "has no input open")
	refused(t, s.conv.keys("x"), "has no terminal")
}
