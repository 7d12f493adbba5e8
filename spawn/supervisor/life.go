package supervisor

import (
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"agt/spawn/ctl"
	"agt/state"
	"agt/stream"
)

// The life of an agent under its supervisor: the first start, then, at the end of each run,
// what decide says (end.go) carried out: the final state, a restart after a delay, or the next
// turn.

// Run is the hidden `agt supervise` verb: it runs the agent recorded under name in the run
// directory root, reporting readiness on ready (then closing it), restarts it as its policy
// says, and returns once the agent and everything it started are gone and the final status is
// written. It answers to signals of its own (SIGTERM stops the agent), not to a context.
func Run(root, name, mode string, ready, goAhead *os.File) error {
	report := func(m ctl.Ready) {
		if ready == nil {
			return
		}
		ready.Write(m.Line())
		ready.Close()
		ready = nil
	}
	// Nothing to mark close-on-exec here: the spawn did so before starting us, and passes only
	// 0-4, of which commands marks 3 and 4.
	// The supervisor owns its signals: SIGTERM stops the agent, a later one can bring the kill
	// forward (stopDeadline). SIGHUP and SIGINT (a closing terminal) are not ours to act on. They are caught
	// before the lock is taken, so a stop that sees the lock held is never lost: it is the
	// one way a stop reaches us. The ones set aside are caught into a channel nobody reads,
	// not ignored: an ignored signal stays ignored across exec, in the agent and all it runs.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP, syscall.SIGINT, syscall.SIGPIPE)
	// A supervisor holds a few MiB. Past memoryLimit its collector works harder and gives
	// back at once what a flood of a peer took (R36); GOMEMLIMIT, when set, says otherwise.
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memoryLimit)
	}
	// SIGTERM and SIGCHLD on channels of their own: a burst of exiting children must never
	// crowd out a stop request (signal.Notify drops what a full channel cannot take).
	terms, chld := make(chan os.Signal, 4), make(chan os.Signal, 1)
	signal.Notify(terms, syscall.SIGTERM)
	signal.Notify(chld, syscall.SIGCHLD)
	defer signal.Stop(terms)
	defer signal.Stop(chld)
	sigs := signals{term: terms, chld: chld}
	if goAhead != nil {
		// Started ahead of the record (see pending): wait for it to be complete.
		var b [1]byte
		n, _ := goAhead.Read(b[:])
		goAhead.Close()
		if n != 1 {
			return nil // the spawn failed before; it removes what it made
		}
		if err := logTo((&state.Dir{Root: root}).AgentFile(name, state.SupervisorLog)); err != nil {
			report(ctl.Ready{Error: err.Error()})
			return err
		}
	}
	s, err := openSupervisor(root, name)
	if err != nil {
		report(ctl.Ready{Error: err.Error()})
		return err
	}
	defer s.close()
	s.sigs = sigs

	if s.a.Want() == "down" {
		err := fmt.Errorf("agent %q was stopped before it started", name)
		s.finish(stream.Failed, "stopped before start", nil)
		report(ctl.Ready{Error: err.Error()})
		return err
	}
	if mode != ctl.StartNew {
		s.mu.Lock()
		s.status.Restarts++
		ev := stream.Event{Type: stream.TypeRestart, Attempt: s.status.Restarts, Reason: "agt restart"}
		if mode == ctl.StartFresh {
			ev.Reason = "agt restart --fresh"
		}
		s.appendLocked(&ev, time.Now())
		s.flushLocked()
		s.mu.Unlock()
	}
	g, err := s.start(mode)
	if err != nil {
		s.emitError(err.Error(), true)
		if errors.Is(err, errStoppedConnecting) {
			s.finish(stream.Stopped, "stop", nil)
		} else {
			s.finish(stream.Failed, "start", nil)
		}
		report(ctl.Ready{Error: err.Error()})
		return err
	}
	// The first status is in status.json when agt spawn returns: ps shows the agent.
	s.mu.Lock()
	s.syncStatusLocked(false)
	s.mu.Unlock()
	report(ctl.Ready{Spawned: g.spawned})

	b := backoff{
		Initial:     time.Duration(s.spec.RestartDelay),
		Max:         time.Duration(s.spec.RestartMaxDelay),
		Healthy:     time.Duration(s.spec.HealthyAfter),
		MaxRestarts: s.spec.MaxRestarts,
	}
	failures := 0
	e := s.run(sigs, g)
	for {
		e.survivors, e.spent = len(s.survivors) > 0, s.isOverBudget()
		e.stopped = e.stopped || e.exit != nil && s.a.Want() == "down"
		if e.exit != nil {
			e.ran = time.Since(g.started) // monotonic (R19)
			if ctl.Test.RanFor > 0 {
				e.ran = ctl.Test.RanFor
			}
		}
		d := decide(e, s.spec.Restart, b, failures, mrand.Float64())
		failures = d.failures
		if d.failed {
			s.failed(e.exit, e.failure)
		}
		switch d.do {
		case finishRun:
			if e.survivors {
				s.mu.Lock()
				s.status.Error = ctl.SurvivedSIGKILL(s.survivors)
				s.mu.Unlock()
			}
			s.finish(d.state, d.reason, e.exit)
			return nil
		case nextTurn:
			if g, err = s.conv.nextTurn(sigs, e.exit); err != nil {
				if err == errStopped {
					s.finish(stream.Stopped, "stop", nil)
				} else {
					s.finish(stream.Failed, "start", nil)
				}
				return nil
			}
			e = s.run(sigs, g)
		case restartRun:
			s.restarting(e.exit, e.failure, d.delay)
			if !s.pause(sigs, d.delay) || s.a.Want() == "down" {
				// A stop came while we waited (R6, R18): nothing runs, so nothing to kill.
				s.finish(stream.Stopped, "stop", nil)
				return nil
			}
			if g, err = s.start(ctl.StartResume); err != nil {
				// Could not start again (the binary is gone?): a failure like any other.
				s.emitError(err.Error(), false)
				if errors.Is(err, errStoppedConnecting) {
					s.finish(stream.Stopped, "stop", nil)
					return nil
				}
				e = runEnd{startErr: err.Error()}
				continue
			}
			e = s.run(sigs, g)
		}
	}
}

