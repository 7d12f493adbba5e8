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
