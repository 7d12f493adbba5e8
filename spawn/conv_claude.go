package spawn

import (
	"fmt"
	"time"
)

// claudeTalk is the conversation of an agent that takes Claude's stream-json on its stdin
// (stdin "stream-json"): one process for the whole conversation, each message a user message
// line on its stdin, each permission request answered there with a control_response, an
// interrupt a control_request (stream.ClaudeInput writes the lines). The pipe stays open
// between turns; closing it ends the agent.
type claudeTalk struct {
	talk
}

func (c *claudeTalk) inputLocked(string) string {
	if c.s.stdin == nil {
		return fmt.Sprintf("%s has no input open", c.s.spec.Name)
	}
	return ""
}

func (c *claudeTalk) deliverLocked(text string) (func() error, bool) {
	w, line := c.s.stdin, c.s.claude.Prompt(text)
	return func() error { return c.s.writeIn(w, line) }, true
}

func (c *claudeTalk) replyLocked(p *Permission, allow, always bool, message string) (func() error, error) {
	line := c.s.claude.Allow(p.ID, p.Input, p.Options, always)
	if !allow {
		if message == "" {
			message = "denied with agt deny"
		}
		line = c.s.claude.Deny(p.ID, message)
	}
	w := c.s.stdin
	return func() error { return c.s.writeIn(w, line) }, nil
}

func (c *claudeTalk) interruptLocked(time.Time) (func() error, string) {
	w, line := c.s.stdin, c.s.claude.Interrupt()
	return func() error { return c.s.writeIn(w, line) }, ""
}

func (c *claudeTalk) closeLocked() {
	if w := c.s.stdin; w != nil {
		go func() {
			c.s.inMu.Lock() // after any write under way
			defer c.s.inMu.Unlock()
			w.Close() // the end of its input: the agent exits
		}()
	}
}

// plan: a conversation resumes where it was, waiting for the next message.
func (c *claudeTalk) plan(resumed bool, prompt *string) startPlan {
	if resumed {
		return startPlan{argv: c.s.spec.Resume, resumed: true}
	}
	return c.s.plan(false, prompt)
}

func (c *claudeTalk) open(p startPlan, env []string) (stdio, error) {
	return c.s.pipes(p.prompt, env, true)
}

// startedLocked keeps the new run's stdin, and writes the prompt there: the first turn.
func (c *claudeTalk) startedLocked(fds stdio, p startPlan, _ string) {
	s := c.s
	if s.stdin != nil {
		s.stdin.Close() // the last run's
	}
	s.stdin = fds.in
	if p.prompt != nil {
		line := s.claude.Prompt(*p.prompt)
		go s.writeIn(fds.in, line)
	}
}

func (c *claudeTalk) begin(g *generation, fds stdio) error { return readLines(c.s, g, fds) }
