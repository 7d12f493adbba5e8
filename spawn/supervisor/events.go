package supervisor

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"sync"
	"syscall"
	"time"

	"agt/spawn/ctl"
	"agt/state"
	"agt/stream"
)

// read starts the stdout and stderr readers; the returned channel closes when both reach EOF.
func (s *supervisor) read(outR, errR *os.File) <-chan struct{} {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer outR.Close()
		s.readStream(outR, s.a.Path(state.StdoutLog), false)
	}()
	go func() {
		defer wg.Done()
		defer errR.Close()
		s.readStream(errR, s.a.Path(state.StderrLog), true)
	}()
	go func() { wg.Wait(); close(done) }()
	return done
}

func (s *supervisor) readStream(r io.Reader, rawPath string, stderr bool) {
	raw := openCapped(rawPath, rawLogCap)
	defer raw.Close()
	lr := newLineReader(r, MaxLine)
	lr.tee = raw.Write
	for {
		line, truncated, n, err := lr.next()
		if err != nil {
			s.mu.Lock()
			s.flushLocked()
			s.mu.Unlock()
			return
		}
		// Events of lines already read go out in one write; the batch is written before
		// the reader can block, so batching adds no delay.
		s.emitLine(line, truncated, n, stderr, !lr.more())
	}
}

// emitLine turns one line of agent output into events.
func (s *supervisor) emitLine(line []byte, truncated bool, n int, stderr, flush bool) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = s.events[:0]
	switch {
	case stderr:
		if l, ok := s.dec.(stream.LogReader); !ok || truncated || !l.Routine(line) {
			s.events = append(s.events, stream.Event{Type: stream.TypeStderr, Line: string(line)})
		}
		if !truncated {
			s.events = s.dec.DecodeStderr(s.events, line)
		}
	case truncated:
		// A cut line cannot be decoded; keep what fits and say so.
		if _, text := s.dec.(stream.Text); text {
			s.events = append(s.events, stream.Event{Type: stream.TypeOutput, Line: string(line)})
		} else {
			s.events = append(s.events, stream.Unparsed(line))
		}
	default:
		s.events = s.dec.Decode(s.events, line)
	}
	if len(s.events) == 0 {
		// A line the decoder folds away (a streamed token) is still a sign of life.
		if s.moveLocked(s.machine.Active(s.snap, now), now) {
			s.writeStatusLocked()
		}
	}
	for i := range s.events {
		ev := &s.events[i]
		if truncated && (ev.Type == stream.TypeStderr || ev.Type == stream.TypeOutput || ev.Type == stream.TypeUnparsed) {
			ev.Truncated, ev.Bytes = true, n
		}
		s.recordLocked(ev)
		ask := ev.Type == stream.TypePermission && ev.Decision == "" && s.conv.permissionLocked(ev)
		s.appendLocked(ev, now)
		if ask {
			s.askedLocked(ev) // after append: the inbox holds its seq
		}
		s.observeLocked(ev, now)
	}
	s.conv.lineLocked(line, stderr)
	if flush || len(s.pending) >= maxPending {
		s.flushLocked()
	}
}

// emitError records an error event from the supervisor.
func (s *supervisor) emitError(msg string, fatal bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ev := stream.Event{Type: stream.TypeError, Message: msg, Source: stream.SourceSupervisor, Fatal: fatal}
	s.appendLocked(&ev, time.Now())
	s.flushLocked()
}

// errorLocked records an error event from the supervisor that the agent runs on after.
func (s *supervisor) errorLocked(msg string) {
	ev := stream.Event{Type: stream.TypeError, Message: msg, Source: stream.SourceSupervisor}
	s.appendLocked(&ev, time.Now())
	s.flushLocked()
}

// maxPending bounds the events held for one write.
const maxPending = 256 << 10

// appendLocked stamps ev and adds its line to the pending batch; flushLocked writes the batch.
// Every line is whole within one write (R20), and a batch never waits for more input. It
// returns the line (valid until the next append).
func (s *supervisor) appendLocked(ev *stream.Event, now time.Time) []byte {
	s.seq++
	ev.V, ev.TS, ev.Agent, ev.Seq = stream.Version, now, s.spec.Name, s.seq
	start := len(s.pending)
	s.pending = append(ev.AppendJSON(s.pending), '\n')
	s.status.LastSeq = s.seq
	if !s.dirty {
		// The main loop writes status.json within a second (see flush in run), so that
		// last_seq, turns, cost and the session catch up without a change of state.
		s.dirty = true
		s.kickLocked()
	}
	return s.pending[start:]
}

