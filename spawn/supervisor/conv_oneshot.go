package supervisor

import (
	"time"

	"agt/config"
	"agt/spawn/ctl"
	"agt/state"
	"agt/stream"
)

// oneShot is the conversation of an agent that takes nothing once it runs: a plain command, or
// an agent given its one prompt (in its argv, or as a file on stdin). Every request to talk to
// it is refused.
type oneShot struct{ base }

func (c *oneShot) send(ctl.Request) ctl.Reply          { return notConversing(c.s) }
func (c *oneShot) answer(ctl.Request) ctl.Reply        { return notConversing(c.s) }
func (c *oneShot) endAfterTurn() ctl.Reply             { return notConversing(c.s) }
func (c *oneShot) turnEndedLocked(time.Time)           {}
func (c *oneShot) interrupt() ctl.Reply                { return notConversing(c.s) }
func (c *oneShot) permissionLocked(*stream.Event) bool { return false }

func (c *oneShot) plan(resumed bool, prompt *string) startPlan { return c.s.plan(resumed, prompt) }

func (c *oneShot) open(p startPlan, env []string) (stdio, error) {
	return c.s.pipes(env, promptIn(c.s.spec, p.prompt), p.prompt)
}

func (c *oneShot) startedLocked(stdio, startPlan, string) {}

func (c *oneShot) begin(g *generation, fds stdio) error { return readLines(c.s, g, fds) }

// promptIn is the stdin of an agent that takes no messages: its prompt, when it reads it
// there (stdin "prompt"), else nothing.
func promptIn(spec *state.Spec, prompt *string) int {
	if spec.Stdin == config.StdinPrompt && prompt != nil {
		return stdinPrompt
	}
	return stdinNull
}
