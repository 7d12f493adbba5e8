package commands

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"agt/hosts"
)

// hangingPlace is a host whose link hangs: an attempt ends only when its context does, as
// ssh does (SIGTERM, the link gone).
type hangingPlace struct{ done <-chan struct{} }

func (hangingPlace) Name() string { return "box1" }

func (h hangingPlace) Run(ctx context.Context, _ *hosts.Call) error {
	select {
	case <-ctx.Done():
	case <-h.done:
	}
	return &hosts.Unreachable{Place: "box1", Reason: "the connection ended"}
}

// A wait --timeout on a host whose link hangs ends at its deadline (and a grace), as a
// timeout; the deadline was only looked at between attempts, and one attempt could hang for
// ssh's connect timeout, or a minute of keepalives.
func TestAgainPlaceDeadlineCutsHungAttempt(t *testing.T) {
	done := make(chan struct{})
	defer close(done)
	p := againPlace{Place: hangingPlace{done}, errw: io.Discard, timeout: 50 * time.Millisecond, timed: true, grace: 50 * time.Millisecond}
	ended := make(chan error, 1)
	go func() {
		ended <- p.Run(context.Background(), &hosts.Call{Args: []string{"wait", "--timeout=50ms", "w"}})
	}()
	select {
	case err := <-ended:
		var exit *hosts.ExitError
		if !errors.As(err, &exit) || exit.Code != exitTimedOut {
			t.Fatalf("Run = %v, want exit %d", err, exitTimedOut)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a hung attempt held the wait 10s past a 50ms timeout")
	}
}
