package supervisor

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"agt/config"
	"agt/spawn/ctl"
	"agt/state"
	"agt/stream"
)

func acpSpec() state.Spec {
	return state.Spec{Kind: "gemini-acp", Format: config.FormatACP, Stdin: config.StdinACP, Argv: []string{"gemini", "--acp"}}
}

// handshake answers what agt asks first: initialize, then the session (session/new, or
// session/load of resume), and returns the session id.
func (a *testAgent) handshake(resume string) string {
	a.t.Helper()
	init := a.heard()
	if gjson.Get(init, "method").Str != "initialize" {
		a.t.Fatalf("first line %q, want initialize", init)
	}
	a.say(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true}}}`, gjson.Get(init, "id").Int()))
	open := a.heard()
	id := "sess-1"
	switch m := gjson.Get(open, "method").Str; {
	case resume == "" && m == "session/new":
		a.say(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"sessionId":%q}}`, gjson.Get(open, "id").Int(), id))
	case resume != "" && m == "session/load" && gjson.Get(open, "params.sessionId").Str == resume:
		id = resume
		a.say(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{}}`, gjson.Get(open, "id").Int()))
	default:
		a.t.Fatalf("after initialize: %q", open)
	}
	select {
	case err := <-a.begun:
		if err != nil {
			a.t.Fatalf("begin: %v", err)
		}
	case <-time.After(bound):
		a.t.Fatal("begin did not return once the session was open")
	}
	return id
}

// update is a session/update notification of the session.
func update(session, body string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":%q,"update":%s}}`, session, body)
}

const acpAsk = `{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"sess-1","toolCall":{"toolCallId":"t1","title":"rm -rf x","kind":"execute","rawInput":{"command":"rm -rf x"}},"options":[{"optionId":"ok-once","name":"Allow","kind":"allow_once"},{"optionId":"ok-always","name":"Always","kind":"allow_always"},{"optionId":"no","name":"No","kind":"reject_once"}]}}`

