package supervisor

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"agt/config"
	"agt/pids"
	"agt/spawn/ctl"
	"agt/stream"
)

// acpTalk is the conversation of an agent that speaks the Agent Client Protocol on its stdin
// and stdout (stdin "acp"): the supervisor is its client. The protocol is a pure object
// (stream.ACP) that decodes the agent's lines and says what to write back; this conversation
// turns agt's requests into its calls, writes its lines from a goroutine of their own (an agent
// that reads slowly never holds mu up), waits for the handshake at each start, and turns a stop
// into a cancel and the end of input.
type acpTalk struct {
	talk
	p     protocol
	in    *os.File      // the running generation's stdin; nil before the first start
	w     *inputWriter  // writes p's lines to in
	kick  chan struct{} // a line was decoded: connect looks again
	heard int           // lines of output, stdout and stderr: signs of work, for connect
	tail  []string      // the last stderr lines of the run, for a connection error
	ready bool          // connect has returned: a later failure ends the run
	ended bool          // ...which it did
	// The prompt of the turn under way, and whether agt interrupted it; lost is the prompt of
	// an interrupted turn that the agent kept nothing of (spec ForgetsInterrupted), which goes
	// again before the next message. In memory only: prompts never reach the log.
	turnText, lost string
	cancelled      bool
}

// protocol is the client of a protocol spoken on the agent's stdin and stdout: stream.ACP. Any
// client of the same shape fits (Codex's app-server speaks JSON-RPC over stdio too: a
// handshake, turns started by a request, requests of the agent's to answer, a thread to
// resume). It is pure: Decode takes the agent's lines, Lines gives what to write back.
type protocol interface {
	stream.Decoder
	// Connect begins the handshake, on the session resume ("" for a new one).
	Connect(cwd, resume string)
	// Lines returns the lines to write, and forgets them.
	Lines() [][]byte
	// Handshake says whether the agent answered as a speaker of the protocol, or why the
	// connection failed.
	Handshake() (answered bool, failed string)
	// Ready reports whether the session was opened, even if the run failed after.
	Ready() bool
	// Open reports whether a turn is under way.
	Open() bool
	// Prompt starts a turn with a user message, once the session is open.
	Prompt(text string)
	// Answer answers the agent's permission request id.
	Answer(id string, allow, always bool) (string, error)
	// Cancel ends the running turn, answering its pending requests cancelled (their ids).
	Cancel() []string
}

func newACPTalk(s *supervisor, p protocol) *acpTalk {
	c := &acpTalk{p: p, kick: make(chan struct{}, 1)}
	c.talk = newTalk(s, c)
	// The protocol resumes a session (session/load), and a resume runs the start argv.
	s.spec.Resume = s.spec.Argv
	return c
}

func (c *acpTalk) inputLocked(string) string {
	if c.in == nil {
		return fmt.Sprintf("%s has no input open", c.s.spec.Name)
	}
	return ""
}

// acpLineRoom is what a line of the protocol around a message or an answer may take: room is
// made for it before the protocol is told, which must not think sent what was refused.
const acpLineRoom = 64 << 10

// lineRoom is the room a line carrying text takes: text as a JSON string (a newline or a quote
// takes two bytes there, a control six), and the protocol around it.
func lineRoom(text string) int { return len(stream.AppendString(nil, text)) + acpLineRoom }

func (c *acpTalk) deliverLocked(text string) (bool, error) {
	if c.lost != "" {
		text = c.lost + "\n\n" + text
	}
	if err := c.w.room(lineRoom(text)); err != nil {
		return false, err
	}
	c.lost = ""
	c.turnText, c.cancelled = text, false
	c.p.Prompt(text)
	c.flushLocked()
	return true, nil
}

// turnEndedLocked: an interrupted turn of an agent that keeps nothing of one (gemini --acp drops
// its prompt from the session) leaves its prompt to go again before the next message, and the
// log says so; then the turn's end is as for every conversation.
func (c *acpTalk) turnEndedLocked(now time.Time) {
	if c.cancelled && c.s.spec.ForgetsInterrupted && c.turnText != "" {
		c.lost = c.turnText
		ev := stream.Event{Type: stream.TypeError, Source: stream.SourceSupervisor,
			Message: fmt.Sprintf("%s keeps nothing of an interrupted turn: its prompt (%d bytes) goes again, before the next message", c.s.spec.Kind, len(c.lost))}
		c.s.appendLocked(&ev, now)
	}
	c.turnText, c.cancelled = "", false
	c.talk.turnEndedLocked(now)
}

// replyLocked answers by the option of the kind asked for, by its kind: ids differ from agent
// to agent. ACP takes no message with a denial.
func (c *acpTalk) replyLocked(p *ctl.Permission, allow, always bool, _ string) error {
	if err := c.w.room(acpLineRoom); err != nil {
		return err
	}
	if _, err := c.p.Answer(p.ID, allow, always); err != nil {
		return err
	}
	c.flushLocked()
	return nil
}

