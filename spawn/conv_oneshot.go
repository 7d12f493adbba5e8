package spawn

import (
	"time"

	"agt/stream"
)

// oneShot is the conversation of an agent that takes nothing once it runs: a plain command, or
// an agent given its one prompt (in its argv, or as a file on stdin). Every request to talk to
// it is refused.
type oneShot struct {
	noTerminal
	s *supervisor
}

func (c *oneShot) send(Request) Reply                  { return notConversing(c.s) }
func (c *oneShot) answer(Request) Reply                { return notConversing(c.s) }
func (c *oneShot) endAfterTurn() Reply                 { return notConversing(c.s) }
func (c *oneShot) turnEndedLocked(time.Time)           {}
func (c *oneShot) interrupt() Reply                    { return notConversing(c.s) }
func (c *oneShot) permissionLocked(*stream.Event) bool { return false }