// memoryLimit is the supervisor's soft memory limit (runtime/debug.SetMemoryLimit).
const memoryLimit = 64 << 20

// signals are the supervisor's own: SIGTERM asks for a stop, SIGCHLD says a child exited.
type signals struct {
	term, chld <-chan os.Signal
}

// failed records why a run failed: the agent's own one line, and when the session it was to
// resume does not exist, that the next start is fresh.
func (s *supervisor) failed(exit *stream.Exit, f stream.Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status.Error = f.Message
	if f.Class == stream.ClassSession && s.status.SessionID != "" {
		ev := stream.Event{Type: stream.TypeError, Source: stream.SourceSupervisor,
			Message: fmt.Sprintf("session %s cannot be resumed (%s); the next start is fresh, with the original prompt", s.status.SessionID, f.Message)}
		s.appendLocked(&ev, time.Now())
		s.flushLocked()
		s.status.Resumable = false
	}
}

// restarting records the end of a run that will be restarted after delay: the exit event, the
// restarting state, the restart event and the count in the status.
func (s *supervisor) restarting(exit *stream.Exit, f stream.Failure, delay time.Duration) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	reason := "start failed"
	if exit != nil {
		s.recordExitLocked(exit, now)
		_, reason = endOf(exit, f)
		if reason == "" {
			reason = "exited" // restart=always
		}
	}
	s.status.Restarts++
	s.setStateLocked(stream.Restarting, reason, now)
	ev := stream.Event{Type: stream.TypeRestart, Attempt: s.status.Restarts, DelayMS: delay.Milliseconds(), Reason: reason}
	s.appendLocked(&ev, now)
	s.writeStatusLocked()
}