// TestACPPromptAndMessages: the prompt goes as session/prompt once the session is open; the
// answer to it ends the turn; a message then starts the next turn as a session/prompt.
func TestACPPromptAndMessages(t *testing.T) {
	s := newTestSupervisor(t, acpSpec())
	prompt := "first task"
	a := startAgent(t, s, false, &prompt)
	session := a.handshake("")
	p := a.heard()
	if gjson.Get(p, "method").Str != "session/prompt" || gjson.Get(p, "params.prompt.0.text").Str != "first task" ||
		gjson.Get(p, "params.sessionId").Str != session {
		t.Fatalf("prompt %q", p)
	}
	a.say(update(session, `{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"done"}}`))
	refused(t, s.conv.send(ctl.Request{Op: ctl.OpSend, Text: "early"}), "not waiting for input")
	a.say(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"stopReason":"end_turn"}}`, gjson.Get(p, "id").Int()))
	waitState(t, s, stream.Waiting, stream.ReasonInput)
	if ev := waitEvent(t, s, stream.TypeResult, nil); !ev.Get("ok").Bool() || ev.Get("text").Str != "done" {
		t.Fatalf("result %s", ev.Raw)
	}

	// A late note after the turn is a sign of life, not a new turn.
	a.say(update(session, `{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"by the way"}}`))
	waitEvent(t, s, stream.TypeText, func(ev gjson.Result) bool { return ev.Get("text").Str == "by the way" })
	waitState(t, s, stream.Waiting, stream.ReasonInput)

	accepted(t, s.conv.send(ctl.Request{Op: ctl.OpSend, Text: "second"}))
	if p := a.heard(); gjson.Get(p, "method").Str != "session/prompt" || gjson.Get(p, "params.prompt.0.text").Str != "second" {
		t.Fatalf("second prompt %q", p)
	}
	waitState(t, s, stream.Running, "")
}

// TestACPPermission: a request the agent asks waits for a person; approve picks the option of
// the kind asked for (always: allow_always); deny without a rejecting option would cancel.
func TestACPPermission(t *testing.T) {
	s := newTestSupervisor(t, acpSpec())
	prompt := "go"
	a := startAgent(t, s, false, &prompt)
	a.handshake("")
	a.heard() // the prompt
	a.say(acpAsk)
	waitState(t, s, stream.Waiting, stream.ReasonPermission)
	r := s.conv.answer(ctl.Request{Op: ctl.OpApprove, ID: "0", Always: true})
	accepted(t, r)
	if line := a.heard(); gjson.Get(line, "id").Int() != 0 || gjson.Get(line, "result.outcome.optionId").Str != "ok-always" {
		t.Fatalf("answer %q", line)
	}
	waitEvent(t, s, stream.TypePermission, func(ev gjson.Result) bool { return ev.Get("decision").Str == "allow" })
	waitState(t, s, stream.Running, "")
	refused(t, s.conv.answer(ctl.Request{Op: ctl.OpDeny, ID: "0"}), `no pending permission request "0"`)
}

// TestACPInterrupt: an interrupt answers the pending requests cancelled (the log says denied)
// and sends session/cancel; the agent ends the turn.
func TestACPInterrupt(t *testing.T) {
	s := newTestSupervisor(t, acpSpec())
	prompt := "go"
	a := startAgent(t, s, false, &prompt)
	session := a.handshake("")
	a.heard()
	a.say(acpAsk)
	waitState(t, s, stream.Waiting, stream.ReasonPermission)
	accepted(t, s.conv.interrupt())
	got := []string{a.heard(), a.heard()}
	if gjson.Get(got[0], "result.outcome.outcome").Str != "cancelled" || gjson.Get(got[1], "method").Str != "session/cancel" ||
		gjson.Get(got[1], "params.sessionId").Str != session {
		t.Fatalf("interrupt wrote %q", got)
	}
	waitEvent(t, s, stream.TypePermission, func(ev gjson.Result) bool { return ev.Get("decision").Str == "deny" })
	if ps := s.pendingIDs(); len(ps) != 0 {
		t.Fatalf("still pending: %v", ps)
	}
	waitState(t, s, stream.Running, "") // until the agent says the turn is over
}

// TestACPForgetsInterrupted: an agent that keeps nothing of an interrupted turn (gemini --acp)
// is given its prompt again before the next message, and the log says so, without the prompt.
func TestACPForgetsInterrupted(t *testing.T) {
	for _, forgets := range []bool{true, false} {
		spec := acpSpec()
		spec.ForgetsInterrupted = forgets
		s := newTestSupervisor(t, spec)
		prompt := "first task"
		a := startAgent(t, s, false, &prompt)
		session := a.handshake("")
		p := a.heard()
		accepted(t, s.conv.interrupt())
		if l := a.heard(); gjson.Get(l, "method").Str != "session/cancel" {
			t.Fatalf("interrupt wrote %q", l)
		}
		a.say(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"stopReason":"cancelled"}}`, gjson.Get(p, "id").Int()))
		waitState(t, s, stream.Waiting, stream.ReasonInput)
		accepted(t, s.conv.send(ctl.Request{Op: ctl.OpSend, Text: "next"}))
		next := a.heard()
		want := "next"
		if forgets {
			want = "first task\n\nnext"
			ev := waitEvent(t, s, stream.TypeError, nil)
			if ev.Get("message").Str != "gemini-acp keeps nothing of an interrupted turn: its prompt (10 bytes) goes again, before the next message" {
				t.Errorf("event %s", ev.Raw)
			}
		}
		if got := gjson.Get(next, "params.prompt.0.text").Str; got != want || gjson.Get(next, "params.sessionId").Str != session {
			t.Errorf("forgets %v: the next prompt %q, want %q", forgets, got, want)
		}
	}
}