// flushLocked writes the pending events. When the disk refuses them (ENOSPC, EDQUOT, EFBIG,
// EIO…) they are counted as dropped and the agent goes on: its output keeps draining (R23).
// The first write that succeeds again is followed by an error event saying how many were lost.
// A log over its size cap is rotated (R22).
func (s *supervisor) flushLocked() {
	if len(s.pending) == 0 || s.logHeldLocked() {
		return
	}
	err := s.writeLog(s.pending)
	if err != nil && s.final {
		s.writeErr = err // the end is kept, for finish to write again
		return
	}
	if err != nil {
		n := int64(bytes.Count(s.pending, []byte{'\n'}))
		s.status.Dropped += n
		s.lost += n
		if s.writeErr == nil {
			fmt.Fprintf(os.Stderr, "agt supervise %s: write events: %v\n", s.spec.Name, err)
		}
		s.writeErr = err
	} else if s.lost > 0 {
		s.seq++
		ev := s.lostEventLocked()
		ev.V, ev.TS, ev.Agent, ev.Seq = stream.Version, time.Now(), s.spec.Name, s.seq
		if s.writeLog(append(ev.AppendJSON(nil), '\n')) == nil {
			s.status.LastSeq = s.seq
			s.lost, s.writeErr = 0, nil
		}
	}
	s.pending = s.pending[:0]
	if cap(s.pending) > 4*maxPending {
		s.pending = nil // a huge line passed through: do not keep its buffer
	}
	if max := s.spec.LogMaxSize; max > 0 && s.log.Size() >= max {
		if err := s.log.Rotate(); err != nil {
			fmt.Fprintf(os.Stderr, "agt supervise %s: %v\n", s.spec.Name, err)
		}
	}
}

// writeLog writes to the event log, unless the test hook says the disk is full.
func (s *supervisor) writeLog(b []byte) error {
	if ctl.Test.DiskFull != nil && ctl.Test.DiskFull() {
		return fmt.Errorf("write %s: %w", s.a.Path(state.EventsFile), syscall.ENOSPC)
	}
	return s.log.Write(b)
}

// recordLocked records what an event of the agent tells about it in the status, before the
// event is written: a result is numbered with the agent's count of finished turns.
func (s *supervisor) recordLocked(ev *stream.Event) {
	switch ev.Type {
	case stream.TypeSession:
		if ev.SessionID != "" && ev.SessionID != s.status.SessionID {
			s.status.SessionTotal, s.status.Resumable = state.Usage{}, false
			s.status.SessionID = ev.SessionID
		}
		if ev.Model != "" {
			s.status.Model = ev.Model
		}
	case stream.TypeText, stream.TypeToolUse, stream.TypeToolResult:
		// The model replied: the agent has saved its session, which a restart can resume.
		s.status.Resumable = s.status.SessionID != ""
	case stream.TypeResult:
		s.status.Turns++
		ev.Turns = s.status.Turns
		if ev.OK {
			s.status.Resumable = s.status.SessionID != ""
			s.status.Error = ""
		}
		if ev.CostUSD != nil && !math.IsNaN(*ev.CostUSD) && !math.IsInf(*ev.CostUSD, 0) {
			c := *ev.CostUSD
			if s.status.CostUSD != nil {
				c += *s.status.CostUSD
			}
			s.status.CostUSD = &c
			if max := s.spec.MaxCost; max > 0 && c > max && !s.overBudget {
				// Past the budget: the agent ends, failed (budget), with what it spent.
				s.overBudget = true
				ev := stream.Event{Type: stream.TypeError, Source: stream.SourceSupervisor, Fatal: true, Class: stream.ClassBudget,
					Message: fmt.Sprintf("spent $%s, over the budget of $%s: stopping", ctl.CostText(c), ctl.CostText(max))}
				s.appendLocked(&ev, time.Now())
				s.status.Error = ev.Message
				s.kickLocked()
			}
		}
		if ev.Usage != nil {
			// state.Usage is stream.Usage's twin (state does not import stream).
			(*stream.Usage)(&s.status.Usage).Add(*ev.Usage)
		}
		if r, ok := s.dec.(stream.SessionResumer); ok {
			if total, ok := r.SessionTotal(s.status.SessionID); ok {
				s.status.SessionTotal = state.Usage(total)
			}
		}
	}
}

// observeLocked feeds an event to the state machine, writing the status when the state moved.
func (s *supervisor) observeLocked(ev *stream.Event, now time.Time) {
	next := s.conv.nextLocked(ev, s.machine.Event(s.snap, ev, now), now)
	if s.moveLocked(next, now) {
		s.writeStatusLocked()
	}
	if ev.Type == stream.TypeResult {
		s.conv.turnEndedLocked(now)
	}
}

