package supervisor

import (
	"agt/stream"
)

// Codex's conversations go through its app-server (codex app-server: JSON-RPC over stdin and
// stdout), the interface through which it asks before it acts, takes a message into a running
// turn and resumes threads; codex exec, which never asks, stays for one-shot runs. The protocol
// is a pure object (stream.CodexServer) of the same shape as ACP's, so the conversation is
// acpTalk's: the handshake at each start, prompts as turns, approvals through the permission
// inbox and the agt.toml policy, an interrupt as turn/interrupt, a crash restart or agt restart
// resuming the thread (thread/resume). Two things are Codex's own: it names the model in the
// protocol (thread/start), and it takes a message while a turn runs (agt send --steer, as
// turn/steer).

// codexServer is stream.CodexServer as acpTalk takes a protocol: the one difference, that
// Connect names the model too, is made up here from the agent's record.
type codexServer struct {
	*stream.CodexServer
	model string
}

func (c codexServer) Connect(cwd, resume string) { c.CodexServer.Connect(cwd, c.model, resume) }

// codexInSandbox is the sandbox a Codex thread asks for inside agt's own (spawn --sandbox):
// none of Codex's, which cannot be set up within it. agt's sandbox is the boundary, and Codex
// still asks before each command it does not know to be safe.
const codexInSandbox = "danger-full-access"

// protocolOf is the protocol the agent of s speaks on its stdin and stdout, as its
// conversation takes it: its decoder (ACP), or Codex's app-server client made to fit; nil
// when its decoder speaks none.
func protocolOf(s *supervisor) protocol {
	switch d := s.dec.(type) {
	case *stream.CodexServer:
		if s.spec.Sandbox != nil {
			d.Sandbox = codexInSandbox
		}
		return codexServer{d, s.spec.Model}
	case protocol:
		return d
	}
	return nil
}

// steerer is a wire that can add a message to the running turn (agt send --steer).
type steerer interface {
	// steerLocked gives the running turn the message text, and reports whether it could; an
	// error says why it was not sent.
	steerLocked(text string) (bool, error)
}

// steerLocked: a protocol that steers (Codex's turn/steer) takes the message into the turn
// under way; ACP has no such request.
func (c *acpTalk) steerLocked(text string) (bool, error) {
	st, ok := c.p.(interface{ Steer(string) bool })
	if !ok || c.in == nil {
		return false, nil
	}
	if err := c.w.room(lineRoom(text)); err != nil {
		return false, err
	}
	if !st.Steer(text) {
		return false, nil
	}
	c.flushLocked()
	return true, nil
}
