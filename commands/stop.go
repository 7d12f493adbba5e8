package commands

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/tidwall/gjson"
	"github.com/urfave/cli/v2"

	"agt/spawn"
	"agt/state"
	"agt/stream"
	"agt/termsafe"
)

func stopCommand() *cli.Command {
	return &cli.Command{
		Name:  "stop",
		Usage: "stop agents: SIGTERM to the whole tree, SIGKILL after the grace",
		UsageText: "agt stop [-t DURATION] [--after-turn] NAME... | --all\n\n" +
			"Stops each agent's whole process tree and returns when its final status is written.\n\n" +
			"EXAMPLES:\n" +
			"   agt stop demo\n" +
			"   agt stop -t 5 demo other      # 5 seconds of grace, then SIGKILL\n" +
			"   agt stop --after-turn -t 10m fix-auth\n" +
			"   agt stop --all",
		Description: helpText("stop"),
		Flags: []cli.Flag{
			durationFlag("timeout", "t", "grace before SIGKILL (a duration, or seconds), longer or shorter than the agent's; 0 kills at once", "the agent's --timeout"),
			&cli.BoolFlag{Name: "all", Usage: "stop every agent that runs"},
			&cli.BoolFlag{Name: "after-turn", Usage: "let a conversation finish its running turn, then end it (within the grace)"},
			jsonFlag(),
			formatFlag("stop", stream.Event{}, "{{.agent}} {{.to}} {{.reason}}"),
		},
		Action: func(c *cli.Context) error {
			if c.Args().Len() > 0 && c.Bool("all") {
				return usagef(c, "--all takes no NAME")
			}
			out, err := outputFor(c)
			if err != nil {
				return err
			}
			agents, err := targets(c, "agt stop [-t DURATION] NAME... | --all", c.Bool("all"))
			if err != nil {
				return err
			}
			return stopAll(c, out, agents)
		},
	}
}

// stopAll stops the agents in parallel and prints each one's final state event, in order. On
// a terminal, a stop that takes more than a second says what it waits for, and until when.
func stopAll(c *cli.Context, out *output, agents []*state.Agent) error {
	type result struct {
		st      *state.Status
		already bool
		err     error
	}
	results := make([]result, len(agents))
	var wg sync.WaitGroup
	for i, a := range agents {
		before := spawn.Observe(a)
		if stream.IsFinal(before.State) {
			results[i] = result{st: before, already: true}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			done := make(chan struct{})
			if isTerminal(c.App.ErrWriter) {
				go stopNote(c, a, time.Now(), done)
			}
			var st *state.Status
			var err error
			if c.Bool("after-turn") {
				st, err = stopAfterTurn(c, a)
			} else {
				st, err = stopUntilKilled(c, a)
			}
			close(done)
			results[i] = result{st: st, err: err}
		}()
	}
	wg.Wait()
	var firstErr error
	for i, r := range results {
		switch {
		case r.err != nil:
			warn(c, "stop", agents[i].Name, r.err)
			if firstErr == nil {
				firstErr = cli.Exit("", 1)
			}
		case r.already:
			if !c.Bool("all") {
				fmt.Fprintf(c.App.ErrWriter, "agt: %s already %s\n", agents[i].Name, r.st.State)
			}
		default:
			if line := lastStateEvent(agents[i]); line != nil {
				if err := printStopped(out, agents[i], line); err != nil {
					return err
				}
			}
		}
	}
	return firstErr
}

// stopUntilKilled stops a with the grace -t gives. A signal (Ctrl-C) does not abandon the stop,
// which the supervisor carries on anyway: it says a second one kills now, and a second one
// does.
func stopUntilKilled(c *cli.Context, a *state.Agent) (*state.Status, error) {
	type result struct {
		st  *state.Status
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := spawn.Stop(context.WithoutCancel(c.Context), a, grace(c))
		done <- result{st, err}
	}()
	select {
	case r := <-done:
		return r.st, r.err
	case <-c.Context.Done():
	}
	fmt.Fprintf(c.App.ErrWriter, "agt: still stopping %s; Ctrl-C again kills it now\n", a.Name)
	select {
	case r := <-done:
		return r.st, r.err
	case <-Again(c.Context):
		spawn.Stop(context.WithoutCancel(c.Context), a, 0) // cuts the first stop's grace short
		r := <-done
		return r.st, r.err
	}
}

// stopAfterTurn asks a conversation to end once its running turn is over, and waits for its end
// within the grace (-t, else the agent's own); past it, the agent is killed as stop -t 0 does.
func stopAfterTurn(c *cli.Context, a *state.Agent) (*state.Status, error) {
	if _, err := spawn.Control(c.Context, a, spawn.Request{Op: spawn.OpAfterTurn}); err != nil {
		return nil, controlError(a, err)
	}
	g, _ := spawn.StopGrace(a, grace(c))
	ctx, cancel := context.WithTimeout(c.Context, g)
	defer cancel()
	if err := spawn.WaitEnd(ctx, a); err != nil {
		if c.Context.Err() != nil {
			return nil, c.Context.Err()
		}
		return spawn.Stop(c.Context, a, 0) // the turn outlived the grace
	}
	return spawn.Observe(a), nil
}

// stopNote says, once a stop has taken a second, what it waits for: the agent to exit after
// SIGTERM, until its grace is over and SIGKILL comes.
func stopNote(c *cli.Context, a *state.Agent, start time.Time, done <-chan struct{}) {
	select {
	case <-done:
		return
	case <-c.Context.Done():
		return
	case <-time.After(time.Second):
	}
	g, _ := spawn.StopGrace(a, grace(c))
	left := time.Until(start.Add(g)).Round(time.Second)
	fmt.Fprintf(c.App.ErrWriter, "agt: waiting for %s to exit after SIGTERM; SIGKILL in %s ('agt stop -t 0 %s' kills it now)\n", a.Name, left, a.Name)
}

// printStopped prints a stop's final state event: as is, through the template, or as a line
// saying how the agent ended.
func printStopped(out *output, a *state.Agent, line []byte) error {
	if out.mode != modeTable {
		return printEvent(out, line)
	}
	how := gjson.GetBytes(line, "reason").String()
	exit := spawn.LastExit(a) // none when stopped while restarting, or reaped
	switch code := gjson.GetBytes(exit, "code"); {
	case exit == nil:
	case gjson.GetBytes(exit, "signal").String() != "":
		how = "killed by " + gjson.GetBytes(exit, "signal").String()
	case code.Exists() && code.Type == gjson.Number:
		how = fmt.Sprintf("exit code %d", code.Int())
	}
	_, err := fmt.Fprintln(out.w, termsafe.Line(fmt.Sprintf("%s %s (%s)", gjson.GetBytes(line, "to").String(), a.Name, how)))
	return err
}
