package commands

import (
	"bytes"
	"context"
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
// ends the wait as a timeout (124), not a reconnect that restarts the clock.
type againPlace struct {
	hosts.Place
	errw    io.Writer
	timeout time.Duration
	timed   bool // timeout holds
}

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
		err := p.Place.Run(ctx, &attempt)
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
