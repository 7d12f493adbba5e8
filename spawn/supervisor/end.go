package supervisor

import (
	"fmt"
	"time"

	"agt/config"
	"agt/spawn/ctl"
	"agt/stream"
)

// What the supervisor does once a run of the agent has ended.
type endAction int

const (
	finishRun  endAction = iota // write the final state: the agent is over
	nextTurn                    // the turn is over: wait for the next message (a process per turn)
	restartRun                  // start the agent again after a delay
)

// runEnd is what the supervisor knows when a run has ended: what decide decides on.
type runEnd struct {
	exit      *stream.Exit   // how the agent ended; nil when a restart could not start it
	failure   stream.Failure // what its decoder made of the end
	startErr  string         // why the restart could not start it (exit nil)
	survivors bool           // part of its tree outlived SIGKILL
	spent     bool           // it spent more than its budget
	stopped   bool           // a stop was asked for (or want is down)
	turnEnded bool           // its conversation says the run ended a turn, not the conversation
	ran       time.Duration  // how long it ran (monotonic, R19)
}

// decision is what decide says: what to do, with the final state and reason (finishRun) or the
// delay (restartRun); the failures in a row counting this run; and whether the run failed (its
// error goes into the status).
type decision struct {
	do            endAction
	state, reason string
	delay         time.Duration
	failures      int
	failed        bool
}

// decide is the end of a run, as a table after s6-supervise's actions[state][event]: a pure
// function of the run's end, the restart policy (config.Restart*), the backoff, the failures
// in a row before this run and a random number in [0, 1) for the jitter. The first row that
// matches wins:
//
//	a restart that could not start   → restart after the backoff, or failed (gave up)
//	part of the tree outlived SIGKILL → failed (survivors): never restarted beside it (R13)
//	over the budget                   → failed (budget): spent, never restarted
//	a stop asked for                  → stopped: a stop that raced the exit wins (R6, R18)
//	the end of a turn                 → the next turn, the failures forgotten
//	a failure no restart cures        → failed (auth, config): it would fail the same way
//	no restart asked for              → exited, or failed as the exit says
//	else                              → restart after the backoff, or failed (gave up)
//
// A clean exit (code 0, or a turn's end) restarts only under restart=always, and is never a
// failure to give up on. A rate limit waits the longest delay: it lifts in its own time.
func decide(e runEnd, policy string, b backoff, failures int, rnd float64) decision {
	if e.exit == nil {
		n, again, delay := b.next(failures, 0, rnd)
		if !again {
			return decision{do: finishRun, state: stream.Failed, reason: gaveUp(n-1, e.startErr), failures: n}
		}
		return decision{do: restartRun, delay: delay, failures: n}
	}
	switch {
	case e.survivors:
		return decision{do: finishRun, state: stream.Failed, reason: ctl.ReasonSurvivors, failures: failures}
	case e.spent:
		return decision{do: finishRun, state: stream.Failed, reason: stream.ClassBudget, failures: failures}
	case e.stopped:
		return decision{do: finishRun, state: stream.Stopped, reason: "stop", failures: failures}
	case e.turnEnded:
		return decision{do: nextTurn}
	}
	// A failure on a clean exit is an ACP run that the client ended (auth, config).
	clean := e.exit.Clean() && e.failure.Class == ""
	d := decision{failed: !clean, failures: failures}
	switch {
	case !clean && !restartable(e.failure.Class):
		d.do, d.state, d.reason = finishRun, stream.Failed, e.failure.Class
		return d
	case policy == config.RestartNever || clean && policy != config.RestartAlways:
		d.state, d.reason = endOf(e.exit, e.failure)
		return d
	}
	if clean {
		failures = 0 // restart=always: a clean exit is no failure, and never a reason to give up
	}
	n, again, delay := b.next(failures, e.ran, rnd)
	d.failures = n
	if !again {
		_, why := endOf(e.exit, e.failure)
		d.state, d.reason = stream.Failed, gaveUp(n-1, why)
		return d
	}
	if e.failure.Class == stream.ClassRate && delay < b.Max {
		delay = b.Max
	}
	d.do, d.delay = restartRun, delay
	return d
}

// gaveUp is the reason of an agent failed for good after n restarts.
func gaveUp(n int, why string) string {
	if n == 1 {
		return fmt.Sprintf("gave up after 1 restart (%s)", why)
	}
	return fmt.Sprintf("gave up after %d restarts in a row (%s)", n, why)
}

// restartable reports whether a restart can cure a failure of the class: never for a bad key
// (auth) or a bad setting (config).
func restartable(class string) bool {
	return class != stream.ClassAuth && class != stream.ClassConfig
}

// endOf is the final state and reason of an agent that ended on its own: a failure's class
// when the decoder knew more than the exit code (transient too: a 500 the agent reported).
func endOf(exit *stream.Exit, f stream.Failure) (state, reason string) {
	switch {
	case (exit.Code != 0 || exit.Signal != "") && f.Reason(*exit) != "":
		return stream.Failed, f.Reason(*exit)
	case exit.Signal != "":
		return stream.Failed, "killed by " + exit.Signal
	case exit.Code != 0:
		return stream.Failed, fmt.Sprintf("exit code %d", exit.Code)
	}
	return stream.Exited, ""
}
