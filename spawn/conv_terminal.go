package spawn

import (
	"fmt"
	"os"
	"time"

	"agt/config"
	"agt/stream"
)

// terminalTalk is the conversation of an agent on a terminal (spawn --tty): what agt send
// gives it is typed, as a person would, and every other answer is the person's to give on the
// terminal itself (agt attach).
type terminalTalk struct {
	base
	s *supervisor
}

func (c *terminalTalk) send(req Request) Reply {
	s := c.s
	s.mu.Lock()
	seq, st := s.seq, s.snap.State
	s.mu.Unlock()
	shown, err := s.typeText(req.Text)
	switch {
	case err != nil:
		return Reply{Error: fmt.Sprintf("%s is %s: %v", s.spec.Name, st, err)}
	case !shown:
		return Reply{Error: fmt.Sprintf("typed into %s, but it showed nothing within %s; look with 'agt attach %s'", s.spec.Name, typeConfirm, s.spec.Name)}
	}
	return Reply{Seq: seq}
}

func (c *terminalTalk) answer(Request) Reply                { return c.elsewhere() }
func (c *terminalTalk) endAfterTurn() Reply                 { return c.elsewhere() }
func (c *terminalTalk) turnEndedLocked(time.Time)           {}
func (c *terminalTalk) interrupt() Reply                    { return c.elsewhere() }
func (c *terminalTalk) permissionLocked(*stream.Event) bool { return false }

// elsewhere refuses what only the terminal itself can be told.
func (c *terminalTalk) elsewhere() Reply {
	n := c.s.spec.Name
	return Reply{Error: fmt.Sprintf("%s runs on a terminal: answer it there ('agt attach %s'), or type with 'agt send --keys %s'", n, n, n)}
}

func (c *terminalTalk) keys(text string) Reply {
	s := c.s
	s.mu.Lock()
	seq, st := s.seq, s.snap.State
	s.mu.Unlock()
	if err := s.term.input([]byte(text)); err != nil {
		return Reply{Error: fmt.Sprintf("%s is %s: %v", s.spec.Name, st, err)}
	}
	return Reply{Seq: seq}
}

func (c *terminalTalk) attach(conn *os.File, req Request, answer func(Reply)) {
	c.s.serveAttach(conn, req, answer)
}

func (c *terminalTalk) plan(resumed bool, prompt *string) startPlan { return c.s.plan(resumed, prompt) }

// open makes the terminal of a new run: the agent's stdin, stdout and stderr, which becomes its
// controlling one. A prompt the argv does not take is typed once the agent waits.
func (c *terminalTalk) open(p startPlan, env []string) (stdio, error) {
	s := c.s
	s.mu.Lock()
	lastExit := s.exitTextLocked()
	if p.prompt != nil && !p.resumed && !config.NeedsPrompt(p.argv) {
		s.typePrompt = p.prompt
	}
	s.mu.Unlock()
	ptmx, tty, err := s.term.open(lastExit, s.now())
	if err != nil {
		return stdio{}, err
	}
	return stdio{child: []*os.File{tty, tty, tty}, out: ptmx, env: termEnv(env, s.spec.Term), ctty: true}, nil
}

func (c *terminalTalk) startedLocked(stdio, startPlan, string) {}

func (c *terminalTalk) begin(g *generation, fds stdio) error {
	g.readers = c.s.readTTY(fds.out)
	return nil
}
