package supervisor

import (
	"fmt"
	"testing"

	"github.com/tidwall/gjson"

	"agt/config"
	"agt/spawn/ctl"
	"agt/state"
	"agt/stream"
)

func codexSpec() state.Spec {
	return state.Spec{Kind: "codex", Format: config.FormatCodexServer, Stdin: config.StdinACP, Argv: []string{"codex", "app-server"}, Model: "gpt-test"}
}

// codexHandshake answers initialize and thread/start (or thread/resume of resume), checking
// that the thread asks before it acts, and returns the thread's id.
func (a *testAgent) codexHandshake(resume string) string {
	a.t.Helper()
	init := a.heard()
	if gjson.Get(init, "method").Str != "initialize" {
		a.t.Fatalf("first line %q, want initialize", init)
	}
	a.say(fmt.Sprintf(`{"id":%d,"result":{"userAgent":"codex"}}`, gjson.Get(init, "id").Int()))
	if l := a.heard(); gjson.Get(l, "method").Str != "initialized" {
		a.t.Fatalf("after initialize: %q", l)
	}
	open := a.heard()
	id := "thr-1"
	switch m := gjson.Get(open, "method").Str; {
	case resume == "" && m == "thread/start":
		if gjson.Get(open, "params.approvalPolicy").Str != "untrusted" || gjson.Get(open, "params.model").Str != "gpt-test" {
			a.t.Fatalf("thread/start %q: want approvals asked for, and the record's model", open)
		}
	case resume != "" && m == "thread/resume" && gjson.Get(open, "params.threadId").Str == resume:
		id = resume
	default:
		a.t.Fatalf("after initialized: %q", open)
	}
	a.say(fmt.Sprintf(`{"id":%d,"result":{"thread":{"id":%q},"model":"gpt-test"}}`, gjson.Get(open, "id").Int(), id))
	if err := <-a.begun; err != nil {
		a.t.Fatalf("begin: %v", err)
	}
	return id
}

// TestCodexConversation: Codex through its app-server as one conversation: the prompt is a turn,
// a message while it runs is refused unless steered (turn/steer), its approval request waits in
// the inbox until agt approve answers it, the turn's end waits for input; an interrupt of the
// next turn is turn/interrupt.
func TestCodexConversation(t *testing.T) {
	s := newTestSupervisor(t, codexSpec())
	prompt := "first task"
	a := startAgent(t, s, false, &prompt)
	thread := a.codexHandshake("")
	start := a.heard()
	if gjson.Get(start, "method").Str != "turn/start" || gjson.Get(start, "params.input.0.text").Str != "first task" || gjson.Get(start, "params.threadId").Str != thread {
		t.Fatalf("prompt %q", start)
	}
	a.say(fmt.Sprintf(`{"id":%d,"result":{"turn":{"id":"turn-1","status":"inProgress"}}}`, gjson.Get(start, "id").Int()))

	refused(t, s.conv.send(ctl.Request{Op: ctl.OpSend, Text: "early"}), "not waiting for input")
	accepted(t, s.conv.send(ctl.Request{Op: ctl.OpSend, Text: "also this", Steer: true}))
	if l := a.heard(); gjson.Get(l, "method").Str != "turn/steer" || gjson.Get(l, "params.expectedTurnId").Str != "turn-1" || gjson.Get(l, "params.input.0.text").Str != "also this" {
		t.Fatalf("steer %q", l)
	}

	a.say(`{"method":"item/started","params":{"item":{"type":"commandExecution","id":"call_1","command":"/bin/bash -lc 'rm -rf build'","cwd":"/w","status":"inProgress"}}}`,
		`{"method":"item/commandExecution/requestApproval","id":0,"params":{"itemId":"call_1","command":"/bin/bash -lc 'rm -rf build'","cwd":"/w"}}`)
	waitState(t, s, stream.Waiting, stream.ReasonPermission)
	if ids := s.pendingIDs(); len(ids) != 1 || ids[0] != "0" {
		t.Fatalf("inbox %q", ids)
	}
	accepted(t, s.conv.answer(ctl.Request{Op: ctl.OpApprove}))
	if l := a.heard(); gjson.Get(l, "id").Int() != 0 || gjson.Get(l, "result.decision").Str != "accept" {
		t.Fatalf("answer %q", l)
	}
	waitState(t, s, stream.Running, "")
	a.say(`{"method":"item/completed","params":{"item":{"type":"commandExecution","id":"call_1","status":"completed","exitCode":0,"aggregatedOutput":""}}}`,
		`{"method":"item/completed","params":{"item":{"type":"agentMessage","id":"m1","text":"done"}}}`,
		`{"method":"turn/completed","params":{"turn":{"id":"turn-1","status":"completed"}}}`)
	waitState(t, s, stream.Waiting, stream.ReasonInput)
	if ev := waitEvent(t, s, stream.TypeResult, nil); !ev.Get("ok").Bool() || ev.Get("text").Str != "done" {
		t.Fatalf("result %s", ev.Raw)
	}

	// The next turn, interrupted.
	accepted(t, s.conv.send(ctl.Request{Op: ctl.OpSend, Text: "next"}))
	next := a.heard()
	if gjson.Get(next, "method").Str != "turn/start" {
		t.Fatalf("next turn %q", next)
	}
	accepted(t, s.conv.interrupt()) // before the turn's id is known: sent once it is
	a.say(`{"method":"turn/started","params":{"turn":{"id":"turn-2"}}}`)
	if l := a.heard(); gjson.Get(l, "method").Str != "turn/interrupt" || gjson.Get(l, "params.turnId").Str != "turn-2" {
		t.Fatalf("interrupt %q", l)
	}
}

// TestCodexConversationResumes: a restart resumes the thread by its id, and sends no prompt.
func TestCodexConversationResumes(t *testing.T) {
	s := newTestSupervisor(t, codexSpec())
	s.status.SessionID = "thr-9"
	a := startAgent(t, s, true, nil)
	if got := a.codexHandshake("thr-9"); got != "thr-9" {
		t.Fatalf("resumed %s", got)
	}
	waitState(t, s, stream.Waiting, stream.ReasonInput)
	a.heardNothing()
}

// TestCodexInSandbox: inside agt's sandbox a thread asks for none of Codex's own.
func TestCodexInSandbox(t *testing.T) {
	spec := codexSpec()
	spec.Sandbox = &state.Sandbox{Tool: "bwrap"}
	s := newTestSupervisor(t, spec)
	a := startAgent(t, s, false, nil)
	a.say(`{"id":1,"result":{}}`)
	a.heard()
	a.heard()
	l := a.heard()
	if gjson.Get(l, "params.sandbox").Str != codexInSandbox {
		t.Fatalf("thread/start %q", l)
	}
	a.say(`{"id":2,"result":{"thread":{"id":"thr-1"}}}`)
	if err := <-a.begun; err != nil {
		t.Fatal(err)
	}
}
