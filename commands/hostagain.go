package commands

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	"agt/hosts"
	"agt/termsafe"
)

// againPlace runs a command that asks a host for something the host keeps (agt wait: an
// agent's end and its exit code) again when the link to the host drops, with backoff, until
// it answers: a dropped connection costs a wait its answer only if the host never comes
// back. Only the answer of the run that ended is passed on, so nothing prints twice.
type againPlace struct {
	hosts.Place
	errw io.Writer
}

func (p againPlace) Run(ctx context.Context, call *hosts.Call) error {
	delay := reconnectMin
	for {
		var out bytes.Buffer
		attempt := *call
		attempt.Stdout = &out
		start := time.Now()
		err := p.Place.Run(ctx, &attempt)
		if u, dropped := err.(*hosts.Unreachable); dropped && ctx.Err() == nil {
			if time.Since(start) > reconnectMax {
				delay = reconnectMin // it had held a while: the host was there
			}
			wait := jittered(delay)
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
