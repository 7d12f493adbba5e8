package supervisor

import (
	"fmt"
	"time"

	"agt/spawn/ctl"
	"agt/stream"
)

// claudeTalk is the conversation of an agent that takes Claude's stream-json on its stdin
// (stdin "stream-json"): one process for the whole conversation, each message a user message
// line on its stdin, each permission request answered there with a control_response, an
// interrupt a control_request (stream.ClaudeInput writes the lines). The pipe stays open
// between turns; closing it ends the agent. The supervisor is its one writer, through an
// inputWriter: lines whole and in order, never waited for under mu, bounded (maxInput).
type claudeTalk struct {
	talk
	lines stream.ClaudeInput
	in    *inputWriter // the running generation's stdin; nil before the first start. mu guards it
}

func newClaudeTalk(s *supervisor) *claudeTalk {
	c := &claudeTalk{}
	c.talk = newTalk(s, c)
	return c
}

func (c *claudeTalk) inputLocked(string) string {
	if c.in == nil {
		return fmt.Sprintf("%s has no input open", c.s.spec.Name)
	}
	return ""
}

func (c *claudeTalk) deliverLocked(text string) (bool, error) {
	_, err := c.in.send(c.lines.Prompt(text))
	return true, err
}

func (c *claudeTalk) replyLocked(p *ctl.Permission, allow, always bool, message string) error {
	if allow {
		_, err := c.in.send(c.lines.Allow(p.ID, p.Input, p.Options, always))
		return err
	}
	if message == "" {
		message = "denied with agt deny"
	}
	_, err := c.in.send(c.lines.Deny(p.ID, message))
	return err
}

func (c *claudeTalk) interruptLocked(time.Time) string {
	if _, err := c.in.send(c.lines.Interrupt()); err != nil {
		return fmt.Sprintf("%s: %v", c.s.spec.Name, err)
	}
	return ""
}

// closeLocked closes stdin once what is queued is written: the end of its input, and the
// agent exits.
func (c *claudeTalk) closeLocked() { c.in.closeAfter() }

// plan: a conversation resumes where it was, waiting for the next message.
func (c *claudeTalk) plan(resumed bool, prompt *string) startPlan {
	if resumed {
		return startPlan{argv: c.s.spec.Resume, resumed: true}
	}
	return c.s.plan(false, prompt)
}

func (c *claudeTalk) open(p startPlan, env []string) (stdio, error) {
	return c.s.pipes(env, stdinPipe, nil)
}

// startedLocked keeps the new run's stdin, and writes the prompt there: the first turn.
func (c *claudeTalk) startedLocked(fds stdio, p startPlan, _ string) {
	c.in.closeAfter() // the last run's
	c.in = newInputWriter(fds.in, nil)
	if p.prompt != nil {
		c.in.send(c.lines.Prompt(*p.prompt))
	}
}

func (c *claudeTalk) begin(g *generation, fds stdio) error { return readLines(c.s, g, fds) }
