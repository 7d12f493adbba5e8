package supervisor

import (
	"fmt"
	"os"
	"sync"
	"time"

	"agt/spawn/ctl"
	"agt/stream"
)

// claudeTalk is the conversation of an agent that takes Claude's stream-json on its stdin
// (stdin "stream-json"): one process for the whole conversation, each message a user message
// line on its stdin, each permission request answered there with a control_response, an
// interrupt a control_request (stream.ClaudeInput writes the lines). The pipe stays open
// between turns; closing it ends the agent. The supervisor is its one writer.
type claudeTalk struct {
	talk
	lines stream.ClaudeInput
	in    *os.File   // the running generation's stdin; nil before the first start. mu guards it
	inMu  sync.Mutex // serializes writes to in (held for the write, never with mu)
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

func (c *claudeTalk) deliverLocked(text string) (func() error, bool) {
	return c.writer(c.lines.Prompt(text)), true
}

func (c *claudeTalk) replyLocked(p *ctl.Permission, allow, always bool, message string) (func() error, error) {
	if allow {
		return c.writer(c.lines.Allow(p.ID, p.Input, p.Options, always)), nil
	}
	if message == "" {
		message = "denied with agt deny"
	}
	return c.writer(c.lines.Deny(p.ID, message)), nil
}

func (c *claudeTalk) interruptLocked(time.Time) (func() error, string) {
	return c.writer(c.lines.Interrupt()), ""
}

// closeLocked closes stdin after any write under way: the end of its input, and the agent
// exits.
func (c *claudeTalk) closeLocked() {
	if w := c.in; w != nil {
		go func() {
			c.inMu.Lock()
			defer c.inMu.Unlock()
			w.Close()
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
	return c.s.pipes(env, stdinPipe, nil)
}

// startedLocked keeps the new run's stdin, and writes the prompt there: the first turn.
func (c *claudeTalk) startedLocked(fds stdio, p startPlan, _ string) {
	if c.in != nil {
		c.in.Close() // the last run's
	}
	c.in = fds.in
	if p.prompt != nil {
		go c.writer(c.lines.Prompt(*p.prompt))()
	}
}

func (c *claudeTalk) begin(g *generation, fds stdio) error { return readLines(c.s, g, fds) }

// writer is the write of line to the running generation's stdin, to do once mu is let go.
func (c *claudeTalk) writer(line []byte) func() error {
	w := c.in
	return func() error { return c.write(w, line) }
}

// write writes one line to the agent's stdin; writers take turns, so lines never interleave.
// A write that cannot start within ctl.Timeout fails and leaves nothing behind; one that started
// finishes without a deadline (the agent reads, if slowly): half a line would glue itself to
// every message after it.
func (c *claudeTalk) write(w *os.File, line []byte) error {
	c.inMu.Lock()
	defer c.inMu.Unlock()
	w.SetWriteDeadline(time.Now().Add(ctl.Timeout))
	n, err := w.Write(line)
	if err != nil && n > 0 && n < len(line) {
		w.SetWriteDeadline(time.Time{})
		_, err = w.Write(line[n:])
	}
	return err
}
