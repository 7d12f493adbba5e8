package spawn

import (
	"errors"
	"fmt"
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
