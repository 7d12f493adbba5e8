package supervisor

import (
	"testing"

	"agt/config"
	"agt/spawn/ctl"
	"agt/state"
	"agt/stream"
)

// TestOneShotRefuses: an agent that takes nothing once it runs refuses every request to talk
// to it, and asks nobody anything.
func TestOneShotRefuses(t *testing.T) {
	s := newTestSupervisor(t, state.Spec{Kind: "exec", Argv: []string{"make"}})
	a := startAgent(t, s, false, nil)
	if got := a.given(); got != "" {
		t.Errorf("stdin holds %q, want /dev/null", got)
	}
	for _, r := range []ctl.Reply{
		s.conv.send(ctl.Request{Op: ctl.OpSend, Text: "x"}),
		s.conv.answer(ctl.Request{Op: ctl.OpApprove}),
		s.conv.interrupt(),
		s.conv.endAfterTurn(),
	} {
		refused(t, r, "a is not a conversation: it takes no messages (spawn it with --converse)")
	}
	refused(t, s.conv.keys("x"), "a has no terminal: keystrokes need an agent spawned with --tty")
	var reply ctl.Reply
	s.conv.attach(nil, ctl.Request{Op: ctl.OpAttach}, func(r ctl.Reply) { reply = r })
	refused(t, reply, "only agents spawned with --tty can be attached to")
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conv.permissionLocked(&stream.Event{Type: stream.TypePermission, ID: "1"}) {
		t.Error("a request of a one-shot agent waits for a person")
	}
	if s.conv.endedLocked(stream.Exit{}, stream.Failure{}) {
		t.Error("a one-shot run ended a turn")
	}
	if s.machine.InputOpen {
		t.Error("its input is open between turns")
	}
}

// TestOneShotPrompt: a kind that reads its prompt on stdin gets it as a file read to its end;
// a resume gives the resume prompt instead, with the resume argv.
func TestOneShotPrompt(t *testing.T) {
	spec := state.Spec{Kind: "claude", Format: "claude", Stdin: config.StdinPrompt, Argv: []string{"claude", "-p"},
		Resume: []string{"claude", "--resume", "$AGT_SESSION_ID", "-p"}, ResumePrompt: "go on"}
	s := newTestSupervisor(t, spec)
	prompt := "the task"
	if a := startAgent(t, s, false, &prompt); a.given() != "the task" {
		t.Fatalf("stdin holds %q", a.given())
	}
	p := s.conv.plan(true, &prompt)
	if p.prompt == nil || *p.prompt != "go on" || p.argv[1] != "--resume" {
		t.Fatalf("resume plan %+v", p)
	}
	spec.ResumePrompt = ""
	s = newTestSupervisor(t, spec)
	if p := s.conv.plan(true, &prompt); *p.prompt != config.DefaultResumePrompt {
		t.Fatalf("resume prompt %q", *p.prompt)
	}
}
