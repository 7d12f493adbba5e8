package supervisor

import (
	"errors"
	"fmt"
	"os"
	"time"

	"agt/config"
	"agt/spawn/ctl"
	"agt/stream"
)

// A conversation is one way of talking to an agent. There are five, each in a file of its own:
// none (a one-shot run: conv_oneshot.go), Claude's stream-json on stdin with its control
// protocol (conv_claude.go), a process per turn (conv_turns.go), a protocol of which agt is the
// client (conv_acp.go: the Agent Client Protocol, and Codex's app-server, fitted in
// conv_codex.go), and a terminal (conv_terminal.go). The supervisor has exactly one, chosen by
// the agent's record (conversationFor), and never asks which: what differs from one way to the
// next is behind this interface.
//
// Locking: a method whose name ends in Locked runs with the supervisor's mu held; it changes
// memory only and never waits (a write to the agent goes to a goroutine, or is returned to be
// done once mu is let go). The others run without mu, and take it as they need.
type conversation interface {
	// plan says what a start runs: the argv template, and the prompt the agent is given, from
	// the record's prompt (nil for none) and whether the start resumes the agent's session.
	// The main goroutine.
	plan(resumed bool, prompt *string) startPlan
	// open makes the agent's standard files for a start, env its environment. The main
	// goroutine.
	open(p startPlan, env []string) (stdio, error)
	// startedLocked takes what open made over once the agent runs: the input of a
	// conversation on it, and the first lines to write there. resume is the session the start
	// resumes, "" for none. The main goroutine.
	startedLocked(fds stdio, p startPlan, resume string)
	// begin starts reading the output of a start (g.readers closes when it is read to its
	// end) and returns once the agent can take messages: at once, but for a protocol with a
	// handshake. An error means the run is over, its tree gone. The main goroutine.
	begin(g *generation, fds stdio) error

	// send delivers a user message (agt send): at once when the agent waits for input, else
	// when its running turn ends, if req.Queue says so. A goroutine of the control channel.
	send(req ctl.Request) ctl.Reply
	// answer allows or denies a permission request the agent waits on (agt approve, agt
	// deny). A goroutine of the control channel.
	answer(req ctl.Request) ctl.Reply
	// interrupt cancels the running turn (agt interrupt): the agent goes back to waiting for
	// input. A goroutine of the control channel.
	interrupt() ctl.Reply
	// endAfterTurn ends the conversation once its running turn is over (agt stop
	// --after-turn): want is down from now on, and the agent's input ends when it waits for
	// input. The caller bounds the wait. A goroutine of the control channel.
	endAfterTurn() ctl.Reply
	// keys types keystrokes into the agent's terminal (agt send --keys). A goroutine of the
	// control channel.
	keys(text string) ctl.Reply
	// attach serves an attached client of the agent's terminal (agt attach) until it leaves
	// or the agent ends for good: answer takes the reply to the request, after which the
	// connection carries the terminal. A goroutine of the control channel.
	attach(c *os.File, req ctl.Request, answer func(ctl.Reply))

	// permissionLocked sees a permission request the agent waits on (a permission event
	// without a decision), before it is written: it answers it by the agt.toml policy when a
	// rule covers it, setting the event's decision and rule, and reports whether the request
	// waits for a person instead. The reader of the agent's output.
	permissionLocked(ev *stream.Event) (ask bool)
	// turnEndedLocked follows the end of a turn (a result): the conversation ends if it was
	// asked to after the turn, or the next message held for the turn's end goes. The reader
	// of the agent's output.
	turnEndedLocked(now time.Time)
	// lineLocked follows each line of the agent's output, once its events are written.
	// The reader of the agent's output.
	lineLocked(line []byte, stderr bool)
	// nextLocked is the state an event of the agent (nil: the passing of time) moves it to:
	// next, as the state machine has it, unless the conversation knows better. The reader of
	// the agent's output, or the main loop.
	nextLocked(ev *stream.Event, next stream.Snapshot, now time.Time) stream.Snapshot

	// stoppingLocked says what the conversation has to say before a stop's signal. The main
	// loop.
	stoppingLocked(now time.Time)
	// endedLocked sees the end of a run (how it exited, what its decoder made of it), before
	// the supervisor decides what comes next: it reports whether the run ended a turn, not
	// the conversation (a process per turn), and then nextTurn waits for the message of the
	// next one. The main loop.
	endedLocked(exit stream.Exit, f stream.Failure) (turnEnded bool)
	// nextTurn records the end of the last turn's process, waits for the next message and
	// starts its process; errStopped when a stop comes first. Only a conversation whose
	// endedLocked said so is asked. The main loop.
	nextTurn(sigs signals, exit *stream.Exit) (*generation, error)
	// end lets go of what the conversation holds, once the agent is over for good and its
	// final status written (a terminal's attached clients get the last output).
	end()
}

