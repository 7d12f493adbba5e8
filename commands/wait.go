package commands

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"agt/spawn"
	"agt/state"
	"agt/stream"
)

// exitTimedOut is the exit status of wait --timeout when an agent outlives it, as timeout(1)'s.
const exitTimedOut = 124

func waitCommand() *cli.Command {
	return &cli.Command{
		Name:  "wait",
		Usage: "wait for agents to end and exit with their exit code",
		UsageText: "agt wait [--until final|waiting] [--any] [--timeout DURATION] NAME...\n\n" +
			"Blocks until every named agent has ended, then exits with the first non-zero exit code\n" +
			"among them.\n\n" +
			"EXAMPLES:\n" +
			"   agt wait build && echo built\n" +
			"   agt wait --timeout 10m a b c; echo \"first failure: $?\"\n" +
			"   agt wait --until waiting fix-auth && agt permissions fix-auth\n" +
			"   agt wait --any --until waiting a b c   # the first that needs you",
		Description: helpText("wait"),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "until", Value: "final", Usage: "final: every agent ended; waiting: every agent needs a person, or ended", EnvVars: []string{"AGT_WAIT_UNTIL"}},
			durationFlag("timeout", "", "give up after this long (a duration, or seconds) and exit 124", "none", "AGT_WAIT_TIMEOUT"),
			&cli.BoolFlag{Name: "any", Usage: "return when the first of the agents reaches the condition, with its code"},
			jsonFlag(),
			formatFlag("wait", waitResult{}, "{{.name}} {{.exit_code}}"),
		},
		Action: func(c *cli.Context) error {
			out, err := outputFor(c)
			if err != nil {
				return err
			}
			// -t of targets is stop's grace; wait's --timeout has no short form.
			agents, err := targets(c, "agt wait [--timeout DURATION] NAME...", false)
			if err != nil {
				return err
			}
			until := c.String("until")
			if until != "final" && until != "waiting" {
				return usagef(c, "--until %q: want final or waiting", until)
			}
			ctx := c.Context
			if c.IsSet("timeout") {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, flagDuration(c, "timeout"))
				defer cancel()
			}
			if until == "waiting" {
				return waitUntilWaiting(c, ctx, out, agents)
			}
			if c.Bool("any") {
				return waitAny(c, ctx, out, agents)
			}
			for _, a := range agents {
				// Until the supervisor knows the end (it holds the lock until the disk has it).
				status := startStatus(c.App.ErrWriter, func() string { return "waiting for " + stateLine(a) })
				err := spawn.WaitEnd(ctx, a)
				status.stop()
				if err != nil {
					if c.Context.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
						return cli.Exit(fmt.Sprintf("timed out after %s: %s is still %s", flagDuration(c, "timeout"), a.Name, spawn.Observe(a).State), exitTimedOut)
					}
					return err
				}
				if err := printEnded(out, a); err != nil {
					return err
				}
			}
			return exitWithAgent(c, agents)
		},
	}
}

// exitEndedInstead is wait --until waiting's exit status when an agent ended instead.
const exitEndedInstead = 3

// waitPoll is how often wait --until waiting reads the agents' status.
const waitPoll = 50 * time.Millisecond

// waitUntilWaiting returns once every agent needs a person or has ended, printing the state of
// each: exit 0 when all wait, 3 when one ended instead.
func waitUntilWaiting(c *cli.Context, ctx context.Context, out *output, agents []*state.Agent) error {
	tick := time.NewTicker(waitPoll)
	defer tick.Stop()
	status := startStatus(c.App.ErrWriter, func() string { return "waiting until " + waitingOn(agents) + " needs you" })
	defer status.stop()
	for {
		ready, ended := 0, false
		var first *state.Agent
		for _, a := range agents {
			st := spawn.Observe(a)
			switch {
			case needsPerson(st):
				ready++
			case stream.IsFinal(st.State) || st.State == stream.Lost || st.State == spawn.Unknown && !a.Supervised():
				ready++
				ended = true
			default:
				continue
			}
			if first == nil {
				first = a
			}
		}
		if first != nil && c.Bool("any") {
			if err := printEnded(out, first); err != nil {
				return err
			}
			if st := spawn.Observe(first); !needsPerson(st) {
				return cli.Exit("", exitEndedInstead)
			}
			return nil
		}
		if ready == len(agents) {
			for _, a := range agents {
				if err := printEnded(out, a); err != nil {
					return err
				}
			}
			if ended {
				return cli.Exit("", exitEndedInstead)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			if c.Context.Err() == nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return cli.Exit(fmt.Sprintf("timed out after %s: not every agent waits", flagDuration(c, "timeout")), exitTimedOut)
			}
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// needsPerson reports whether an agent waits for a person: for input, a permission, a plan, or
// (a terminal agent) silent; stale with such a reason too.
func needsPerson(st *state.Status) bool {
	switch st.State {
	case stream.Waiting:
		return true
	case stream.Stale:
		return st.Reason != stream.ReasonStalled
	}
	return false
}

// waitResult is how one agent ended, as wait prints it: the NDJSON fields, and what templates
// name.
type waitResult struct {
	Name     string `json:"name"`
	State    string `json:"state"`
	Reason   string `json:"reason,omitempty"`
	ExitCode *int   `json:"exit_code"` // as a shell reports it: 128+N for signal N; null when unknown
	Signal   string `json:"signal,omitempty"`
}

// printEnded prints how a ended.
func printEnded(out *output, a *state.Agent) error {
	st := spawn.Observe(a)
	r := waitResult{Name: a.Name, State: st.State, Reason: st.Reason, Signal: st.Signal}
	if code, ok := spawn.ExitCode(st); ok {
		r.ExitCode = &code
	}
	human := []string{a.Name, st.State}
	switch {
	case st.Signal != "":
		human = append(human, "(killed by "+st.Signal+")")
	case r.ExitCode != nil:
		human = append(human, fmt.Sprintf("(exit code %d)", *r.ExitCode))
	case st.Reason != "":
		human = append(human, "("+st.Reason+")")
	}
	return out.line(r, strings.Join(human, " "))
}

// waitAny is wait --any: it returns when the first of agents ends, printing it, with its code.
func waitAny(c *cli.Context, ctx context.Context, out *output, agents []*state.Agent) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	status := startStatus(c.App.ErrWriter, func() string { return "waiting for the first of " + waitingOn(agents) })
	defer status.stop()
	first := make(chan *state.Agent, len(agents))
	errs := make(chan error, len(agents))
	for _, a := range agents {
		go func() {
			if err := spawn.WaitEnd(ctx, a); err != nil {
				errs <- err
				return
			}
			first <- a
		}()
	}
	select {
	case a := <-first:
		if err := printEnded(out, a); err != nil {
			return err
		}
		return exitWithAgent(c, []*state.Agent{a})
	case <-ctx.Done():
		if c.Context.Err() == nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return cli.Exit(fmt.Sprintf("timed out after %s: none of the agents ended", flagDuration(c, "timeout")), exitTimedOut)
		}
		return ctx.Err()
	case err := <-errs:
		return err
	}
}

// waitingOn names the agents a wait is on, for its status line: "a", "a, b and c", "12 agents".
func waitingOn(agents []*state.Agent) string {
	switch n := len(agents); {
	case n == 1:
		return stateLine(agents[0])
	case n <= 4:
		names := make([]string, n)
		for i, a := range agents {
			names[i] = a.Name
		}
		return strings.Join(names[:n-1], ", ") + " and " + names[n-1]
	default:
		return fmt.Sprintf("%d agents", n)
	}
}
