package commands

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"agt/hosts"
	"agt/termsafe"
)

// againPlace runs a command that asks a host for something the host keeps (agt wait: an
// agent's end and its exit code) again when the link to the host drops, with backoff, until
// it answers: a dropped connection costs a wait its answer only if the host never comes
// back. Only the answer of the run that ended is passed on, so nothing prints twice.
//
// With a timeout (wait --timeout), it is one deadline over every attempt, as on this machine:
// each attempt asks the host for what is left of it, and a link still down at the deadline
// ends the wait as a timeout (124), not a reconnect that restarts the clock. An attempt that
// has not answered answerGrace past the deadline is cut short: a link that hangs (ssh's
// connect timeout, a silent drop that keepalives find only after a minute) would otherwise
// hold the wait long past it.
type againPlace struct {
	hosts.Place
	errw    io.Writer
	timeout time.Duration
	timed   bool          // timeout holds
	grace   time.Duration // answerGrace when 0
}

// answerGrace is how long past its deadline a wait on a host waits for the host's own answer
// (its 124, or the agent's end just in time) before it ends the wait itself.
const answerGrace = 5 * time.Second

func (p againPlace) Run(ctx context.Context, call *hosts.Call) error {
	var deadline time.Time
	if p.timed {
		deadline = time.Now().Add(p.timeout)
	}
	delay := reconnectMin
	for again := false; ; again = true {
		var out bytes.Buffer
		attempt := *call
		attempt.Stdout = &out
		if again && p.timed {
			left := time.Until(deadline)
			if left <= 0 {
				PrintError(p.errw, termsafe.Text(fmt.Sprintf("%s: timed out after %s: the link dropped and was not back in time", p.Name(), p.timeout)))
				return &hosts.ExitError{Place: p.Name(), Code: exitTimedOut}
			}
			attempt.Args = withTimeout(call.Args, left)
		}
		start := time.Now()
		err := p.runAttempt(ctx, deadline, &attempt)
		if err == errNoAnswer {
			PrintError(p.errw, termsafe.Text(fmt.Sprintf("%s: timed out after %s: the host did not answer in time", p.Name(), p.timeout)))
			return &hosts.ExitError{Place: p.Name(), Code: exitTimedOut}
		}
		if u, dropped := err.(*hosts.Unreachable); dropped && ctx.Err() == nil {
			if time.Since(start) > reconnectMax {
				delay = reconnectMin // it had held a while: the host was there
			}
			wait := jittered(delay)
			if p.timed {
				wait = min(wait, max(time.Until(deadline), 0))
			}
			PrintError(p.errw, termsafe.Text(fmt.Sprintf("%s: %s; asking again in %s", p.Name(), u.Reason, wait.Round(10*time.Millisecond))))
			if hosts.Pause(ctx, wait) != nil {
				return err
			}
			delay = min(2*delay, reconnectMax)
			continue
		}
		if call.Stdout != nil {
			if _, werr := call.Stdout.Write(out.Bytes()); werr != nil && err == nil {
				err = werr
			}
		}
		return err
	}
}

// errNoAnswer is runAttempt's: the attempt was cut short answerGrace past the deadline.
var errNoAnswer = errors.New("no answer in time")

// runAttempt is one attempt, cut short answerGrace past deadline when the wait is timed.
// What the host answered (its exit) beats the cut, however late.
func (p againPlace) runAttempt(ctx context.Context, deadline time.Time, call *hosts.Call) error {
	if !p.timed {
		return p.Place.Run(ctx, call)
	}
	grace := p.grace
	if grace == 0 {
		grace = answerGrace
	}
	actx, cancel := context.WithDeadline(ctx, deadline.Add(grace))
	defer cancel()
	err := p.Place.Run(actx, call)
	var exit *hosts.ExitError
	if err != nil && !errors.As(err, &exit) && actx.Err() != nil && ctx.Err() == nil {
		return errNoAnswer
	}
	return err
}

// withTimeout is args with its --timeout flag (as forwardFlags writes it) set to what is left,
// rounded up to the millisecond so that a little left is not none.
func withTimeout(args []string, left time.Duration) []string {
	out := slices.Clone(args)
	for i, a := range out {
		if strings.HasPrefix(a, "--timeout=") {
			out[i] = "--timeout=" + (left + time.Millisecond - 1).Truncate(time.Millisecond).String()
			break
		}
	}
	return out
}
