package stream

import (
	"testing"
	"time"
)

func TestMachine(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	m := Machine{IdleAfter: 5 * time.Second, StaleAfter: 10 * time.Minute}
	open := m
	open.InputOpen = true
	snap := func(state, reason string, since, activity time.Duration) Snapshot {
		return Snapshot{State: state, Reason: reason, Since: at(since), Activity: at(activity)}
	}
	type step struct {
		ev  *Event        // nil: a tick
		now time.Duration // time of the step
	}
	tests := []struct {
		name string
		m    Machine
		from Snapshot
		step step
		want Snapshot
	}{
		{"output starts running", m, snap(Starting, "", 0, 0), step{&Event{Type: TypeOutput}, time.Second},
			snap(Running, "", time.Second, time.Second)},
		{"session starts running", m, snap(Starting, "", 0, 0), step{&Event{Type: TypeSession}, time.Second},
			snap(Running, "", time.Second, time.Second)},
		{"output keeps running, since unchanged", m, snap(Running, "", 0, 0), step{&Event{Type: TypeText}, 3 * time.Second},
			snap(Running, "", 0, 3*time.Second)},
		{"permission waits", m, snap(Running, "", 0, 0), step{&Event{Type: TypePermission}, time.Second},
			snap(Waiting, ReasonPermission, time.Second, time.Second)},
		{"result with input open waits for input", open, snap(Running, "", 0, 0), step{&Event{Type: TypeResult}, time.Second},
			snap(Waiting, ReasonInput, time.Second, time.Second)},
		{"result without input keeps running until exit", m, snap(Running, "", 0, 0), step{&Event{Type: TypeResult}, time.Second},
			snap(Running, "", 0, time.Second)},
		{"output after waiting runs again", m, snap(Waiting, ReasonQuiet, 0, 0), step{&Event{Type: TypeOutput}, time.Minute},
			snap(Running, "", time.Minute, time.Minute)},
		{"stale agent that speaks runs", m, snap(Stale, ReasonQuiet, 0, 0), step{&Event{Type: TypeToolUse}, time.Hour},
			snap(Running, "", time.Hour, time.Hour)},
		{"exit events do not move states", m, snap(Running, "", 0, 0), step{&Event{Type: TypeExit}, time.Second},
			snap(Running, "", 0, time.Second)},
		{"nothing moves a final state", m, snap(Exited, "", 0, 0), step{&Event{Type: TypeOutput}, time.Second},
			snap(Exited, "", 0, 0)},
		{"nothing moves stopping", m, snap(Stopping, "stop", 0, 0), step{&Event{Type: TypeOutput}, time.Second},
			snap(Stopping, "stop", 0, 0)},
		{"quiet before idle_after: still running", m, snap(Running, "", 0, 0), step{nil, 4 * time.Second},
			snap(Running, "", 0, 0)},
		{"quiet at idle_after: waiting", m, snap(Running, "", 0, 0), step{nil, 5 * time.Second},
			snap(Waiting, ReasonQuiet, 5*time.Second, 0)},
		{"silent from the start: waiting", m, snap(Starting, "", 0, 0), step{nil, 6 * time.Second},
			snap(Waiting, ReasonQuiet, 5*time.Second, 0)},
		{"waiting past stale_after: stale, reason kept", m, snap(Waiting, ReasonPermission, 0, 0), step{nil, 10 * time.Minute},
			snap(Stale, ReasonPermission, 10*time.Minute, 0)},
		{"a late tick goes through waiting to stale", m, snap(Running, "", 0, 0), step{nil, time.Hour},
			snap(Stale, ReasonQuiet, 5*time.Second+10*time.Minute, 0)},
		{"no idle_after: never quiet", Machine{}, snap(Running, "", 0, 0), step{nil, time.Hour},
			snap(Running, "", 0, 0)},
		{"ticks leave final states alone", m, snap(Failed, "exit code 1", 0, 0), step{nil, time.Hour},
			snap(Failed, "exit code 1", 0, 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got Snapshot
			if tt.step.ev != nil {
				got = tt.m.Event(tt.from, tt.step.ev, at(tt.step.now))
			} else {
				got = tt.m.Tick(tt.from, at(tt.step.now))
			}
			if got != tt.want {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestMachineDue(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := Machine{IdleAfter: 5 * time.Second, StaleAfter: 10 * time.Minute}
	tests := []struct {
		s    Snapshot
		want time.Time
	}{
		{Snapshot{State: Running, Activity: t0}, t0.Add(5 * time.Second)},
		{Snapshot{State: Starting, Activity: t0}, t0.Add(5 * time.Second)},
		{Snapshot{State: Waiting, Since: t0}, t0.Add(10 * time.Minute)},
		{Snapshot{State: Stale, Since: t0}, time.Time{}},
		{Snapshot{State: Stopped, Since: t0}, time.Time{}},
	}
	for _, tt := range tests {
		if got := m.Due(tt.s); !got.Equal(tt.want) {
			t.Errorf("Due(%s) = %v, want %v", tt.s.State, got, tt.want)
		}
	}
}

func TestIsFinal(t *testing.T) {
	for state, want := range map[string]bool{Stopped: true, Exited: true, Failed: true, Running: false, Lost: false, Stale: false} {
		if IsFinal(state) != want {
			t.Errorf("IsFinal(%s) = %v", state, !want)
		}
	}
}
