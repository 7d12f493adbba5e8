package supervisor

import (
	"sync"
	"testing"
	"time"

	"agt/spawn/ctl"
	"agt/state"
	"agt/stream"
)

// statusOnDisk is what status.json says.
func statusOnDisk(t *testing.T, s *supervisor) *state.Status {
	t.Helper()
	st, err := s.a.ReadStatus()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestStatusBeforeStateEvent: a change of state reaches status.json before its state event
// reaches the log, however slow the disk: whoever reads the state in the log finds it in the
// status too. Events appended meanwhile wait with it.
func TestStatusBeforeStateEvent(t *testing.T) {
	s := newTestSupervisor(t, state.Spec{Kind: "exec", Argv: []string{"x"}})
	release := make(chan struct{})
	var once sync.Once
	let := func() { once.Do(func() { close(release) }) }
	entered := make(chan struct{}, 16)
	ctl.Test.SlowStatus = func() {
		entered <- struct{}{}
		<-release
	}
	t.Cleanup(func() { let(); ctl.Test.SlowStatus = nil })

	s.mu.Lock()
	s.setStateLocked(stream.Running, "", time.Now())
	s.writeStatusLocked()
	ev := stream.Event{Type: stream.TypeOutput, Line: "after the change"}
	s.appendLocked(&ev, time.Now())
	s.flushLocked()
	s.mu.Unlock()
	<-entered // the write is under way, and stuck
	if evs := events(t, s, ""); len(evs) != 0 {
		t.Fatalf("the log has %d events while the status that holds them is being written", len(evs))
	}
	let()
	waitFor(t, "the state event in the log", func() bool { return len(events(t, s, stream.TypeState)) == 1 })
	if st := statusOnDisk(t, s); st.State != stream.Running {
		t.Fatalf("status.json says %s", st.State)
	}
	if out := events(t, s, stream.TypeOutput); len(out) != 1 {
		t.Fatalf("the output event: %v", out)
	}
}

// TestStatusWrittenAgain: a status the disk refuses is written again, the newest one, until
// the disk takes it; meanwhile the events still go to the log once the write was tried.
func TestStatusWrittenAgain(t *testing.T) {
	s := newTestSupervisor(t, state.Spec{Kind: "exec", Argv: []string{"x"}})
	full := make(chan bool, 1)
	full <- true
	ctl.Test.DiskFull = func() bool {
		f := <-full
		full <- f
		return f
	}
	t.Cleanup(func() { ctl.Test.DiskFull = nil })
	set := func(f bool) { <-full; full <- f }

	s.mu.Lock()
	s.status.Turns = 1
	s.writeStatusLocked()
	s.syncStatusLocked(false) // tried, and refused
	failing := s.sw.failing != nil
	s.status.Turns = 2
	s.writeStatusLocked()
	s.mu.Unlock()
	if !failing {
		t.Fatal("the refused write is not noted")
	}
	set(false)
	waitFor(t, "status.json to be written", func() bool {
		st, err := s.a.ReadStatus()
		return err == nil && st.Turns == 2
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	s.syncStatusLocked(true)
	if s.sw.failing != nil || s.sw.next != nil {
		t.Fatalf("the writer still fails (%v) or holds a status", s.sw.failing)
	}
}
