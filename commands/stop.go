package commands

import (
	"fmt"
	"sync"

	"github.com/urfave/cli/v2"

	"agt/spawn"
	"agt/state"
	"agt/stream"
)

func stopCommand() *cli.Command {
	return &cli.Command{
		Name:  "stop",
		Usage: "stop agents: SIGTERM to the whole tree, SIGKILL after the grace",
		UsageText: "agt stop [-t DURATION] NAME... | --all\n\n" +
			"Stops each agent's whole process tree and returns when its final status is written,\n" +
			"printing its final state event.\n\n" +
			"EXAMPLES:\n" +
			"   agt stop demo\n" +
			"   agt stop -t 5s demo other\n" +
			"   agt stop --all",
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "timeout", Aliases: []string{"t"}, Usage: "grace before SIGKILL, longer or shorter than the agent's; 0 kills at once", DefaultText: "the agent's --timeout"},
			&cli.BoolFlag{Name: "all", Usage: "stop every agent"},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Len() > 0 && c.Bool("all") {
				return usagef(c, "--all takes no NAME")
			}
			agents, err := targets(c, "agt stop [-t DURATION] NAME... | --all", c.Bool("all"))
			if err != nil {
				return err
			}
			return stopAll(c, agents)
		},
	}
}

// stopAll stops the agents in parallel and prints each one's final state event, in order.
func stopAll(c *cli.Context, agents []*state.Agent) error {
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
			st, err := spawn.Stop(c.Context, a, grace(c))
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
			fmt.Fprintf(c.App.ErrWriter, "agt: %s already %s\n", agents[i].Name, r.st.State)
		default:
			line := lastStateEvent(agents[i])
			if line != nil {
				c.App.Writer.Write(append(line, '\n'))
			}
		}
	}
	return firstErr
}
