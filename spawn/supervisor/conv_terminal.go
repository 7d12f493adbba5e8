package supervisor

import (
	"fmt"
	"os"
	"strings"
	"time"

	"agt/config"
	"agt/spawn/ctl"
	"agt/state"
	"agt/stream"
)

// terminalTalk is the conversation of an agent on a terminal (spawn --tty): the supervisor owns
// the terminal (terminal, in tty.go) and is its only reader; what the program shows becomes
// output events, line by line, and its state comes from timing (see stream.Terminal). What agt
// send gives it is typed, as a person would, and every other answer is the person's to give on
// the terminal itself (agt attach).
type terminalTalk struct {
	base
	term       *terminal
	text       stream.TermText // the output as text, for its output events; mu guards it
	watch      *screenWatch    // the whole screen, for its state; mu guards it
	typePrompt *string         // the prompt, typed once the agent first waits; mu guards it
	seen       uint64          // bytes of output taken in so far; mu guards it
}

func newTerminalTalk(s *supervisor) *terminalTalk {
	s.machine.Mode, s.machine.Prompts = stream.Terminal, prompts(s.spec)
	t := newTerminal(s.spec, s.a)
	rows, cols := t.size()
	return &terminalTalk{base: base{s}, term: t, watch: newScreenWatch(s.spec, rows, cols)}
}

func (c *terminalTalk) send(req ctl.Request) ctl.Reply {
	s := c.s
	s.mu.Lock()
	seq, st := s.seq, s.snap.State
	s.mu.Unlock()
	shown, err := c.typeText(req.Text, req.AnswerBy())
	switch {
	case err != nil:
		return ctl.Reply{Error: fmt.Sprintf("%s is %s: %v", s.spec.Name, st, err)}
	case !shown:
		return ctl.Reply{Error: fmt.Sprintf("typed into %s, but it showed nothing in time; look with 'agt attach %s'", s.spec.Name, s.spec.Name)}
	}
	return ctl.Reply{Seq: seq}
}

func (c *terminalTalk) answer(ctl.Request) ctl.Reply        { return c.elsewhere() }
func (c *terminalTalk) interrupt() ctl.Reply                { return c.elsewhere() }
func (c *terminalTalk) endAfterTurn() ctl.Reply             { return c.elsewhere() }
func (c *terminalTalk) permissionLocked(*stream.Event) bool { return false }
func (c *terminalTalk) turnEndedLocked(time.Time)           {}

// elsewhere refuses what only the terminal itself can be told.
func (c *terminalTalk) elsewhere() ctl.Reply {
	n := c.s.spec.Name
	return ctl.Reply{Error: fmt.Sprintf("%s runs on a terminal: answer it there ('agt attach %s'), or type with 'agt send --keys %s'", n, n, n)}
}

func (c *terminalTalk) keys(text string) ctl.Reply {
	s := c.s
	s.mu.Lock()
	seq, st := s.seq, s.snap.State
	s.mu.Unlock()
	if err := c.term.input([]byte(text)); err != nil {
		return ctl.Reply{Error: fmt.Sprintf("%s is %s: %v", s.spec.Name, st, err)}
	}
	return ctl.Reply{Seq: seq}
}

func (c *terminalTalk) plan(resumed bool, prompt *string) startPlan { return c.s.plan(resumed, prompt) }

// open makes the terminal of a new run: the agent's stdin, stdout and stderr, which becomes its
// controlling one. A prompt the argv does not take is typed once the agent waits.
func (c *terminalTalk) open(p startPlan, env []string) (stdio, error) {
	s := c.s
	s.mu.Lock()
	lastExit := exitText(s.status.History)
	if p.prompt != nil && !p.resumed && !config.NeedsPrompt(p.argv) {
		c.typePrompt = p.prompt
	}
	s.mu.Unlock()
	ptmx, tty, err := c.term.open(lastExit, s.now())
	if err != nil {
		return stdio{}, err
	}
	return stdio{child: []*os.File{tty, tty, tty}, out: ptmx, env: termEnv(env, s.spec.Term), ctty: true}, nil
}

func (c *terminalTalk) startedLocked(stdio, startPlan, string) {}

func (c *terminalTalk) begin(g *generation, fds stdio) error {
	g.readers = c.read(fds.out)
	return nil
}

// nextLocked: a terminal agent that falls quiet says why it waits by its screen, after the line
// it left unfinished (its prompt) goes out as output; then it is typed the prompt it was
// spawned with, if it waits for that.
func (c *terminalTalk) nextLocked(ev *stream.Event, next stream.Snapshot, now time.Time) stream.Snapshot {
	s := c.s
	if ev != nil {
		return next
	}
	if next.State == stream.Waiting && next.Reason == stream.ReasonQuiet && s.snap.State != stream.Waiting {
		if next = s.machine.Judge(s.snap, next, c.watch.text); next.Busy {
			return next // its screen says it works
		}
		s.events = s.events[:0]
		c.text.EndPartial(c.outputLineLocked)
		c.failedLocked()
		s.appendEventsLocked(now)
	}
	if c.typePrompt != nil && next.State == stream.Waiting {
		p := *c.typePrompt
		c.typePrompt = nil
		go c.typeText(p, time.Time{})
	}
	return next
}