// conversationFor is the conversation of the agent s supervises.
func conversationFor(s *supervisor) conversation {
	switch {
	case s.spec.TTY:
		return newTerminalTalk(s)
	case s.spec.Stdin == config.StdinACP && protocolOf(s) != nil:
		return newACPTalk(s, protocolOf(s))
	case config.StdinConverses(s.spec.Stdin): // stream-json (or acp without its client: a hand-edited record)
		return newClaudeTalk(s)
	case s.spec.ConverseTurns:
		return newTurnsTalk(s)
	}
	return &oneShot{base{s}}
}

// notConversing is the refusal of a request that only a conversation takes.
func notConversing(s *supervisor) ctl.Reply {
	return ctl.Reply{Error: fmt.Sprintf("%s is not a conversation: it takes no messages (spawn it with --converse)", s.spec.Name)}
}

// base is what a conversation does unless it says otherwise: it has no terminal (keystrokes
// and attaching are refused), adds nothing to the event path, and has nothing to say before a
// stop.
type base struct{ s *supervisor } // the supervisor of the agent, which every conversation reaches

func (base) lineLocked([]byte, bool) {}

func (base) nextLocked(_ *stream.Event, next stream.Snapshot, _ time.Time) stream.Snapshot {
	return next
}

func (base) stoppingLocked(time.Time) {}

func (base) end() {}

func (base) endedLocked(stream.Exit, stream.Failure) bool { return false }

func (base) nextTurn(signals, *stream.Exit) (*generation, error) {
	return nil, errors.New("this conversation has no turn of its own to start")
}

func (n base) keys(string) ctl.Reply {
	return ctl.Reply{Error: fmt.Sprintf("%s has no terminal: keystrokes need an agent spawned with --tty (agt send without --keys gives a conversation its turn)", n.s.spec.Name)}
}

func (n base) attach(_ *os.File, _ ctl.Request, answer func(ctl.Reply)) {
	answer(ctl.Reply{Error: fmt.Sprintf("%s has no terminal: only agents spawned with --tty can be attached to", n.s.spec.Name)})
}

// readLines is how a start's output is read but on a terminal: stdout and stderr line by line.
func readLines(s *supervisor, g *generation, fds stdio) error {
	g.readers = s.read(fds.out, fds.err)
	return nil
}

// A wire is how a conversation that takes messages reaches the agent; talk calls it, with mu
// held. What it writes to the agent is queued, never waited for: a write to an agent that does
// not read is refused once maxInput waits (R36), and nothing is sent then.
type wire interface {
	// inputLocked says why the agent cannot take the request op now; "" when it can.
	inputLocked(op string) string
	// deliverLocked gives the agent a message that starts its next turn. ok is false when
	// the agent cannot take it before its running turn is over (a process per turn): it is
	// then held for that. An error says why it was not sent.
	deliverLocked(text string) (ok bool, err error)
	// replyLocked answers the permission request p: allow it (for the rest of the session,
	// when always), or deny it, telling the agent message.
	replyLocked(p *ctl.Permission, allow, always bool, message string) error
	// interruptLocked cancels the running turn, or says why it cannot.
	interruptLocked(now time.Time) (why string)
	// closeLocked ends the agent's input, once what is being written is: it ends.
	closeLocked()
}