// interruptLocked sends session/cancel, and answers every pending request cancelled; the agent
// ends the turn with stopReason cancelled.
func (c *acpTalk) interruptLocked(now time.Time) string {
	if err := c.w.room(acpLineRoom); err != nil {
		return fmt.Sprintf("%s: %v", c.s.spec.Name, err)
	}
	c.cancelLocked(now)
	if c.s.waitingForPermissionLocked() {
		c.s.beginLocked(now) // the turn ends on its own: running until it says so
	}
	return ""
}

// closeLocked ends the agent's input once the lines queued are written: it exits.
func (c *acpTalk) closeLocked() { c.w.closeAfter() }

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
	return c.s.pipes(env, stdinPipe, nil)
}

// startedLocked begins the protocol on a new run's stdin: initialize, the session (resumed
// when resume is not ""), and the prompt when there is one, as session/prompt once the session
// is open.
func (c *acpTalk) startedLocked(fds stdio, p startPlan, resume string) {
	if c.in != nil {
		c.in.Close()     // the last run's
		c.w.closeAfter() // its goroutine ends
	}
	c.in, c.w = fds.in, newInputWriter(fds.in, func(n int) {
		c.s.emitError(fmt.Sprintf("%s reads its input again; %d lines for it were dropped meanwhile", c.s.spec.Name, n), false)
		giveBack()
	})
	c.p.Connect(c.s.spec.Cwd, resume)
	c.turnText, c.cancelled = "", false
	if p.prompt != nil {
		c.turnText = *p.prompt
		c.p.Prompt(*p.prompt)
	}
	c.tail = c.tail[:0]
	c.ready = false
	c.flushLocked()
}

// begin waits for the handshake (connect).
func (c *acpTalk) begin(g *generation, fds stdio) error {
	readLines(c.s, g, fds)
	return c.connect(g, c.s.spec.Argv[0])
}

// lineLocked follows a line of output: a stderr line is kept for a connection error; a stdout
// line's answers go out, a connection being made hears of it, and a session that could not be
// opened after spawn returned (the agent refused session/new) ends the run.
func (c *acpTalk) lineLocked(line []byte, stderr bool) {
	c.heard++
	if stderr {
		c.keepStderrLocked(line)
		return
	}
	c.flushLocked()
	select {
	case c.kick <- struct{}{}:
	default:
	}
	c.endIfFailedLocked()
}

// endIfFailedLocked ends the run of a connection that failed once connect had returned (a
// session refused, a prompt answered with an error no later one can cure): the agent's input
// closes and its tree gets SIGTERM, once.
func (c *acpTalk) endIfFailedLocked() {
	if _, failed := c.p.Handshake(); failed != "" && c.ready && c.s.alive && !c.ended {
		c.ended = true
		c.w.closeAfter()
		c.s.tree().Signal(syscall.SIGTERM)
	}
}

// nextLocked: ACP's turns are its prompts. An update that comes after the prompt's answer (or
// in a session opened with no prompt) is a late note, not a new turn: a sign of life only.
func (c *acpTalk) nextLocked(ev *stream.Event, next stream.Snapshot, now time.Time) stream.Snapshot {
	if ev != nil && !c.p.Open() && ev.Type != stream.TypePermission && ev.Type != stream.TypeResult {
		return c.s.machine.Active(c.s.snap, now)
	}
	return next
}

// stoppingLocked is a stop's word before its signal: the turn is cancelled (pending requests
// answered cancelled), and the input ends.
func (c *acpTalk) stoppingLocked(now time.Time) {
	c.cancelLocked(now)
	c.w.closeAfter()
}

// flushLocked hands the client's pending lines to the writer. Lines past its bound are dropped
// (the answers to an agent that floods requests and reads none: R36); the first drop of a
// spell is an error event, and the agent runs on.
func (c *acpTalk) flushLocked() {
	lines := c.p.Lines()
	if first, err := c.w.send(lines...); first {
		c.s.errorLocked(fmt.Sprintf("%s cut off: %v; what agt answers it is dropped until it reads", c.s.spec.Name, err))
	}
}

// cancelLocked cancels the running turn: pending permission requests are answered cancelled
// (the log records each as denied) and session/cancel goes out.
func (c *acpTalk) cancelLocked(now time.Time) {
	s := c.s
	c.cancelled = c.cancelled || c.p.Open()
	for _, id := range c.p.Cancel() {
		if p, ok := s.perms[id]; ok {
			ev := stream.Event{Type: stream.TypePermission, ID: p.ID, Tool: p.Tool, Input: p.Input, Options: p.Options, Decision: "deny"}
			s.appendLocked(&ev, now)
			delete(s.perms, id)
			s.removePermission(id)
		}
	}
	s.flushLocked()
	c.flushLocked()
}

