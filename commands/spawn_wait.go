package commands

import (
	"context"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"agt/spawn"
	"agt/state"
)

// stopOnSignal watches for the signal that cancels c's context while spawn --wait follows an
// agent: it then runs stop (the agent's grace; a second signal kills), and if the stop fails,
// ends the following, as the agent may never end now. follow is the following's context;
// stopped, called once the following is over, waits for the watcher and returns stop's error.
func stopOnSignal(c *cli.Context, stop func() error) (follow context.Context, stopFollowing context.CancelFunc, stopped func() error) {
	follow, stopFollowing = context.WithCancel(context.WithoutCancel(c.Context))
	var stopErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-follow.Done():
			return
		case <-c.Context.Done():
		}
		if stopErr = stop(); stopErr != nil {
			stopFollowing()
		}
	}()
	return follow, stopFollowing, func() error {
		<-done
		return stopErr
	}
}

// waitSpawned is spawn --wait: it prints a's events until a ends and exits with its code. A
// signal (Ctrl-C; SIGTERM, as CI runners send on cancel; SIGHUP) stops the agent with its
// grace, a second one kills it at once, and the events of the stop still print; then it exits
// 128+N. With --rm the record goes at the end, however the agent ended.
func waitSpawned(c *cli.Context, out *output, a *state.Agent) error {
	out.w = keepWaiting(c, out.w, a.Name)
	follow, stopFollowing, stopped := stopOnSignal(c, func() error { return stopInterrupted(c, a) })
	defer stopFollowing()
	var err, stopErr error
	if conversation(a) {
		// A conversation waits for its next message once a turn ends: its first turn is what
		// spawn --wait waits for (or its stop to ask), its result the exit code.
		err = printTurn(follow, out, a, 0)
		if err == errTurnFailed && ended(a) {
			err = exitWithAgent(c, []*state.Agent{a}) // it ended before its turn did
		}
		if c.Bool("rm") && c.Context.Err() == nil {
			if _, serr := spawn.Stop(context.WithoutCancel(c.Context), a, -1); serr != nil {
				stopErr = serr
			}
		}
	} else {
		err = followEvents(follow, out, []*state.Agent{a}, tailFilter{last: -1}, nil)
	}
	stopFollowing()
	if serr := stopped(); serr != nil {
		stopErr = serr
	}
	if c.Context.Err() == nil && err == nil && !conversation(a) {
		err = exitWithAgent(c, []*state.Agent{a})
	}
	if stopErr != nil {
		PrintError(c.App.ErrWriter, fmt.Sprintf("stop %s: %v", a.Name, stopErr))
	}
	if c.Bool("rm") {
		removeAfterWait(c, a)
	}
	if c.Context.Err() != nil {
		return c.Context.Err() // main exits 128+N
	}
	return err
}

// stopInterrupted stops a after the signal that cancelled c's context, with a's own grace; a
// second signal makes it kill the tree at once.
func stopInterrupted(c *cli.Context, a *state.Agent) error {
	if isTerminal(c.App.ErrWriter) {
		fmt.Fprintf(c.App.ErrWriter, "agt: stopping %s (Ctrl-C again kills it now)\n", a.Name)
	}
	done := make(chan error, 1)
	go func() {
		_, err := spawn.Stop(context.Background(), a, -1) // the grace it was spawned with
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-Again(c.Context):
		spawn.Stop(context.Background(), a, 0) // cuts the first stop's grace short
		return <-done
	}
}

// removeAfterWait is spawn --rm: a's record goes, and its workspace with it unless that holds
// unsaved work, which stays (agt workspaces lists it) with a note saying so.
func removeAfterWait(c *cli.Context, a *state.Agent) {
	ctx := context.WithoutCancel(c.Context)
	r, err := rmAgent(ctx, a, rmOptions{workspace: true, keepUnsaved: true, grace: -1, registry: registry(c)})
	if err != nil {
		msg, _, _ := strings.Cut(err.Error(), "\n") // its hint would name flags of rm, not spawn's
		PrintError(c.App.ErrWriter, fmt.Sprintf("rm %s: %s\nhint: its record stays; 'agt rm --workspace %s' tries again, with --force whatever it holds", a.Name, msg, a.Name))
		return
	}
	if r.Kept != nil {
		PrintError(c.App.ErrWriter, fmt.Sprintf("kept %s of %s: it holds unsaved work\nhint: 'agt workspaces' lists it; 'agt workspaces prune --force' removes it", r.Kept, a.Name))
	}
}