// talk is what the conversations that take messages share (stream-json, ACP, a process per
// turn): the requests of the control channel, carried out the same way over each one's wire.
type talk struct {
	base
	w               wire
	q               messageQueue // messages sent with --queue, for the turn's end (conv_queue.go)
	ending, endSent bool         // end after the running turn (stop --after-turn); it is under way
}

// newTalk is the part of conversation c that takes messages over w: its input is open
// between turns, where it waits for the next message.
func newTalk(s *supervisor, w wire) talk {
	s.machine.InputOpen = true
	return talk{base: base{s}, w: w}
}

// liveLocked says why the agent cannot take the request op now; "" when it can.
func (t *talk) liveLocked(op string) string {
	s := t.s
	switch s.snap.State {
	case stream.Starting, stream.Running, stream.Waiting, stream.Stale:
	default:
		return fmt.Sprintf("%s is %s: no agent runs to take it", s.spec.Name, s.snap.State)
	}
	return t.w.inputLocked(op)
}

func (t *talk) send(req ctl.Request) ctl.Reply {
	s := t.s
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	why := t.liveLocked(ctl.OpSend)
	if why == "" && t.ending {
		why = fmt.Sprintf("%s is ending after its turn (agt stop --after-turn): it takes no more messages", s.spec.Name)
	}
	if why == "" && req.Late() {
		why = "agt send came too late to be answered in time: not delivered"
		s.errorLocked(why)
	}
	if why != "" {
		return ctl.Reply{Error: why}
	}
	seq := s.seq
	if !s.waitingForInputLocked() {
		if req.Steer {
			return t.steer(req)
		}
		if !req.Queue {
			state := s.snap.State
			if s.snap.Reason != "" {
				state += " (" + s.snap.Reason + ")"
			}
			return ctl.Reply{Error: fmt.Sprintf("%s is %s, not waiting for input; 'agt send --queue' delivers it when the turn ends", s.spec.Name, state)}
		}
		return t.q.addLocked(s.spec.Name, req, seq)
	}
	ok, err := t.w.deliverLocked(req.Text)
	if err != nil {
		return ctl.Reply{Error: fmt.Sprintf("%s: %v", s.spec.Name, err)}
	}
	if !ok {
		// Next in line, for the turn process on its way out: its result came before seq.
		r := t.q.addLocked(s.spec.Name, ctl.Request{Text: req.Text}, seq)
		r.Queued = false
		return r
	}
	s.beginLocked(now)
	return ctl.Reply{Seq: seq}
}

// steer gives the running turn a message (agt send --steer), where the wire can; mu is held.
func (t *talk) steer(req ctl.Request) ctl.Reply {
	s := t.s
	seq := s.seq
	if st, ok := t.w.(steerer); ok {
		took, err := st.steerLocked(req.Text)
		if err != nil {
			return ctl.Reply{Error: fmt.Sprintf("%s: %v", s.spec.Name, err)}
		}
		if took {
			return ctl.Reply{Seq: seq}
		}
	}
	return ctl.Reply{Error: fmt.Sprintf("%s cannot take a message into its running turn (%s): only Codex conversations can; 'agt send --queue' delivers it when the turn ends", s.spec.Name, s.snap.State)}
}

func (t *talk) answer(req ctl.Request) ctl.Reply {
	s := t.s
	now := time.Now()
	s.mu.Lock()
	why := t.liveLocked(req.Op)
	var p *ctl.Permission
	if why == "" {
		p, why = s.pendingLocked(req.ID)
	}
	if why != "" {
		s.mu.Unlock()
		return ctl.Reply{Error: why}
	}
	allow := req.Op == ctl.OpApprove
	if err := t.w.replyLocked(p, allow, req.Always, req.Message); err != nil {
		s.mu.Unlock()
		return ctl.Reply{Error: fmt.Sprintf("%s: %v", s.spec.Name, err)}
	}
	delete(s.perms, p.ID)
	ev := stream.Event{Type: stream.TypePermission, ID: p.ID, Tool: p.Tool, Input: p.Input, Options: p.Options, Decision: "deny"}
	if allow {
		ev.Decision = "allow"
	}
	s.appendLocked(&ev, now)
	s.flushLocked()
	if len(s.perms) == 0 && s.waitingForPermissionLocked() {
		s.beginLocked(now) // the turn goes on
	}
	s.mu.Unlock()
	s.removePermission(p.ID)
	return ctl.Reply{ID: p.ID, Tool: p.Tool}
}

