package commands

import (
	"github.com/urfave/cli/v2"
)

func waitCommand() *cli.Command {
	return &cli.Command{
		Name:  "wait",
		Usage: "wait for agents to end and exit with their exit code",
		UsageText: "agt wait NAME...\n\n" +
			"Blocks until every named agent has ended, then exits with the first non-zero exit\n" +
			"code (128+N for an agent killed by signal N; 1 for an agent whose end nobody saw).\n\n" +
			"EXAMPLES:\n" +
			"   agt wait build && echo built\n" +
			"   agt wait a b c; echo \"first failure: $?\"",
		Action: func(c *cli.Context) error {
			agents, err := targets(c, "agt wait NAME...", false)
			if err != nil {
				return err
			}
			for _, a := range agents {
				// The supervisor holds the lock until the final status is written.
				if err := a.WaitFree(c.Context); err != nil {
					return err
				}
			}
			return exitWithAgent(c, agents)
		},
	}
}
