package supervisor

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"

	"agt/spawn/ctl"
	"agt/state"
	"agt/stream"
)

// The status writer. status.json is written (and fsynced) by a goroutine of its own, never
// under mu: a slow or full disk must not hold up the output readers, and through them the
// agent's writes (R23). A live state change still reaches status.json before its state event
// reaches the log: the events appended after it wait (unless they grow past maxPending) until
// the status holding it is written, or has failed once. A status that cannot be written is
// written again, the newest one, until the disk takes it: the truth reaches status.json as
// soon as the disk allows, however long the agent stays in one state (R4).

// statusWriter is the supervisor's part of the writer; mu guards it.
type statusWriter struct {
	next    *state.Status // the newest status not yet written; nil when status.json is current
	gen     uint64        // generation of next, counting every status handed over
	tried   uint64        // the newest generation tried: the events before it may go to the log
	failing error         // the last write's error, while writes fail
	// failingSince is when writes began to fail.
	failingSince time.Time
	wake         chan struct{} // a new status to write
	progress     *sync.Cond    // on mu: a write was tried
}

// startStatusWriter starts the status writer, for the life of the process.
func (s *supervisor) startStatusWriter() {
	s.sw.wake = make(chan struct{}, 1)
	s.recordGone = make(chan struct{})
	s.sw.progress = sync.NewCond(&s.mu)
	go s.writeStatuses()
}

// writeStatusLocked hands the status to the status writer; the events appended from now on
// are written to the log once it has tried to write it.
func (s *supervisor) writeStatusLocked() {
	s.status.Updated = time.Now()
	s.status.Activity, s.status.Doing = s.snap.Activity, s.snap.Doing
	if stream.IsFinal(s.status.State) || s.status.State == stream.Restarting {
		s.status.Doing = "" // its process is gone, and the tool it was in with it
	}
	st := s.status
	st.History = slices.Clone(st.History)
	s.dirty = false
	s.sw.next = &st
	s.sw.gen++
	select {
	case s.sw.wake <- struct{}{}:
	default:
	}
}

// logHeldLocked reports whether the pending events wait for a status write.
func (s *supervisor) logHeldLocked() bool {
	return s.sw.tried < s.sw.gen && !s.final && len(s.pending) < maxPending
}

// writeStatuses is the status writer's goroutine.
func (s *supervisor) writeStatuses() {
	w := &s.sw
	const firstRetry, maxRetry = 50 * time.Millisecond, 2 * time.Second
	retry := firstRetry
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		s.mu.Lock()
		st, gen, failing := w.next, w.gen, w.failing != nil
		s.mu.Unlock()
		if st == nil {
			<-w.wake
			continue
		}
		if failing {
			// The disk refused the last try: the next comes after a pause, or sooner with a
			// newer status, and is the newest one.
			timer.Reset(retry)
			retry = min(2*retry, maxRetry)
			select {
			case <-w.wake:
				timer.Stop()
			case <-timer.C:
			}
			s.mu.Lock()
			st, gen = w.next, w.gen
			s.mu.Unlock()
			if st == nil {
				continue
			}
		}
		err := s.writeStatusFile(st)
		s.mu.Lock()
		w.tried = max(w.tried, gen)
		if err != nil && w.failing == nil {
			w.failingSince = time.Now()
		}
		if err != nil && s.final {
			s.lock.EndKnown() // the disk refuses the end: readers ask for it (state/endlock.go)
		}
		if err != nil && s.lock.Check() != nil {
			// The record was removed, or the run directory moved away (R10): there is nowhere
			// to write to, and the main loop stops the agent.
			s.recordGoneOnce.Do(func() { close(s.recordGone) })
			w.next, w.failing = nil, nil
		} else if err != nil && s.final && !healable(err) && time.Since(w.failingSince) > giveUpAfter {
			// Not a full disk, and no better after a minute: the end stays in the log, which
			// agt reap reads back.
			fmt.Fprintf(os.Stderr, "agt supervise %s: %v; giving up on status.json\n", s.spec.Name, err)
			w.next, w.failing = nil, nil
		} else if err != nil {
			if w.failing == nil {
				fmt.Fprintf(os.Stderr, "agt supervise %s: %v; writing it again until the disk takes it\n", s.spec.Name, err)
			}
			w.failing = err
		} else {
			if w.failing != nil {
				fmt.Fprintf(os.Stderr, "agt supervise %s: status written again\n", s.spec.Name)
			}
			w.failing, retry = nil, firstRetry
			if w.gen == gen {
				w.next = nil
			}
		}
		s.flushLocked()
		w.progress.Broadcast()
		s.mu.Unlock()
	}
}

// writeStatusFile writes st to status.json, unless a test says the disk is slow or full.
func (s *supervisor) writeStatusFile(st *state.Status) error {
	if ctl.Test.SlowStatus != nil {
		ctl.Test.SlowStatus()
	}
	if ctl.Test.DiskFull != nil && ctl.Test.DiskFull() {
		return fmt.Errorf("write status of %s: %w", s.spec.Name, syscall.ENOSPC)
	}
	return s.lock.WriteStatus(st)
}

// syncStatusLocked waits until the status writer has tried the newest status handed over, or,
// when written is set, until status.json holds it, however long the disk refuses it.
func (s *supervisor) syncStatusLocked(written bool) {
	for gen := s.sw.gen; s.sw.tried < gen || written && s.sw.next != nil; {
		s.sw.progress.Wait()
	}
}

// syncStatusUntilLocked is syncStatusLocked(false), waiting until by at most: an answer that
// must be on time goes before a slow disk.
func (s *supervisor) syncStatusUntilLocked(by time.Time) {
	gen := s.sw.gen
	if s.sw.tried >= gen {
		return
	}
	late := false
	t := time.AfterFunc(time.Until(by), func() {
		s.mu.Lock()
		late = true
		s.sw.progress.Broadcast()
		s.mu.Unlock()
	})
	defer t.Stop()
	for s.sw.tried < gen && !late {
		s.sw.progress.Wait()
	}
}

// giveUpAfter is how long the end is written again against an error that no freed space cures.
const giveUpAfter = time.Minute

// healable reports whether a write error is one that time cures, as space is freed: the end is
// written again until it lands, however long that takes.
func healable(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EFBIG)
}
