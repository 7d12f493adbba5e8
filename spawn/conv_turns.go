package spawn

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// turnsTalk is the conversation of an agent that takes one process per turn (spec
// ConverseTurns: Codex, opencode, Gemini headless): each message starts a process that resumes
// the session with the message as its prompt, and the conversation waits for input while no
// process runs. An interrupt is a SIGINT to the turn's process; no permission is ever asked.
type turnsTalk struct {
	talk
}

// inputLocked refuses answers: a process per turn asks no permission.
func (c *turnsTalk) inputLocked(op string) string {
	if op == OpApprove || op == OpDeny {
		return fmt.Sprintf("%s asks no permission: a conversation of turn processes cannot", c.s.spec.Name)
	}
	return ""
}

func (c *turnsTalk) deliverLocked(text string) (func() error, bool) {
	s := c.s
	if !s.between {
		return nil, false // the turn's result came, its process is on its way out
	}
	s.between = false // no process runs: the message starts the next one
	s.turnCh <- text
	return nil, true
}

func (c *turnsTalk) replyLocked(*Permission, bool, bool, string) (func() error, error) {
	return nil, errors.New("a conversation of turn processes asks no permission") // inputLocked refused
}

// interruptGrace is how long an interrupted turn process has to end before SIGTERM.
const interruptGrace = 2 * time.Second

// interruptLocked stops the turn's process: SIGINT, as a person's Ctrl-C; SIGTERM if it takes
// no notice (opencode ignores SIGINT without a terminal). Its end is then the turn's, not a
// failure.
func (c *turnsTalk) interruptLocked(time.Time) (func() error, string) {
	s := c.s
	if !s.alive {
		return nil, fmt.Sprintf("%s is starting its turn; try again", s.spec.Name)
	}
	leader := s.leader
	s.interrupted = true
	// Under mu: alive, so not reaped yet, so its group is still its own.
	unix.Kill(-leader.PID, unix.SIGINT)
	time.AfterFunc(interruptGrace, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.interrupted && s.leader == leader && s.alive {
			unix.Kill(-leader.PID, unix.SIGTERM)
		}
	})
	return nil, ""
}

func (c *turnsTalk) closeLocked() { close(c.s.endC) } // no next turn: nextTurn, or the main loop between turns, ends

// plan: the next turn's process runs with the message as its prompt, in the session when the
// agent saved it, else in a fresh one. Any other start is as usual.
func (c *turnsTalk) plan(resumed bool, prompt *string) startPlan {
	s := c.s
	s.mu.Lock()
	next := s.next
	s.next, s.interrupted = nil, false
	s.mu.Unlock()
	if next == nil {
		return s.plan(resumed, prompt)
	}
	p := startPlan{argv: s.spec.Argv, prompt: next, resumed: resumed, begun: true}
	if resumed {
		p.argv = s.spec.Resume
	}
	return p
}

func (c *turnsTalk) open(p startPlan, env []string) (stdio, error) {
	return c.s.pipes(p.prompt, env, false)
}

func (c *turnsTalk) startedLocked(stdio, startPlan, string) {}

func (c *turnsTalk) begin(g *generation, fds stdio) error { return readLines(c.s, g, fds) }
