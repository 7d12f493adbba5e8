package stream

import (
	"testing"
	"time"
)

func TestMachine(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	turns := Machine{Mode: Turns, StaleAfter: 10 * time.Minute, StallAfter: 5 * time.Minute}
	open := turns
	open.InputOpen = true
	plain := Machine{Mode: Plain, StaleAfter: 10 * time.Minute}
	term := Machine{Mode: Terminal, IdleAfter: 5 * time.Second, StaleAfter: 10 * time.Minute}
	snap := func(state, reason string, since, activity time.Duration) Snapshot {
		return Snapshot{State: state, Reason: reason, Since: at(since), Activity: at(activity)}
	}
	inTurn := func(s Snapshot) Snapshot { s.Open = true; return s }
	stalling := term
	stalling.StallAfter = 5 * time.Minute
	progressed := func(s Snapshot, d time.Duration) Snapshot { s.Progress = at(d); return s }
	doing := func(s Snapshot, tool string) Snapshot { s.Doing = tool; return s }
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
		// A structured agent follows its turns.
		{"session starts running", turns, inTurn(snap(Starting, "", 0, 0)), step{&Event{Type: TypeSession}, time.Second},
			inTurn(snap(Running, "", time.Second, time.Second))},
		{"text keeps running, since unchanged", turns, inTurn(snap(Running, "", 0, 0)), step{&Event{Type: TypeText}, 3 * time.Second},
			inTurn(snap(Running, "", 0, 3*time.Second))},
		{"a tool in flight is remembered", turns, inTurn(snap(Running, "", 0, 0)), step{&Event{Type: TypeToolUse, Tool: "Bash"}, time.Second},
			doing(inTurn(snap(Running, "", 0, time.Second)), "Bash")},
		{"its result forgets it", turns, doing(inTurn(snap(Running, "", 0, 0)), "Bash"), step{&Event{Type: TypeToolResult}, time.Second},
			inTurn(snap(Running, "", 0, time.Second))},
		{"silent turn before stall_after: running", turns, inTurn(snap(Running, "", 0, 0)), step{nil, 4 * time.Minute},
			inTurn(snap(Running, "", 0, 0))},
		{"silent turn at stall_after: stale (stalled)", turns, doing(inTurn(snap(Running, "", 0, 0)), "Bash"), step{nil, 5 * time.Minute},
			doing(inTurn(snap(Stale, ReasonStalled, 5*time.Minute, 0)), "Bash")},
		{"silent start of a turn stalls too", turns, inTurn(snap(Starting, "", 0, 0)), step{nil, time.Hour},
			inTurn(snap(Stale, ReasonStalled, 5*time.Minute, 0))},
		{"a stalled turn that speaks runs", turns, inTurn(snap(Stale, ReasonStalled, 0, 0)), step{&Event{Type: TypeText}, time.Hour},
			inTurn(snap(Running, "", time.Hour, time.Hour))},
		{"a retry notice: running (retrying)", turns, inTurn(snap(Running, "", 0, 0)), step{&Event{Type: TypeError, Attempt: 2}, time.Second},
			inTurn(snap(Running, ReasonRetrying, time.Second, time.Second))},
		{"output after a retry: running", turns, inTurn(snap(Running, ReasonRetrying, 0, 0)), step{&Event{Type: TypeText}, time.Second},
			inTurn(snap(Running, "", time.Second, time.Second))},
		{"a warning is life, not a state", turns, inTurn(snap(Running, "", 0, 0)), step{&Event{Type: TypeError}, time.Second},
			inTurn(snap(Running, "", 0, time.Second))},
		{"stderr is life, not a turn", open, snap(Waiting, ReasonInput, 0, 0), step{&Event{Type: TypeStderr}, time.Second},
			snap(Waiting, ReasonInput, 0, time.Second)},
		{"permission waits", turns, inTurn(snap(Running, "", 0, 0)), step{&Event{Type: TypePermission}, time.Second},
			inTurn(snap(Waiting, ReasonPermission, time.Second, time.Second))},
		{"a plan to approve waits (plan)", turns, inTurn(snap(Running, "", 0, 0)), step{&Event{Type: TypePermission, Tool: PlanTool}, time.Second},
			inTurn(snap(Waiting, ReasonPlan, time.Second, time.Second))},
		{"a permission already decided asks nobody", turns, inTurn(snap(Running, "", 0, 0)), step{&Event{Type: TypePermission, Decision: "deny"}, time.Second},
			inTurn(snap(Running, "", 0, time.Second))},
		{"work after a permission runs again", turns, inTurn(snap(Waiting, ReasonPermission, 0, 0)), step{&Event{Type: TypeToolResult}, time.Minute},
			inTurn(snap(Running, "", time.Minute, time.Minute))},
		{"a waiting permission does not stall", turns, inTurn(snap(Waiting, ReasonPermission, 0, 0)), step{nil, 9 * time.Minute},
			inTurn(snap(Waiting, ReasonPermission, 0, 0))},
		{"result with input open waits for input", open, inTurn(snap(Running, "", 0, 0)), step{&Event{Type: TypeResult}, time.Second},
			snap(Waiting, ReasonInput, time.Second, time.Second)},
		{"result without input keeps running until exit", turns, inTurn(snap(Running, "", 0, 0)), step{&Event{Type: TypeResult}, time.Second},
			snap(Running, "", 0, time.Second)},
		{"after the last result silence is no stall", turns, snap(Running, "", 0, 0), step{nil, time.Hour},
			snap(Running, "", 0, 0)},
		{"waiting past stale_after: stale, reason kept", open, snap(Waiting, ReasonInput, 0, 0), step{nil, 10 * time.Minute},
			snap(Stale, ReasonInput, 10*time.Minute, 0)},
		{"a begun turn runs", open, snap(Waiting, ReasonInput, 0, 0), step{nil, 0},
			snap(Waiting, ReasonInput, 0, 0)},
		// A plain command is running while it lives.
		{"output starts running", plain, snap(Starting, "", 0, 0), step{&Event{Type: TypeOutput}, time.Second},
			snap(Running, "", time.Second, time.Second)},
		{"a silent command keeps running", plain, snap(Running, "", 0, 0), step{nil, 24 * time.Hour},
			snap(Running, "", 0, 0)},
		{"a silent command that never spoke is starting", plain, snap(Starting, "", 0, 0), step{nil, 24 * time.Hour},
			snap(Starting, "", 0, 0)},
		// A terminal agent can wait for a person without saying so.
		{"terminal: quiet before idle_after: still running", term, snap(Running, "", 0, 0), step{nil, 4 * time.Second},
			snap(Running, "", 0, 0)},
		{"terminal: quiet at idle_after: waiting", term, snap(Running, "", 0, 0), step{nil, 5 * time.Second},
			snap(Waiting, ReasonQuiet, 5*time.Second, 0)},
		{"terminal: a late tick goes through waiting to stale", term, snap(Running, "", 0, 0), step{nil, time.Hour},
			snap(Stale, ReasonQuiet, 5*time.Second+10*time.Minute, 0)},
		{"terminal: output after waiting runs again", term, snap(Waiting, ReasonQuiet, 0, 0), step{&Event{Type: TypeOutput}, time.Minute},
			progressed(snap(Running, "", time.Minute, time.Minute), time.Minute)},
		// Its screen says nothing new for stall_after, however it redraws: stalled.
		{"terminal: a spinner that turns past stall_after: stale (stalled)", stalling, progressed(snap(Running, "", 0, 4*time.Minute+58*time.Second), 0), step{nil, 5 * time.Minute},
			progressed(snap(Stale, ReasonStalled, 5*time.Minute, 4*time.Minute+58*time.Second), 0)},
		{"terminal: quiet comes before a stall", stalling, progressed(snap(Running, "", 0, time.Minute), 0), step{nil, time.Minute + 5*time.Second},
			progressed(snap(Waiting, ReasonQuiet, time.Minute+5*time.Second, time.Minute), 0)},
		{"terminal: retrying never stalls", stalling, progressed(snap(Running, ReasonRetrying, 0, 9*time.Minute), 0), step{nil, 9*time.Minute + time.Second},
			progressed(snap(Running, ReasonRetrying, 0, 9*time.Minute), 0)},
		// What no event or silence moves.
		{"exit events do not move states", turns, inTurn(snap(Running, "", 0, 0)), step{&Event{Type: TypeExit}, time.Second},
			inTurn(snap(Running, "", 0, time.Second))},
		{"nothing moves a final state", turns, snap(Exited, "", 0, 0), step{&Event{Type: TypeOutput}, time.Second},
			snap(Exited, "", 0, 0)},
		{"nothing moves stopping", turns, snap(Stopping, "stop", 0, 0), step{&Event{Type: TypeOutput}, time.Second},
			snap(Stopping, "stop", 0, 0)},
		{"no stall_after: never stalled", Machine{Mode: Turns}, inTurn(snap(Running, "", 0, 0)), step{nil, time.Hour},
			inTurn(snap(Running, "", 0, 0))},
		{"ticks leave final states alone", turns, snap(Failed, "exit code 1", 0, 0), step{nil, time.Hour},
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

func TestMachineBeginAndActive(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := Machine{Mode: Turns, InputOpen: true, StallAfter: time.Minute}
	s := m.Begin(Snapshot{State: Starting, Since: t0, Activity: t0}, t0)
	if s.State != Starting || !s.Open {
		t.Fatalf("Begin on a starting agent: %+v, want starting with a turn open", s)
	}
	s = m.Begin(Snapshot{State: Waiting, Reason: ReasonInput, Since: t0}, t0.Add(time.Second))
	if s.State != Running || s.Reason != "" || !s.Open || !s.Since.Equal(t0.Add(time.Second)) {
		t.Fatalf("Begin on a waiting agent: %+v, want running since the message", s)
	}
	if due := m.Due(s); !due.Equal(t0.Add(time.Second + time.Minute)) {
		t.Fatalf("a begun turn stalls at %v, want a minute after it began", due)
	}
	s = m.Tick(s, t0.Add(2*time.Minute))
	if s.State != Stale || s.Reason != ReasonStalled {
		t.Fatalf("silent begun turn: %+v, want stale (stalled)", s)
	}
	s = m.Active(s, t0.Add(3*time.Minute))
	if s.State != Running || !s.Activity.Equal(t0.Add(3*time.Minute)) {
		t.Fatalf("a line folded into no event revives a stalled turn: %+v", s)
	}
	if got := m.Begin(Snapshot{State: Stopping}, t0); got.State != Stopping || got.Open {
		t.Fatalf("Begin moved a stopping agent: %+v", got)
	}
}

func TestMachineDue(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	turns := Machine{Mode: Turns, StaleAfter: 10 * time.Minute, StallAfter: 5 * time.Minute}
	term := Machine{Mode: Terminal, IdleAfter: 5 * time.Second, StaleAfter: 10 * time.Minute}
	plain := Machine{Mode: Plain, IdleAfter: 5 * time.Second, StaleAfter: 10 * time.Minute}
	tests := []struct {
		m    Machine
		s    Snapshot
		want time.Time
	}{
		{turns, Snapshot{State: Running, Activity: t0, Open: true}, t0.Add(5 * time.Minute)},
		{turns, Snapshot{State: Starting, Activity: t0, Open: true}, t0.Add(5 * time.Minute)},
		{turns, Snapshot{State: Running, Activity: t0}, time.Time{}},
		{turns, Snapshot{State: Waiting, Since: t0}, t0.Add(10 * time.Minute)},
		{turns, Snapshot{State: Stale, Since: t0, Open: true}, time.Time{}},
		{term, Snapshot{State: Running, Activity: t0}, t0.Add(5 * time.Second)},
		{term, Snapshot{State: Starting, Activity: t0}, t0.Add(5 * time.Second)},
		{term, Snapshot{State: Waiting, Since: t0}, t0.Add(10 * time.Minute)},
		{plain, Snapshot{State: Running, Activity: t0}, time.Time{}},
		{plain, Snapshot{State: Starting, Activity: t0}, time.Time{}},
		{turns, Snapshot{State: Stopped, Since: t0}, time.Time{}},
	}
	for _, tt := range tests {
		if got := tt.m.Due(tt.s); !got.Equal(tt.want) {
			t.Errorf("mode %d: Due(%+v) = %v, want %v", tt.m.Mode, tt.s, got, tt.want)
		}
	}
}

// TestMachineScreen: a terminal agent's screen that says something new runs it; a redraw that
// says nothing new (a spinner, a clock, a blinking dot) is activity alone.
func TestMachineScreen(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := Machine{Mode: Terminal, IdleAfter: 5 * time.Second, StallAfter: time.Minute}
	s := Snapshot{State: Waiting, Reason: ReasonPermission, Since: t0}
	if got := m.Screen(s, t0.Add(time.Second), false); got.State != Waiting || got.Reason != ReasonPermission || !got.Activity.Equal(t0.Add(time.Second)) {
		t.Errorf("a blinking dot moved a waiting agent: %+v", got)
	}
	got := m.Screen(s, t0.Add(2*time.Second), true)
	if got.State != Running || got.Reason != "" || !got.Progress.Equal(t0.Add(2*time.Second)) {
		t.Errorf("new words left it %+v", got)
	}
	if due := m.Due(got); !due.Equal(t0.Add(7 * time.Second)) {
		t.Errorf("due %v, want idle_after after the words", due)
	}
	stalled := Snapshot{State: Stale, Reason: ReasonStalled, Since: t0, Progress: t0}
	if got := m.Screen(stalled, t0.Add(time.Hour), false); got.State != Stale {
		t.Errorf("a spinner woke a stalled agent: %+v", got)
	}
	if got := m.Screen(Snapshot{State: Stopping}, t0, true); got.State != Stopping {
		t.Errorf("a screen moved a stopping agent: %+v", got)
	}
}

func TestIsFinal(t *testing.T) {
	for state, want := range map[string]bool{Stopped: true, Exited: true, Failed: true, Running: false, Lost: false, Stale: false} {
		if IsFinal(state) != want {
			t.Errorf("IsFinal(%s) = %v", state, !want)
		}
	}
}