// TestACPStopAndEnd: a stop cancels the turn and ends the input; stop --after-turn ends the
// input once the turn is over.
func TestACPStopAndEnd(t *testing.T) {
	t.Run("stop", func(t *testing.T) {
		s := newTestSupervisor(t, acpSpec())
		prompt := "go"
		a := startAgent(t, s, false, &prompt)
		a.handshake("")
		a.heard()
		s.mu.Lock()
		s.conv.stoppingLocked(time.Now())
		s.mu.Unlock()
		if line := a.heard(); gjson.Get(line, "method").Str != "session/cancel" {
			t.Fatalf("stop wrote %q", line)
		}
		a.heardEOF()
	})
	t.Run("after the turn", func(t *testing.T) {
		s := newTestSupervisor(t, acpSpec())
		prompt := "go"
		a := startAgent(t, s, false, &prompt)
		a.handshake("")
		p := a.heard()
		accepted(t, s.conv.endAfterTurn())
		a.heardNothing()
		a.say(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"stopReason":"end_turn"}}`, gjson.Get(p, "id").Int()))
		a.heardEOF()
	})
}

// TestACPResume: a resume loads the session by the protocol, with the start argv and no
// prompt: the conversation waits for the next message.
func TestACPResume(t *testing.T) {
	s := newTestSupervisor(t, acpSpec())
	s.mu.Lock()
	s.status.SessionID = "old-1"
	s.mu.Unlock()
	if !s.resumes() {
		t.Fatal("ACP cannot resume")
	}
	prompt := "first task"
	p := s.conv.plan(true, &prompt)
	if p.prompt != nil || strings.Join(p.argv, " ") != "gemini --acp" {
		t.Fatalf("plan %+v", p)
	}
	a := startAgent(t, s, true, &prompt)
	if got := a.handshake("old-1"); got != "old-1" {
		t.Fatal(got)
	}
	a.heardNothing()
	waitState(t, s, stream.Waiting, stream.ReasonInput)
}

// TestACPConnectFails: an agent that answers with what is not ACP, or not at all within
// connect_timeout, ends the run with an error that says so, with its last stderr lines.
func TestACPConnectFails(t *testing.T) {
	t.Run("garbage", func(t *testing.T) {
		s := newTestSupervisor(t, acpSpec())
		a := startAgent(t, s, false, nil)
		a.heard()
		a.sayErr("warming up", "cannot find config")
		waitEvent(t, s, stream.TypeStderr, func(ev gjson.Result) bool { return ev.Get("line").Str == "cannot find config" })
		a.say("Usage: gemini [options]")
		a.hangUp()
		err := <-a.begun
		if err == nil || !strings.Contains(err.Error(), "could not connect to gemini: it wrote something other than JSON-RPC: Usage: gemini [options]") ||
			!strings.HasSuffix(err.Error(), "its last stderr lines: warming up | cannot find config") {
			t.Fatalf("begin: %v", err)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		spec := acpSpec()
		spec.ConnectTimeout = state.Duration(50 * time.Millisecond)
		s := newTestSupervisor(t, spec)
		a := startAgent(t, s, false, nil)
		a.heard()
		a.hangUp()
		if err := <-a.begun; err == nil || !strings.Contains(err.Error(), "no answer to initialize within 50ms, and no sign of work from it (connect_timeout in agt.toml)") {
			t.Fatalf("begin: %v", err)
		}
	})
}

// TestACPSendEscapedTooBig: a message whose line, JSON-escaped, would not fit the agent's input
// (newlines take two bytes there) is refused with an error, and the agent still waits for
// input: it is never taken, dropped on the way, and the turn left running with nothing sent.
func TestACPSendEscapedTooBig(t *testing.T) {
	s := newTestSupervisor(t, acpSpec())
	a := startAgent(t, s, false, nil)
	a.handshake("")
	waitState(t, s, stream.Waiting, stream.ReasonInput)
	r := s.conv.send(ctl.Request{Op: ctl.OpSend, Text: strings.Repeat("\n", maxInput*2/3)})
	if r.Error == "" {
		t.Fatalf("a message of %d newlines was taken", maxInput*2/3)
	}
	waitState(t, s, stream.Waiting, stream.ReasonInput)
	accepted(t, s.conv.send(ctl.Request{Op: ctl.OpSend, Text: "small"}))
	if got := gjson.Get(a.heard(), "params.prompt.0.text").Str; got != "small" {
		t.Errorf("the next prompt %q", got)
	}
}