// stderrTailLines is how many of the last stderr lines a connection error quotes.
const stderrTailLines = 3

// keepStderrLocked keeps the last lines of the agent's stderr, for a connection error.
func (c *acpTalk) keepStderrLocked(line []byte) {
	l := strings.TrimSpace(string(line))
	if l == "" {
		return
	}
	if len(l) > 200 {
		l = l[:200] + "…"
	}
	if len(c.tail) == stderrTailLines {
		c.tail = append(c.tail[:0], c.tail[1:]...)
	}
	c.tail = append(c.tail, l)
}

// errStoppedConnecting says a stop came while the supervisor waited for the handshake.
var errStoppedConnecting = errors.New("stopped while connecting")

// connectWorkLimit bounds how many connect timeouts in a row an agent that works (on a
// processor, or writing) without answering initialize is given.
const connectWorkLimit = 10

// connect waits until the agent has answered initialize (within connect_timeout, default 30 s,
// of no sign of work: an agent that spends processor time or writes lines meanwhile, as a Node
// CLI loading on a busy machine does, is given the time again, up to connectWorkLimit times)
// and then until its session is open (within as long again; past that the agent goes on and
// the session event comes when it comes). When the agent does not answer, answers with what is
// not ACP, refuses, or exits, the run's whole tree is killed and the error says why, with its
// last stderr lines.
func (c *acpTalk) connect(g *generation, argv0 string) error {
	s := c.s
	timeout := time.Duration(s.spec.ConnectTimeout)
	if timeout <= 0 {
		timeout = config.DefaultConnectTimeout
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	answered := false
	work, worked := c.work(), 0
	var why string
	for why == "" {
		s.mu.Lock()
		ok, failed := c.p.Handshake()
		ready := c.p.Ready()
		s.mu.Unlock()
		switch {
		case ready:
			// The session is open: what fails from now on (a first prompt answered with
			// an error no later one can cure) is the run's, not the connection's.
			c.setReady()
			return nil
		case failed != "":
			why = failed
			continue
		case ok && !answered:
			answered = true
			t.Reset(timeout) // as long again for the session
		}
		select {
		case <-c.kick:
		case <-s.sigs.chld:
			if exit := s.reap(); exit != nil {
				why = "it exited (" + exitWords(exit) + ") before it answered"
				if answered {
					why = "it exited (" + exitWords(exit) + ") before its session was open"
				}
			}
		case <-s.sigs.term:
			s.wantDown() // a plain SIGTERM is a stop too
			why = errStoppedConnecting.Error()
		case <-t.C:
			if answered {
				c.setReady() // slow to open its session, but it speaks ACP: go on
				return nil
			}
			now := c.work()
			switch {
			case now == work:
				why = fmt.Sprintf("no answer to initialize within %v, and no sign of work from it (connect_timeout in agt.toml)", timeout)
			case worked+1 >= connectWorkLimit:
				why = fmt.Sprintf("no answer to initialize within %v, though it kept working (%d × connect_timeout in agt.toml)", time.Duration(connectWorkLimit)*timeout, connectWorkLimit)
			default:
				work, worked = now, worked+1
				t.Reset(timeout) // still loading: as long again
			}
		}
	}
	// The run is over: its whole tree goes, and the client is ready for the next.
	s.sweep(s.sigs, nil, time.Now().Add(ctl.CleanupGrace), false)
	s.drain(g)
	s.mu.Lock()
	s.alive = false
	s.dec.End(nil, stream.Exit{Code: -1, Signal: "SIGKILL"}) // no session, no turn to end: only the reset
	tail := strings.Join(c.tail, " | ")
	s.mu.Unlock()
	msg := fmt.Sprintf("could not connect to %s: %s", argv0, why)
	if tail != "" {
		msg += "; its last stderr lines: " + tail
	}
	if why == errStoppedConnecting.Error() {
		return fmt.Errorf("%s: %w", msg, errStoppedConnecting)
	}
	return errors.New(msg)
}

// work is how much the agent has done so far, for connect to tell a slow start from a hung
// one: its processor time, in clock ticks, plus the lines it wrote.
func (c *acpTalk) work() uint64 {
	s := c.s
	s.mu.Lock()
	leader, heard := s.leader, c.heard
	s.mu.Unlock()
	cpu, _ := pids.CPU(leader)
	return cpu + uint64(heard)
}

// setReady: connect has returned; a failure that came meanwhile ends the run now.
func (c *acpTalk) setReady() {
	c.s.mu.Lock()
	c.ready = true
	c.endIfFailedLocked()
	c.s.mu.Unlock()
}

// exitWords says how a process ended: "exit code 3", "killed by SIGKILL".
func exitWords(e *stream.Exit) string {
	if e.Signal != "" {
		return "killed by " + e.Signal
	}
	return fmt.Sprintf("exit code %d", e.Code)
}
