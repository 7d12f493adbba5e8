package spawn

import (
	"fmt"
	"time"

	"agt/config"
	"agt/stream"
)

// A conversation is one way of talking to an agent. There are five, each in a file of its own:
// none (a one-shot run: conv_oneshot.go), Claude's stream-json on stdin with its control
// protocol (conv_claude.go), a process per turn (conv_turns.go), the Agent Client Protocol
// (conv_acp.go), and a terminal (conv_terminal.go). The supervisor has exactly one, chosen by
// the agent's record (conversationFor), and never asks which: what differs from one way to the
// next is behind this interface.
//
// Locking: a method whose name ends in Locked runs with the supervisor's mu held; it changes
// memory only and never waits (a write to the agent goes to a goroutine, or is returned to be
// done once mu is let go). The others run without mu, and take it as they need.
type conversation interface {
	// send delivers a user message (agt send): at once when the agent waits for input, else
	// when its running turn ends, if req.Queue says so. A goroutine of the control channel.
	send(req Request) Reply
}

// conversationFor is the conversation of the agent s supervises.
func conversationFor(s *supervisor) conversation {
	switch {
	case s.spec.TTY:
		return &terminalTalk{s: s}
	case s.spec.Stdin == config.StdinACP:
		c := &acpTalk{}
		c.talk = talk{s: s, w: c}
		return c
	case s.spec.Stdin == config.StdinStreamJSON:
		c := &claudeTalk{}
		c.talk = talk{s: s, w: c}
		return c
	case s.spec.ConverseTurns:
		c := &turnsTalk{}
		c.talk = talk{s: s, w: c}
		return c
	}
	return &oneShot{s: s}
}

// notConversing is the refusal of a request that only a conversation takes.
func notConversing(s *supervisor) Reply {
	return Reply{Error: fmt.Sprintf("%s is not a conversation: it takes no messages (spawn it with --converse)", s.spec.Name)}
}

// A wire is how a conversation that takes messages reaches the agent; talk calls it, with mu
// held.
type wire interface {
	// inputLocked says why the agent cannot be written to now; "" when it can.
	inputLocked() string
	// deliverLocked gives the agent a message that starts its next turn: write, when not nil,
	// is what is left to do once mu is let go. ok is false when the agent cannot take it
	// before its running turn is over (a process per turn): it is then held for that.
	deliverLocked(text string) (write func() error, ok bool)
}

// talk is what the conversations that take messages share (stream-json, ACP, a process per
// turn): the requests of the control channel, carried out the same way over each one's wire.
type talk struct {
	s *supervisor
	w wire
}

// liveLocked says why the agent takes no message now; "" when it does.
func (t *talk) liveLocked() string {
	s := t.s
	switch s.snap.State {
	case stream.Starting, stream.Running, stream.Waiting, stream.Stale:
	default:
		return fmt.Sprintf("%s is %s: no agent runs to take it", s.spec.Name, s.snap.State)
	}
	return t.w.inputLocked()
}

func (t *talk) send(req Request) Reply {
	s := t.s
	now := time.Now()
	s.mu.Lock()
	why := t.liveLocked()
	if why == "" && s.ending {
		why = fmt.Sprintf("%s is ending after its turn (agt stop --after-turn): it takes no more messages", s.spec.Name)
	}
	if why != "" {
		s.mu.Unlock()
		return Reply{Error: why}
	}
	seq := s.seq
	if !s.waitingForInputLocked() {
		if !req.Queue {
			state := s.snap.State
			if s.snap.Reason != "" {
				state += " (" + s.snap.Reason + ")"
			}
			s.mu.Unlock()
			return Reply{Error: fmt.Sprintf("%s is %s, not waiting for input; 'agt send --queue' delivers it when the turn ends", s.spec.Name, state)}
		}
		s.queue = append(s.queue, req.Text)
		s.mu.Unlock()
		return Reply{Queued: true, Seq: seq}
	}
	write, ok := t.w.deliverLocked(req.Text)
	if !ok {
		s.queue = append(s.queue, req.Text) // next in line
		s.mu.Unlock()
		return Reply{Seq: seq}
	}
	s.beginLocked(now)
	s.mu.Unlock()
	if write != nil {
		if err := write(); err != nil {
			return Reply{Error: fmt.Sprintf("write to %s: %v", s.spec.Name, err)}
		}
	}
	return Reply{Seq: seq}
}
