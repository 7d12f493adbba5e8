package spawn

import (
	"fmt"
	"time"
)

// acpTalk is the conversation of an agent that speaks the Agent Client Protocol on its stdin
// and stdout (stdin "acp"): the supervisor is its client. stream.ACP knows the protocol (what
// to write, what the agent's lines mean); this conversation turns agt's requests into its
// calls and hands the lines it makes to the writer (acp.go).
type acpTalk struct {
	talk
}

func (c *acpTalk) inputLocked(string) string {
	if c.s.stdin == nil {
		return fmt.Sprintf("%s has no input open", c.s.spec.Name)
	}
	return ""
}

func (c *acpTalk) deliverLocked(text string) (func() error, bool) {
	c.s.acp.Prompt(text)
	c.s.acpFlushLocked()
	return nil, true
}

// replyLocked answers by the option of the kind asked for, by its kind: ids differ from agent
// to agent. ACP takes no message with a denial.
func (c *acpTalk) replyLocked(p *Permission, allow, always bool, _ string) (func() error, error) {
	if _, err := c.s.acp.Answer(p.ID, allow, always); err != nil {
		return nil, err
	}
	c.s.acpFlushLocked()
	return nil, nil
}

// interruptLocked sends session/cancel, and answers every pending request cancelled; the agent
// ends the turn with stopReason cancelled.
func (c *acpTalk) interruptLocked(now time.Time) (func() error, string) {
	c.s.acpCancelLocked(now)
	if c.s.waitingForPermissionLocked() {
		c.s.beginLocked(now) // the turn ends on its own: running until it says so
	}
	return nil, ""
}

func (c *acpTalk) closeLocked() { c.s.acpw.closeAfter() } // the end of its input: the agent exits

// plan: the protocol resumes the session (session/load), which then waits for the next
// message, as a conversation does; the argv is the same.
func (c *acpTalk) plan(resumed bool, prompt *string) startPlan {
	p := startPlan{argv: c.s.spec.Argv, prompt: prompt, resumed: resumed}
	if resumed {
		p.prompt = nil
	}
	return p
}

func (c *acpTalk) open(p startPlan, env []string) (stdio, error) {
	return c.s.pipes(p.prompt, env, true)
}

// startedLocked begins the protocol on the new run's stdin; the prompt goes as session/prompt
// once the session is open.
func (c *acpTalk) startedLocked(fds stdio, p startPlan, resume string) {
	s := c.s
	if s.stdin != nil {
		s.stdin.Close() // the last run's
	}
	s.stdin = fds.in
	s.acpStartLocked(fds.in, resume, p.prompt)
}

// begin waits for the handshake (connect).
func (c *acpTalk) begin(g *generation, fds stdio) error {
	readLines(c.s, g, fds)
	return c.s.connect(g, c.s.spec.Argv[0])
}
