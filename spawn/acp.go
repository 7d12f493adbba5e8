package spawn

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"agt/config"
	"agt/stream"
)

// An ACP agent (stdin "acp") speaks the Agent Client Protocol on its stdin and stdout, and the
// supervisor is its client: stream.ACP knows the protocol and says what to write; this file
// writes it, waits for the handshake, and turns send, approve, deny, interrupt and stop into
// the protocol's requests and answers.

// acpWriter writes the client's lines to the agent's stdin, in order, from a goroutine of its
// own: the lines are made under mu, and an agent that reads slowly must never hold mu up.
type acpWriter struct {
	mu      sync.Mutex
	lines   [][]byte
	closing bool // close stdin once the lines queued are written
	wake    chan struct{}
	w       *os.File
}

func newACPWriter(w *os.File) *acpWriter {
	aw := &acpWriter{w: w, wake: make(chan struct{}, 1)}
	go aw.loop()
	return aw
}

// send queues lines for the agent.
func (aw *acpWriter) send(lines [][]byte) {
	if aw == nil || len(lines) == 0 {
		return
	}
	aw.mu.Lock()
	aw.lines = append(aw.lines, lines...)
	aw.mu.Unlock()
	aw.kick()
}

// closeAfter closes the agent's stdin once what is queued is written: the end of its input.
func (aw *acpWriter) closeAfter() {
	if aw == nil {
		return
	}
	aw.mu.Lock()
	aw.closing = true
	aw.mu.Unlock()
	aw.kick()
}

func (aw *acpWriter) kick() {
	select {
	case aw.wake <- struct{}{}:
	default:
	}
}

func (aw *acpWriter) loop() {
	defer aw.w.Close()
	for {
		aw.mu.Lock()
		lines, closing := aw.lines, aw.closing
		aw.lines = nil
		aw.mu.Unlock()
		if len(lines) == 0 && closing {
			return
		}
		for _, l := range lines {
			// No deadline: the agent reads when it reads. It exiting ends the write (EPIPE).
			if _, err := aw.w.Write(l); err != nil {
				return
			}
		}
		if len(lines) == 0 {
			<-aw.wake
		}
	}
}

// acpFlushLocked hands the client's pending lines to the writer.
func (s *supervisor) acpFlushLocked() {
	if s.acp != nil {
		s.acpw.send(s.acp.Lines())
	}
}

// acpStartLocked begins the protocol on a new run's stdin: initialize, the session (resumed
// when resume is not ""), and the prompt when there is one.
func (s *supervisor) acpStartLocked(stdin *os.File, resume string, prompt *string) {
	if s.acpw != nil {
		s.acpw.closeAfter() // the last run's: its goroutine ends
	}
	s.acpw = newACPWriter(stdin)
	s.acp.Connect(s.spec.Cwd, resume)
	if prompt != nil {
		s.acp.Prompt(*prompt)
	}
	s.stderrTail = s.stderrTail[:0]
	s.connected = false
	s.acpFlushLocked()
}

// acpLineLocked follows a line the client decoded: its answers go out, a connection still
// being made hears of it, and a session that could not be opened after spawn returned (the
// agent refused session/new) ends the run.
func (s *supervisor) acpLineLocked() {
	s.acpFlushLocked()
	select {
	case s.acpKick <- struct{}{}:
	default:
	}
	if _, failed := s.acp.Handshake(); failed != "" && s.connected && s.alive && !s.acpEnded {
		s.acpEnded = true
		s.acpw.closeAfter()
		s.tree().Signal(syscall.SIGTERM)
	}
}

// stderrTailLines is how many of the last stderr lines a connection error quotes.
const stderrTailLines = 3

// keepStderrLocked keeps the last lines of an ACP agent's stderr, for a connection error.
func (s *supervisor) keepStderrLocked(line []byte) {
	l := strings.TrimSpace(string(line))
	if l == "" {
		return
	}
	if len(l) > 200 {
		l = l[:200] + "…"
	}
	if len(s.stderrTail) == stderrTailLines {
		s.stderrTail = append(s.stderrTail[:0], s.stderrTail[1:]...)
	}
	s.stderrTail = append(s.stderrTail, l)
}

// errStoppedConnecting says a stop came while the supervisor waited for the handshake.
var errStoppedConnecting = errors.New("stopped while connecting")

// connect waits until the agent has answered initialize (within connect_timeout, default 30 s)
// and then until its session is open (within as long again; past that the agent goes on and
// the session event comes when it comes). When the agent does not answer, answers with what is
// not ACP, refuses, or exits, the run's whole tree is killed and the error says why, with its
// last stderr lines.
func (s *supervisor) connect(g *generation, argv0 string) error {
	timeout := time.Duration(s.spec.ConnectTimeout)
	if timeout <= 0 {
		timeout = config.DefaultConnectTimeout
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	answered := false
	var why string
	for why == "" {
		s.mu.Lock()
		ok, failed := s.acp.Handshake()
		ready := s.acp.Ready()
		s.mu.Unlock()
		switch {
		case failed != "":
			why = failed
			continue
		case ready:
			s.setConnected()
			return nil
		case ok && !answered:
			answered = true
			t.Reset(timeout) // as long again for the session
		}
		select {
		case <-s.acpKick:
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
				s.setConnected() // slow to open its session, but it speaks ACP: go on
				return nil
			}
			why = fmt.Sprintf("no answer to initialize within %v (connect_timeout in agt.toml)", timeout)
		}
	}
	// The run is over: its whole tree goes, and the client is ready for the next.
	s.sweep(s.sigs, nil, time.Now().Add(cleanupGrace), false)
	s.drain(g)
	s.mu.Lock()
	s.alive = false
	s.dec.End(nil, stream.Exit{Code: -1, Signal: "SIGKILL"}) // no session, no turn to end: only the reset
	tail := strings.Join(s.stderrTail, " | ")
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

func (s *supervisor) setConnected() {
	s.mu.Lock()
	s.connected = true
	s.mu.Unlock()
}

// exitWords says how a process ended: "exit code 3", "killed by SIGKILL".
func exitWords(e *stream.Exit) string {
	if e.Signal != "" {
		return "killed by " + e.Signal
	}
	return fmt.Sprintf("exit code %d", e.Code)
}

// acpCancelLocked cancels the running turn: pending permission requests are answered cancelled
// (the log records each as denied) and session/cancel goes out.
func (s *supervisor) acpCancelLocked(now time.Time) {
	for _, id := range s.acp.Cancel() {
		if p, ok := s.perms[id]; ok {
			ev := stream.Event{Type: stream.TypePermission, ID: p.ID, Tool: p.Tool, Input: p.Input, Options: p.Options, Decision: "deny"}
			s.appendLocked(&ev, now)
			delete(s.perms, id)
			s.removePermission(id)
		}
	}
	s.flushLocked()
	s.acpFlushLocked()
}

// acpStopLocked is a stop's word to an ACP agent before its signal: the turn is cancelled, and
// its input ends.
func (s *supervisor) acpStopLocked(now time.Time) {
	if s.acp == nil {
		return
	}
	s.acpCancelLocked(now)
	s.acpw.closeAfter()
}
