package supervisor

import (
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"agt/pids"
	"agt/spawn/ctl"
	"agt/stream"
)

// tree is every process that belongs to the agent: its group, the supervisor's descendants,
// and whatever carries its AGT_INSTANCE.
func (s *supervisor) tree() pids.Tree {
	return pids.Tree{
		Leader:    s.leader,
		Group:     s.leader.PID,
		Root:      os.Getpid(),
		Env:       "AGT_INSTANCE=" + s.instance,
		GroupOnly: ctl.Test.GroupKillOnly,
		Walk:      true, // we are the subreaper every member descends from
		Nested:    ctl.NestedSupervisor,
		Spared:    s.hooks.pids,
		Cgroup:    s.cgroup.agentCgroup(),
	}
}

// run is the main loop of one generation: it waits for the agent's exit (from wait, never
// from stdout EOF), stop requests and silence deadlines. It returns once nothing of the
// generation is left, with how the agent ended and whether a stop was asked for.
func (s *supervisor) run(sigs signals, g *generation) runEnd {
	var (
		exit      *stream.Exit
		failure   stream.Failure
		stopping  bool
		graceEnd  <-chan time.Time
		graceAt   time.Time
		grace     *time.Timer
		due       = time.NewTimer(time.Hour)
		flush     = time.NewTimer(time.Hour)
		flushArmd bool
	)
	defer due.Stop()
	defer flush.Stop()
	// Without dnotify (a kernel built without it), the removal of the agent's directory is
	// noticed by a check every few seconds instead.
	var goneCheck <-chan time.Time
	if s.gone == nil {
		t := time.NewTicker(goneCheckEvery)
		defer t.Stop()
		goneCheck = t.C
	}
	arm := func() {
		s.mu.Lock()
		when := s.machine.Due(s.snap)
		s.mu.Unlock()
		if when.IsZero() {
			due.Stop()
			return
		}
		due.Reset(s.dueIn(when))
	}
	arm()
	stop := func(reason string) {
		if stopping {
			// Another request can bring the kill forward, never put it off.
			if at := s.stopDeadline(time.Now(), false); at.Before(graceAt) {
				graceAt = at
				grace.Reset(time.Until(at))
			}
			return
		}
		stopping = true
		s.wantDown() // a plain SIGTERM is a stop too
		graceAt = s.stopDeadline(time.Now(), true)
		s.mu.Lock()
		s.conv.stoppingLocked(time.Now()) // before the signal
		s.setStateLocked(stream.Stopping, reason, time.Now())
		s.writeStatusLocked()
		s.mu.Unlock()
		s.tree().Signal(syscall.SIGTERM)
		grace = time.NewTimer(time.Until(graceAt))
		graceEnd = grace.C
	}
	recordGone := s.recordGone
	removed := func() {
		fmt.Fprintf(os.Stderr, "agt supervise %s: %s was removed or moved away; stopping the agent\n", s.spec.Name, s.a.Dir)
		stop("run directory removed")
	}
	for exit == nil {
		select {
		case <-sigs.term:
			stop("stop")
		case <-s.budgetC:
			s.budgetC = nil // once
			stop("budget")
		case <-sigs.chld:
			exit = s.reap()
		case <-graceEnd:
			members, _ := s.tree().Members()
			ctl.Kill(members)
			s.cgroup.killAgent()
		case <-goneCheck:
			if s.lock.Check() != nil && !stopping {
				removed()
			}
		case <-s.gone:
			s.gone = nil
			removed()
		case <-recordGone:
			recordGone = nil
			if !stopping {
				removed()
			}
		case <-due.C:
			s.mu.Lock()
			if s.tickLocked(s.now()) {
				s.writeStatusLocked()
			}
			s.mu.Unlock()
			arm()
		case <-s.kick:
			arm()
			if !flushArmd {
				flush.Reset(time.Second)
				flushArmd = true
			}
		case <-flush.C:
			flushArmd = false
			s.mu.Lock()
			if s.dirty {
				s.writeStatusLocked()
			}
			s.mu.Unlock()
		}
	}

	// The agent is gone. Whatever it left behind goes too: within the stop grace when
	// stopping, else after a short grace, then SIGKILL; nothing is left when we write the end.
	deadline := time.Now().Add(ctl.CleanupGrace)
	if stopping {
		deadline = graceAt
	}
	if s.sweep(sigs, graceEnd, deadline, stopping) {
		stopping = true
	}
	s.drain(g)

	s.mu.Lock()
	now := time.Now()
	s.endPermissionsLocked(now)
	s.events, failure = s.dec.End(s.events[:0], *exit)
	for i := range s.events {
		s.recordLocked(&s.events[i]) // a turn's result that only the end reveals (opencode)
		s.appendLocked(&s.events[i], now)
	}
	s.flushLocked()
	turnEnded := s.conv.endedLocked(*exit, failure)
	s.mu.Unlock()

	return runEnd{exit: exit, failure: failure, stopped: stopping, turnEnded: turnEnded}
}