func (t *talk) permissionLocked(ev *stream.Event) bool {
	s := t.s
	if t.w.inputLocked(ctl.OpApprove) != "" {
		return false // nobody can answer
	}
	if why := s.inboxFullLocked(ev); why != "" {
		// Past the inbox's bounds (R36): denied at once, and the log says why.
		p := &ctl.Permission{ID: ev.ID, Tool: ev.Tool, Input: ev.Input, Options: ev.Options}
		t.w.replyLocked(p, false, false, why)
		ev.Decision = "deny"
		s.errorLocked(fmt.Sprintf("permission request %s denied: %s", ev.ID, why))
		return false
	}
	if s.policy.Empty() {
		return true
	}
	decision, rule := s.policy.Decide(ev.Tool, ev.Input)
	if decision == "" {
		return true
	}
	p := &ctl.Permission{ID: ev.ID, Tool: ev.Tool, Input: ev.Input, Options: ev.Options}
	if err := t.w.replyLocked(p, decision == "allow", false, "denied by the rule "+rule+" in agt.toml"); err != nil {
		return true // no such option (ACP), or its input is full: a person decides
	}
	ev.Decision, ev.Rule = decision, rule
	return false
}

func (t *talk) interrupt() ctl.Reply {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	why := t.liveLocked(ctl.OpInterrupt)
	if why == "" && !s.snap.Open && !s.waitingForPermissionLocked() {
		why = fmt.Sprintf("%s is %s: no turn to interrupt", s.spec.Name, s.snap.State)
	}
	if why == "" {
		why = t.w.interruptLocked(time.Now())
	}
	if why != "" {
		return ctl.Reply{Error: why}
	}
	return ctl.Reply{}
}

func (t *talk) endAfterTurn() ctl.Reply {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if why := t.liveLocked(ctl.OpAfterTurn); why != "" {
		return ctl.Reply{Error: why}
	}
	if err := s.a.SetWant("down"); err != nil {
		return ctl.Reply{Error: err.Error()}
	}
	t.ending = true
	t.endIfIdleLocked()
	return ctl.Reply{}
}

// endIfIdleLocked ends a conversation asked to end after its turn, once it waits for input.
func (t *talk) endIfIdleLocked() {
	s := t.s
	if !t.ending || !s.waitingForInputLocked() || t.endSent {
		return
	}
	t.endSent = true
	t.w.closeLocked()
}

func (t *talk) turnEndedLocked(now time.Time) {
	t.endIfIdleLocked()
	s := t.s
	if t.q.empty() || !s.waitingForInputLocked() || t.ending || t.w.inputLocked(ctl.OpSend) != "" {
		return
	}
	ok, err := t.w.deliverLocked(t.q.first())
	switch {
	case err != nil:
		why := fmt.Sprintf("a message queued for %s was not delivered: %v", s.spec.Name, err)
		t.q.dropLocked(why, 1)
		s.errorLocked(why)
	case ok:
		t.q.deliveredLocked(s.seq)
		s.beginLocked(now)
	}
	// Not ok: a process per turn; the next one takes it (nextTurn).
}

// endedLocked: the agent that asked is gone; so are the messages held for its turn's end.
func (t *talk) endedLocked(stream.Exit, stream.Failure) bool {
	t.q.dropLocked(fmt.Sprintf("%s ended before its turn came: the message was not delivered", t.s.spec.Name), -1)
	return false
}

// end: a message still queued is never delivered now.
func (t *talk) end() {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	t.q.dropLocked(fmt.Sprintf("%s ended before its turn came: the message was not delivered", t.s.spec.Name), -1)
}
