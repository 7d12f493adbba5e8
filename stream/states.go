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
	ReasonInput      = "input"      // waiting: the turn is over and the agent reads more input
	ReasonPermission = "permission" // waiting: the agent asks for a decision
	ReasonPlan       = "plan"       // waiting: the agent asks to leave plan mode with its plan
	ReasonQuiet      = "quiet"      // waiting: a terminal agent has been silent for idle_after
	ReasonRetrying   = "retrying"   // running: the agent retries a failed model request
	ReasonStalled    = "stalled"    // stale: silent inside an open turn for stall_after
)

// PlanTool is the tool an agent in plan mode asks permission for to present its plan (Claude's):
// allowing it approves the plan, denying it with a message sends the plan back.
const PlanTool = "ExitPlanMode"

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

// Mode is how an agent's state follows what it does.
type Mode int

const (
	// Plain is a command that cannot take input: it is running from its start for as long as
	// it lives, however quiet.
	Plain Mode = iota
	// Turns is a structured agent: running from a prompt until the turn's result, however
	// silent; waiting only when it asks for permission or has finished a turn with its input
	// open; stale when a turn is silent for StallAfter.
	Turns
	// Terminal is an agent on a terminal, which can wait for a person without saying so: silence
	// for IdleAfter is taken for waiting (quiet).
	Terminal
)

// Machine is the pure transition function from events and silence to states. The clock is
// always passed in, so it is tested table-driven without sleeping.
type Machine struct {
	Mode       Mode
	InputOpen  bool          // Turns: the agent reads more input after a finished turn
	IdleAfter  time.Duration // Terminal: silence after which a live agent is waiting (quiet)
	StaleAfter time.Duration // time in waiting after which it is stale
	StallAfter time.Duration // Turns: silence inside an open turn after which it is stale (stalled)
	// Terminal: the screens that tell why a quiet agent waits (see Quiet); none: quiet.
	Prompts []Prompt
}

// Snapshot is what the machine knows: the state, why, since when, the last sign of life, whether
// a turn is open and the tool in flight.
type Snapshot struct {
	State    string
	Reason   string
	Since    time.Time
	Activity time.Time
	Open     bool   // Turns: a turn is under way (from its prompt to its result)
	Doing    string // the tool that has started and not yet returned, if any
	// Progress (Terminal) is when the agent's screen last said something new: a spinner that
	// turns, a clock that ticks or a dot that blinks is activity, not progress (Screen.Mark).
	Progress time.Time
	// Busy (Terminal): fallen quiet, its screen says it works (Judge); until it says
	// something new it can only stall.
	Busy bool
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

// Begin opens a turn at now: the agent was started with a prompt, resumed, or sent a message.
func (m Machine) Begin(s Snapshot, now time.Time) Snapshot {
	if !live(s.State) {
		return s
	}
	s.Activity, s.Open, s.Doing = now, true, ""
	if s.State == Starting {
		return s
	}
	return s.to(Running, "", now)
}

// Active records a sign of life at now that is no event of its own (a line the decoder folds
// away, such as a streamed token): it keeps a turn from counting as stalled.
func (m Machine) Active(s Snapshot, now time.Time) Snapshot {
	if !live(s.State) {
		return s
	}
	s.Activity = now
	if s.State == Stale && s.Reason == ReasonStalled {
		return s.to(Running, "", now)
	}
	return s
}

// Event folds one event of the agent's stream, seen at now, into s.
func (m Machine) Event(s Snapshot, ev *Event, now time.Time) Snapshot {
	if !live(s.State) {
		return s
	}
	s.Activity = now
	if m.Mode == Terminal {
		s.Progress, s.Busy = now, false
	}
	switch ev.Type {
	case TypePermission:
		if ev.Decision != "" {
			return s // answered already: nobody is asked
		}
		if ev.Tool == PlanTool {
			return s.to(Waiting, ReasonPlan, now)
		}
		return s.to(Waiting, ReasonPermission, now)
	case TypeResult:
		s.Open, s.Doing = false, ""
		if m.Mode == Turns && m.InputOpen {
			return s.to(Waiting, ReasonInput, now)
		}
		return s.to(Running, "", now) // the process ends next
	case TypeError:
		if ev.Attempt > 0 && !ev.Fatal {
			s.Open = s.Open || m.Mode == Turns
			return s.to(Running, ReasonRetrying, now)
		}
		return m.Active(s, now)
	case TypeStderr:
		if m.Mode == Turns {
			return m.Active(s, now) // a turn's diagnostics: life, not a new turn
		}
		return s.to(Running, "", now)
	case TypeToolUse:
		s.Doing = ev.Tool
	case TypeToolResult:
		s.Doing = ""
	case TypeSession, TypeText, TypeOutput, TypeUnparsed:
	default:
		return m.Active(s, now)
	}
	// The agent works: a turn is under way, even one that began without our prompt.
	s.Open = m.Mode == Turns
	return s.to(Running, "", now)
}

// Screen folds a change of a terminal agent's screen at now: progress when it says something
// new (Snapshot.Progress). New words make it running; a redraw that says nothing new (a
// spinner, a clock, a blinking dot) is only activity: it keeps a running agent from falling
// quiet, and leaves a waiting or stalled one as it is.
func (m Machine) Screen(s Snapshot, now time.Time, progress bool) Snapshot {
	if !live(s.State) {
		return s
	}
	s.Activity = now
	if !progress {
		return s
	}
	s.Progress, s.Busy = now, false
	return s.to(Running, "", now)
}

// Tick applies the silence-driven transitions due at now, each as of when it fell due (Due
// says when; the two cannot disagree).
func (m Machine) Tick(s Snapshot, now time.Time) Snapshot {
	for due := m.Due(s); !due.IsZero() && !now.Before(due); due = m.Due(s) {
		switch {
		case s.State == Waiting:
			s = s.to(Stale, s.Reason, due)
		case m.Mode == Turns, m.Mode == Terminal && due.Equal(m.stallDue(s)):
			s = s.to(Stale, ReasonStalled, due)
		default:
			s = s.to(Waiting, ReasonQuiet, due)
		}
	}
	return s
}

// Due returns when the next silence-driven transition falls due, or the zero time when none will.
// The supervisor sets one timer for it instead of ticking. A terminal agent falls quiet (its
// screen still) after IdleAfter, and stalls (its screen saying nothing new, however it redraws)
// after StallAfter, whichever comes first.
func (m Machine) Due(s Snapshot) time.Time {
	busy := s.State == Running || s.State == Starting
	switch {
	case s.State == Waiting && m.StaleAfter > 0 && m.Mode != Plain:
		return s.Since.Add(m.StaleAfter)
	case busy && m.Mode == Turns && s.Open && m.StallAfter > 0:
		return s.Activity.Add(m.StallAfter)
	case busy && m.Mode == Terminal && m.IdleAfter > 0 && !s.Busy:
		idle, stall := s.Activity.Add(m.IdleAfter), m.stallDue(s)
		if !stall.IsZero() && stall.Before(idle) {
			return stall
		}
		return idle
	case busy && m.Mode == Terminal:
		return m.stallDue(s)
	}
	return time.Time{}
}

// stallDue is when a terminal agent whose screen says nothing new stalls; zero for never.
func (m Machine) stallDue(s Snapshot) time.Time {
	if m.StallAfter <= 0 || s.Progress.IsZero() || s.Reason == ReasonRetrying {
		return time.Time{}
	}
	return s.Progress.Add(m.StallAfter)
}