// failedLocked adds to s.events the failure the screen shows, once, and keeps it as the
// status's error while the screen shows it: a terminal agent that gave up on a model request
// waits for input, its error in ps.
func (c *terminalTalk) failedLocked() {
	s := c.s
	msg, fresh := c.watch.failed()
	switch {
	case fresh:
		s.events = append(s.events, stream.GaveUp(msg))
		s.status.Error = s.events[len(s.events)-1].Message
	case msg == "" && c.watch.told != "" && s.status.Error == c.watch.told:
		s.status.Error = "" // the screen no longer shows it
	}
	if fresh {
		c.watch.told = s.status.Error
	}
}

// end lets the attached clients go, once they have the last output.
func (c *terminalTalk) end() { c.term.end() }

// exitText says how the last run ended, for the restart separator: "exit 1", "killed by
// SIGSEGV"; "" when there was none.
func exitText(history []state.Exit) string {
	n := len(history)
	if n == 0 {
		return ""
	}
	e := history[n-1]
	switch {
	case e.Signal != "":
		return "killed by " + e.Signal
	case e.Code != nil:
		return fmt.Sprintf("exit %d", *e.Code)
	}
	return ""
}

// read reads a generation's terminal until the last holder of its other side has gone (EIO);
// the returned channel closes then.
func (c *terminalTalk) read(ptmx *os.File) <-chan struct{} {
	s := c.s
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer c.term.closed(ptmx)
		buf := make([]byte, 32<<10)
		for {
			n, err := ptmx.Read(buf)
			if n > 0 {
				c.term.output(buf[:n])
				c.emit(buf[:n])
			}
			if err != nil {
				break
			}
		}
		// What the program left on its last line is a line too.
		s.mu.Lock()
		s.events = s.events[:0]
		c.text.EndPartial(c.outputLineLocked)
		s.appendEventsLocked(s.now())
		s.flushLocked()
		s.mu.Unlock()
	}()
	return done
}

// emit turns a chunk of terminal output into output events, and its screen into the agent's
// state: a chunk that says something new on it is work (running); one that only redraws (a
// spinner and its clock) keeps a running agent from falling quiet and no more; one that only
// blinks is nothing; a screen that shows a retry of a failed model request is a retry notice
// (running, retrying).
func (c *terminalTalk) emit(p []byte) {
	s := c.s
	now := s.now()
	rows, cols := c.term.size()
	s.mu.Lock()
	defer s.mu.Unlock()
	c.seen += uint64(len(p))
	s.events = s.events[:0]
	// The lines kept for the prompt patterns are as many as the terminal has rows: on a tall
	// terminal, what a program draws under its input box (Claude's animated logo) must not
	// push the box out of them.
	c.text.Rows = int(rows)
	c.text.Write(p, c.outputLineLocked)
	alive, progress := c.watch.write(p, rows, cols)
	ev, fresh, retrying := c.watch.retrying()
	moved := false
	if alive { // a blink is no sign of life: a box that asks blinks for ever
		// While the screen shows a retry, its words are the retry's: its notice says what
		// is new.
		moved = s.moveLocked(s.machine.Screen(s.snap, now, progress && !retrying), now)
	}
	s.appendEventsLocked(now)
	if fresh {
		s.appendLocked(&ev, now)
		moved = s.moveLocked(s.machine.Event(s.snap, &ev, now), now) || moved
	}
	if moved {
		s.writeStatusLocked()
	} else {
		s.flushLocked()
	}
}

// outputLineLocked adds the output event of a line of terminal text to s.events.
func (c *terminalTalk) outputLineLocked(line []byte, truncated bool, n int) {
	ev := stream.Event{Type: stream.TypeOutput, Line: string(line)}
	if truncated {
		ev.Truncated, ev.Bytes = true, n
	}
	c.s.events = append(c.s.events, ev)
}

// typeText types text into the terminal and presses Enter, as a person would: text of several
// lines as one bracketed paste, so that a TUI takes it as one message. Enter goes once the
// program has echoed the text (or after a second), so that it is not taken as part of a paste.
// It reports whether the program showed anything after Enter, within typeConfirm; the waits end
// by by, when set: the time to answer the client (R38).
func (c *terminalTalk) typeText(text string, by time.Time) (bool, error) {
	within := func(d time.Duration) time.Duration {
		if by.IsZero() {
			return d
		}
		return max(min(d, time.Until(by)), 0)
	}
	text = strings.TrimRight(text, "\r\n") // the Enter is ours to press
	b := []byte(text)
	if strings.Contains(text, "\n") {
		b = append([]byte("\x1b[200~"), strings.ReplaceAll(text, "\n", "\r")...)
		b = append(b, "\x1b[201~"...)
	}
	mark := c.term.mark()
	if err := c.term.input(b); err != nil {
		return false, err
	}
	c.term.waitOutput(mark, within(time.Second))
	mark = c.term.mark()
	if err := c.term.input([]byte{'\r'}); err != nil {
		return false, err
	}
	return c.term.waitOutput(mark, within(typeConfirm)), nil
}

// typeConfirm bounds the wait for a program to show that it took what agt send typed.
const typeConfirm = 3 * time.Second