// reap collects every child that has exited (adopted orphans included: we are their subreaper)
// and returns the agent's exit once it is among them. It is the only place that waits.
func (s *supervisor) reap() *stream.Exit {
	var exit *stream.Exit
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
			return exit
		}
		if s.hooks.reaped(pid, ws) {
			continue
		}
		s.mu.Lock()
		leader := s.alive && pid == s.leader.PID
		if leader {
			s.alive = false // reaped: its pid may be anyone's from now on
		}
		s.mu.Unlock()
		if !leader {
			continue
		}
		e := stream.Exit{Code: ws.ExitStatus()}
		if ws.Signaled() {
			e = stream.Exit{Code: -1, Signal: unix.SignalName(ws.Signal())}
		}
		exit = &e
	}
}

// stopDeadline is when a stop request that came at now wants the agent killed: after the
// grace agt stop asked for (stop_timeout), else, for the first request, after the grace the
// agent was spawned with; a later request that asks for none (a plain second SIGTERM) wants
// it at once. Two stops that race both signal: the second one asks for a grace too, and so
// does not cut the first one's short.
func (s *supervisor) stopDeadline(now time.Time, first bool) time.Time {
	if g, ok := s.a.StopGrace(); ok {
		return now.Add(g)
	}
	if first {
		return now.Add(time.Duration(s.spec.StopTimeout))
	}
	return now
}

// sweep signals what is left of the agent's tree until nothing is: SIGTERM first, SIGKILL once
// the deadline passes (or the stop grace ends), reaping adopted children as they exit.
func (s *supervisor) sweep(sigs signals, graceEnd <-chan time.Time, deadline time.Time, stopAsked bool) bool {
	t := s.tree()
	t.Signal(syscall.SIGTERM)
	killed := false
	// Each look costs a scan of /proc: look often at first (most processes exit at once on
	// SIGTERM), then less and less, up to five times a second.
	wait := 10 * time.Millisecond
	tick := time.NewTimer(wait)
	defer tick.Stop()
	for {
		s.reap()
		members, err := t.Members()
		if err == nil && len(members) == 0 {
			return stopAsked
		}
		if !time.Now().Before(deadline) {
			// Past the deadline every look kills what it sees: a process forked since the
			// last look gets its SIGKILL too, and only what outlives it is a survivor.
			if err != nil {
				members, _ = t.Members()
			}
			ctl.Kill(members) // those just seen: no second scan
			s.cgroup.killAgent()
			killed = true
		}
		if killed && time.Now().After(deadline.Add(ctl.SurvivorWait)) {
			s.survivors = members
			s.emitError(ctl.SurvivedSIGKILL(members), false)
			return stopAsked
		}
		select {
		case <-sigs.term:
			// A stop now ends the agent for good; a later one can bring the kill forward.
			if at := s.stopDeadline(time.Now(), false); stopAsked && at.Before(deadline) {
				deadline = at
			}
			stopAsked = true
		case <-sigs.chld:
		case <-graceEnd:
			deadline = time.Now()
		case <-tick.C:
			if wait < 200*time.Millisecond {
				wait *= 2
			}
			tick.Reset(wait)
		}
	}
}

// drain waits a moment for the readers to reach EOF. Once the tree is gone nobody holds the
// pipes, so this returns at once unless a process outside the tree kept a copy.
func (s *supervisor) drain(g *generation) {
	select {
	case <-g.readers:
	case <-time.After(time.Second):
		s.emitError("agent output still open after exit; stopped reading", false)
		// Closing our ends ends the readers, so they cannot feed the next run's decoder.
		g.outR.Close()
		g.errR.Close()
		<-g.readers
	}
}

// wantDown makes want down for a stop that came as a plain SIGTERM. One that agt stop asked
// for wrote it already, and it is not written again: agt restart tells by the file whether
// another stop came while it stopped the agent.
func (s *supervisor) wantDown() {
	if s.a.Want() != "down" {
		s.a.SetWant("down")
	}
}
