package stream

import "time"

// States of DESIGN.md. Lost is derived by readers and never written by a supervisor.
const (
	Starting   = "starting"
	Running    = "running"
	Waiting    = "waiting"
	Stale      = "stale"
	Restarting = "restarting"
	Stopping   = "stopping"
	Stopped    = "stopped"
	Exited     = "exited"
	Failed     = "failed"
	Lost       = "lost"
)

// Reasons a state carries.
const (
	ReasonInput      = "input"
	ReasonPermission = "permission"
	ReasonQuiet      = "quiet"
)

// IsFinal reports whether state is one an agent never leaves.
func IsFinal(state string) bool {
	return state == Stopped || state == Exited || state == Failed
}

// Known reports whether state is one of the states above.
func Known(state string) bool {
	switch state {
	case Starting, Running, Waiting, Stale, Restarting, Stopping, Stopped, Exited, Failed, Lost:
		return true
	}
	return false
}

// Machine is the pure transition function from events and silence to states. The clock is
// always passed in, so it is tested table-driven without sleeping.
type Machine struct {
	IdleAfter  time.Duration // silence after which a live agent is waiting (quiet)
	StaleAfter time.Duration // time in waiting after which it is stale
	InputOpen  bool          // the agent reads more input after a finished turn
}

// Snapshot is what the machine knows: the state, why, since when, and the last sign of life.
type Snapshot struct {
	State    string
	Reason   string
	Since    time.Time
	Activity time.Time
}

func (s Snapshot) to(state, reason string, now time.Time) Snapshot {
	if s.State == state && s.Reason == reason {
		return s
	}
	s.State, s.Reason, s.Since = state, reason, now
	return s
}

// live reports whether events and silence can move the state: not before the process started,
// not while restarting or stopping, never out of a final state.
func live(state string) bool {
	switch state {
	case Starting, Running, Waiting, Stale:
		return true
	}
	return false
}

// Event folds one event of the agent's stream, seen at now, into s.
func (m Machine) Event(s Snapshot, ev *Event, now time.Time) Snapshot {
	if !live(s.State) {
		return s
	}
	s.Activity = now
	switch ev.Type {
	case TypePermission:
		return s.to(Waiting, ReasonPermission, now)
	case TypeResult:
		if m.InputOpen {
			return s.to(Waiting, ReasonInput, now)
		}
		return s.to(Running, "", now)
	case TypeSession, TypeText, TypeToolUse, TypeToolResult, TypeOutput, TypeStderr, TypeUnparsed:
		return s.to(Running, "", now)
	}
	return s
}

// Tick applies the silence-driven transitions due at now, each as of when it fell due (Due
// says when; the two cannot disagree).
func (m Machine) Tick(s Snapshot, now time.Time) Snapshot {
	for due := m.Due(s); !due.IsZero() && !now.Before(due); due = m.Due(s) {
		if s.State == Waiting {
			s = s.to(Stale, s.Reason, due)
		} else {
			s = s.to(Waiting, ReasonQuiet, due)
		}
	}
	return s
}

// Due returns when the next silence-driven transition falls due, or the zero time when none will.
// The supervisor sets one timer for it instead of ticking.
func (m Machine) Due(s Snapshot) time.Time {
	switch {
	case (s.State == Running || s.State == Starting) && m.IdleAfter > 0:
		return s.Activity.Add(m.IdleAfter)
	case s.State == Waiting && m.StaleAfter > 0:
		return s.Since.Add(m.StaleAfter)
	}
	return time.Time{}
}
