package spawn

// turnsTalk is the conversation of an agent that takes one process per turn (spec
// ConverseTurns: Codex, opencode, Gemini headless): each message starts a process that resumes
// the session with the message as its prompt, and the conversation waits for input while no
// process runs. An interrupt is a SIGINT to the turn's process; no permission is ever asked.
type turnsTalk struct {
	talk
}

func (c *turnsTalk) inputLocked() string { return "" }

func (c *turnsTalk) deliverLocked(text string) (func() error, bool) {
	s := c.s
	if !s.between {
		return nil, false // the turn's result came, its process is on its way out
	}
	s.between = false // no process runs: the message starts the next one
	s.turnCh <- text
	return nil, true
}
