package commands

import (
	"context"
	"testing"

	"agt/state"
)

// A stop from top or serve says the agent's state once: "stopped looper", never "stopped
// looper (stopped)"; an agent that had ended already says how, as agt stop does.
func TestActStopSaysStateOnce(t *testing.T) {
	d, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	code := 0
	withStatuses(t, d, map[string]state.Status{
		"looper": {State: "running"}, // its supervisor is gone: the stop settles it, stopped
		"done":   {State: "exited", ExitCode: &code},
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newLocalFleet(ctx, d)
	for name, want := range map[string]string{"looper": "stopped looper", "done": "done already exited"} {
		got, err := f.act(ctx, fleetAction{What: "stop"}, &topRow{Name: name})
		if err != nil || got != want {
			t.Errorf("stop %s: %q, %v; want %q", name, got, err, want)
		}
	}
}
