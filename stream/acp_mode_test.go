package stream

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// sessionWithModes opens a session whose answer lists modes, current the mode it is in, and
// returns what the client wrote after it.
func sessionWithModes(t *testing.T, a *ACP, current string) []string {
	t.Helper()
	a.Connect("/w", "")
	a.Prompt("hi")
	a.Decode(nil, []byte(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{}}}`))
	a.Lines()
	a.Decode(nil, []byte(`{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s-1","modes":{"currentModeId":"`+current+
		`","availableModes":[{"id":"default"},{"id":"acceptEdits"},{"id":"auto"}]}}}`))
	var out []string
	for _, l := range a.Lines() {
		out = append(out, string(l))
	}
	return out
}

// claude-agent-acp 0.101 opens its sessions in auto, where it never asks: the client sets
// default before the first prompt goes out.
func TestACPSetsAskingMode(t *testing.T) {
	a := NewACP("agt", "test")
	out := sessionWithModes(t, a, "auto")
	if len(out) != 1 || gjson.Get(out[0], "method").Str != "session/set_mode" || gjson.Get(out[0], "params.modeId").Str != "default" ||
		gjson.Get(out[0], "params.sessionId").Str != "s-1" {
		t.Fatalf("after a session in auto the client wrote %q, want session/set_mode default alone", out)
	}
	if a.Ready() {
		t.Fatal("the session is ready before its mode is set: the prompt would run in auto")
	}
	a.Decode(nil, []byte(`{"jsonrpc":"2.0","id":3,"result":{}}`))
	lines := a.Lines()
	if !a.Ready() || len(lines) != 1 || gjson.GetBytes(lines[0], "method").Str != "session/prompt" {
		t.Fatalf("after set_mode: ready %v, wrote %q", a.Ready(), lines)
	}
}

func TestACPKeepsAskingMode(t *testing.T) {
	a := NewACP("agt", "test")
	out := sessionWithModes(t, a, "default")
	if len(out) != 1 || gjson.Get(out[0], "method").Str != "session/prompt" || !a.Ready() {
		t.Fatalf("a session in default: wrote %q, want the prompt alone", out)
	}
}

// A mode that cannot be set is a warning; a tool that then runs without asking ends the run.
func TestACPActedWithoutAsking(t *testing.T) {
	a := NewACP("agt", "test")
	sessionWithModes(t, a, "auto")
	ev := a.Decode(nil, []byte(`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Invalid Mode: default"}}`))
	if len(ev) != 1 || ev[0].Type != TypeError || ev[0].Fatal || !strings.Contains(ev[0].Message, "stays in mode auto") {
		t.Fatalf("set_mode refused: %s", serialize(ev))
	}
	a.Lines() // the prompt
	ev = a.Decode(nil, []byte(sessionUpdate(`{"sessionUpdate":"tool_call","toolCallId":"t1","title":"touch x","kind":"execute","status":"pending","rawInput":{"command":"touch x"}}`)))
	ev = a.Decode(ev, []byte(sessionUpdate(`{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed","rawOutput":""}`)))
	var fatal *Event
	for i := range ev {
		if ev[i].Type == TypeError && ev[i].Fatal {
			fatal = &ev[i]
		}
	}
	if fatal == nil || fatal.Class != ClassConfig || !strings.Contains(fatal.Message, "ran Bash without asking") {
		t.Fatalf("events %s: want a fatal config error", serialize(ev))
	}
	lines := a.Lines()
	if len(lines) != 1 || gjson.GetBytes(lines[0], "method").Str != "session/cancel" {
		t.Errorf("wrote %q, want session/cancel", lines)
	}
	if _, failed := a.Handshake(); failed == "" {
		t.Error("the run goes on: Handshake reports no failure")
	}
	if _, f := a.End(nil, Exit{}); f.Class != ClassConfig {
		t.Errorf("End after a clean exit: %+v, want the config failure", f)
	}
}

// Reading tools, and any tool in a mode that asks, are no failure; the agent's own switch to a
// mode that acts alone is followed.
func TestACPModeFollowed(t *testing.T) {
	a := NewACP("agt", "test")
	sessionWithModes(t, a, "default")
	ev := a.Decode(nil, []byte(sessionUpdate(`{"sessionUpdate":"tool_call","toolCallId":"t1","title":"ls","kind":"execute","status":"in_progress"}`)))
	ev = a.Decode(ev, []byte(sessionUpdate(`{"sessionUpdate":"current_mode_update","currentModeId":"acceptEdits"}`)))
	ev = a.Decode(ev, []byte(sessionUpdate(`{"sessionUpdate":"tool_call","toolCallId":"t2","title":"Read a","kind":"read","status":"in_progress"}`)))
	for _, e := range ev {
		if e.Type == TypeError {
			t.Fatalf("an error for tools the mode asks about or never asks about: %s", serialize(ev))
		}
	}
	ev = a.Decode(nil, []byte(sessionUpdate(`{"sessionUpdate":"tool_call","toolCallId":"t3","title":"Edit a","kind":"edit","status":"in_progress","locations":[{"path":"/w/a"}]}`)))
	if len(ev) != 2 || ev[1].Type != TypeError || !ev[1].Fatal || !strings.Contains(ev[1].Message, "mode acceptEdits") {
		t.Fatalf("an edit in acceptEdits without asking: %s", serialize(ev))
	}
}

// An adapter's notice is a warning marked as one, never the agent's text; the client asks for
// notices in initialize.
func TestACPNotice(t *testing.T) {
	a := NewACP("agt", "test")
	a.Connect("/w", "")
	if init := a.Lines()[0]; !gjson.GetBytes(init, "params.clientCapabilities.session.notices").IsObject() {
		t.Fatalf("initialize does not ask for notices: %s", init)
	}
	a = NewACP("agt", "test")
	ev, _ := acpLines(t, a, sessionUpdate(`{"sessionUpdate":"notice","severity":"warning","title":"Auto mode unavailable","description":"Using Accept edits instead."}`))
	if len(ev) != 1 || ev[0].Type != TypeError || ev[0].Fatal || ev[0].Message != "notice: Auto mode unavailable: Using Accept edits instead." {
		t.Fatalf("events %s", serialize(ev))
	}
}
