package supervisor

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"agt/spawn/ctl"
	"agt/stream"
)

// turnsTalk is the conversation of an agent that takes one process per turn (spec
// ConverseTurns: Codex, opencode, Gemini headless): each message starts a process that resumes
// the session with the message as its prompt, and the conversation waits for input while no
// process runs (nextTurn). An interrupt is a SIGINT to the turn's process; no permission is
// ever asked. mu guards its fields.
type turnsTalk struct {
	talk
	between     bool          // no turn process runs: a message goes to msgs
	msgs        chan string   // the message that starts the next turn
	next        *string       // the prompt of the turn being started
	interrupted bool          // agt interrupt cut the running turn's process short
	ended       chan struct{} // closed to end the conversation between turns (stop --after-turn)
}

func newTurnsTalk(s *supervisor) *turnsTalk {
	c := &turnsTalk{msgs: make(chan string, 1), ended: make(chan struct{})}
	c.talk = newTalk(s, c)
	return c
}

// inputLocked refuses answers: a process per turn asks no permission.
func (c *turnsTalk) inputLocked(op string) string {
	if op == ctl.OpApprove || op == ctl.OpDeny {
		return fmt.Sprintf("%s asks no permission: a conversation of turn processes cannot", c.s.spec.Name)
	}
	return ""
}

func (c *turnsTalk) deliverLocked(text string) (bool, error) {
	if !c.between {
		return false, nil // the turn's result came, its process is on its way out
	}
	c.between = false // no process runs: the message starts the next one
	c.msgs <- text
	return true, nil
}

func (c *turnsTalk) replyLocked(*ctl.Permission, bool, bool, string) error {
	return errors.New("a conversation of turn processes asks no permission") // inputLocked refused
}

// interruptGrace is how long an interrupted turn process has to end before SIGTERM.
const interruptGrace = 2 * time.Second

// interruptLocked stops the turn's process: SIGINT, as a person's Ctrl-C; SIGTERM if it takes
// no notice (opencode ignores SIGINT without a terminal). Its end is then the turn's, not a
// failure.
func (c *turnsTalk) interruptLocked(time.Time) string {
	s := c.s
	if !s.alive {
		return fmt.Sprintf("%s is starting its turn; try again", s.spec.Name)
	}
	leader := s.leader
	c.interrupted = true
	// Under mu: alive, so not reaped yet, so its group is still its own.
	unix.Kill(-leader.PID, unix.SIGINT)
	s.after(interruptGrace, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if c.interrupted && s.leader == leader && s.alive {
			unix.Kill(-leader.PID, unix.SIGTERM)
		}
	})
	return ""
}

// closeLocked starts no next turn: nextTurn, or the main loop between turns, ends.
func (c *turnsTalk) closeLocked() { close(c.ended) }

// plan: the next turn's process runs with the message as its prompt, in the session when the
// agent saved it, else in a fresh one. A fresh one has nothing of the turns before (its first
// turn was cut short, say, before the model answered, and Codex, opencode and Gemini then kept
// no session): it is given the first prompt again, before the message, so that the
// conversation still begins where it began. Any other start is as usual.
func (c *turnsTalk) plan(resumed bool, prompt *string) startPlan {
	s := c.s
	s.mu.Lock()
	next := c.next
	c.next, c.interrupted = nil, false
	s.mu.Unlock()
	if next == nil {
		return s.plan(resumed, prompt)
	}
	p := startPlan{argv: s.spec.Argv, prompt: next, resumed: resumed, begun: true}
	switch {
	case resumed:
		p.argv = s.spec.Resume
	case prompt != nil:
		joined := *prompt + "\n\n" + *next
		p.prompt = &joined
		p.fresh = "the next turn starts afresh, given the first prompt again before the message"
	}
	return p
}

func (c *turnsTalk) open(p startPlan, env []string) (stdio, error) {
	return c.s.pipes(env, promptIn(c.s.spec, p.prompt), p.prompt)
}

func (c *turnsTalk) startedLocked(stdio, startPlan, string) {}

func (c *turnsTalk) begin(g *generation, fds stdio) error { return readLines(c.s, g, fds) }

// endedLocked: a process that exited 0 with no failure, or that agt interrupt cut short,
// ended its turn, not the conversation. The messages held for the turn's end wait for the
// next process.
func (c *turnsTalk) endedLocked(exit stream.Exit, f stream.Failure) bool {
	return exit.Clean() && f.Class == "" || c.interrupted
}

// errStopped says a stop came while a conversation of turn processes waited for a message.
var errStopped = errors.New("stopped")

// nextTurn is the time between two turn processes: it records the end of the last one, waits
// for the next message (or takes one queued already) and starts its turn, resuming the
// session. It returns errStopped when a stop comes first.
func (c *turnsTalk) nextTurn(sigs signals, exit *stream.Exit) (*generation, error) {
	s := c.s
	now := time.Now()
	s.mu.Lock()
	s.recordExitLocked(exit, now)
	var msg *string
	if !c.q.empty() {
		m := c.q.first()
		c.q.deliveredLocked(s.seq)
		msg = &m
		s.beginLocked(now)
	} else {
		c.between = true
		if !s.waitingForInputLocked() {
			s.setStateLocked(stream.Waiting, stream.ReasonInput, now) // it ended without a result
		}
		s.writeStatusLocked()
	}
	s.mu.Unlock()
	due := time.NewTimer(time.Hour)
	defer due.Stop()
	var goneCheck <-chan time.Time // without dnotify, as in run
	if s.gone == nil {
		t := time.NewTicker(goneCheckEvery)
		defer t.Stop()
		goneCheck = t.C
	}
	for msg == nil {
		s.mu.Lock()
		when := s.machine.Due(s.snap)
		s.mu.Unlock()
		due.Stop()
		if !when.IsZero() {
			due.Reset(max(time.Until(when), time.Second))
		}
		select {
		case <-sigs.term:
			s.wantDown() // a plain SIGTERM is a stop too
			return nil, errStopped
		case <-s.gone:
			return nil, errStopped
		case <-goneCheck:
			if s.lock.Check() != nil {
				return nil, errStopped // the run directory was removed
			}
		case <-sigs.chld:
			s.reap() // an orphan of the last turn
		case m := <-c.msgs:
			msg = &m
		case <-c.ended:
			return nil, errStopped // stop --after-turn
		case <-due.C:
			s.mu.Lock()
			if s.tickLocked(time.Now()) {
				s.writeStatusLocked()
			}
			s.mu.Unlock()
		}
	}
	if s.a.Want() == "down" {
		return nil, errStopped
	}
	s.mu.Lock()
	c.between, c.next = false, msg
	s.mu.Unlock()
	g, err := s.start(ctl.StartResume)
	if err != nil {
		s.emitError(err.Error(), true)
		return nil, err
	}
	return g, nil
}