// moveLocked records a new snapshot, emitting a state event when the state changed, which it
// reports. Writing the status is the caller's, once it has recorded all that goes with the move:
// the state event is written to the log after the status (writeStatusLocked), so that whoever
// reads the state in the log finds it in status.json too.
func (s *supervisor) moveLocked(next stream.Snapshot, now time.Time) bool {
	prev := s.snap
	s.snap = next
	if next.State == prev.State && next.Reason == prev.Reason {
		return false
	}
	ev := stream.Event{Type: stream.TypeState, From: prev.State, To: next.State, Reason: next.Reason}
	s.appendLocked(&ev, now)
	s.hooks.changed(prev.State, next.State, next.Reason)
	s.status.State, s.status.Reason, s.status.Since = next.State, next.Reason, next.Since
	s.kickLocked()
	return true
}

// kickLocked wakes the main loop to re-arm its timers: the state's due time and the flush;
// and to stop the agent once it is over its budget.
func (s *supervisor) kickLocked() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
	if s.overBudget && !s.budgetSent {
		s.budgetSent = true
		close(s.budgetC)
	}
}

// isOverBudget reports whether the agent spent more than its budget.
func (s *supervisor) isOverBudget() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.overBudget
}

func (s *supervisor) setStateLocked(state, reason string, now time.Time) {
	next := s.snap
	next.State, next.Reason, next.Since = state, reason, now
	s.moveLocked(next, now)
}

// finish writes the exit event (when exit is not nil), the final state event and the final
// status. The other way round from a live move: a follower stops once the status is final, so
// the final state event must be in the log by then. Neither is given up while the disk is full
// (R4, R23): the end is written again until the disk takes it, and the supervisor, holding the
// lock, stays until then, so that nobody reads a guess instead.
func (s *supervisor) finish(state, reason string, exit *stream.Exit) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.final = true
	if s.lost > 0 {
		ev := s.lostEventLocked()
		s.appendLocked(&ev, now)
		s.lost = 0
	}
	if exit != nil {
		s.recordExitLocked(exit, now)
	}
	if state == stream.Exited {
		s.status.Error = "" // the last failure was cured
	}
	s.setStateLocked(state, reason, now)
	failing := time.Now()
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		if s.flushLocked(); len(s.pending) == 0 {
			break
		}
		// The disk refuses the end: readers ask for it over the control channel until it
		// takes it (state/endlock.go).
		s.lock.EndKnown()
		if s.lock.Check() != nil || !healable(s.writeErr) && time.Since(failing) > giveUpAfter {
			// The record is gone, or no freed space will cure the error: the end is dropped,
			// and counted, as a live write's would be.
			n := int64(bytes.Count(s.pending, []byte{'\n'}))
			s.status.Dropped += n
			s.pending = s.pending[:0]
			break
		}
		s.mu.Unlock()
		time.Sleep(wait) // the disk refused the end: nothing else is left to do
		s.mu.Lock()
	}
	s.writeStatusLocked()
	s.syncStatusLocked(true)
}

// lostEventLocked is the error event that says how many events the disk refused.
func (s *supervisor) lostEventLocked() stream.Event {
	return stream.Event{Type: stream.TypeError, Source: stream.SourceSupervisor,
		Message: fmt.Sprintf("%d events lost: %v", s.lost, s.writeErr)}
}

// recordExitLocked writes the exit event and keeps the exit in the status and its history.
func (s *supervisor) recordExitLocked(exit *stream.Exit, now time.Time) {
	ev := stream.Event{Type: stream.TypeExit, Signal: exit.Signal}
	rec := state.Exit{Signal: exit.Signal, At: now}
	s.status.ExitCode = nil
	if exit.Signal == "" {
		code := exit.Code
		ev.Code, rec.Code, s.status.ExitCode = &code, &code, &code
	}
	s.status.Signal = exit.Signal
	s.status.History = append(s.status.History, rec)
	if n := len(s.status.History); n > state.HistoryLen {
		s.status.History = s.status.History[n-state.HistoryLen:]
	}
	s.appendLocked(&ev, now)
	s.flushLocked()
}

func (s *supervisor) appendEventsLocked(now time.Time) {
	for i := range s.events {
		s.appendLocked(&s.events[i], now)
	}
}

// tickLocked applies the transitions of silence due at now and reports whether the state moved.
func (s *supervisor) tickLocked(now time.Time) bool {
	return s.moveLocked(s.conv.nextLocked(nil, s.machine.Tick(s.snap, now), now), now)
}
