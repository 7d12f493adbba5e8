package commands

import (
	"github.com/urfave/cli/v2"

	"agt/spawn"
)

func restartCommand() *cli.Command {
	return &cli.Command{
		Name:  "restart",
		Usage: "stop agents if they run, then start them again, resuming their sessions",
		UsageText: "agt restart [-t DURATION] [--fresh] NAME...\n\n" +
			"Stops each live agent (as agt stop), then starts it again from its record, resuming\n" +
			"its session where its kind can (Claude --resume, Codex exec resume, …) unless --fresh.\n" +
			"Works on running, ended and lost agents; prints the spawned event of each new run.\n\n" +
			"EXAMPLES:\n" +
			"   agt restart fix-auth\n" +
			"   agt restart --fresh -t 5s fix-auth review",
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "timeout", Aliases: []string{"t"}, Usage: "grace before SIGKILL when stopping; 0 kills at once", DefaultText: "the agent's --timeout"},
			&cli.BoolFlag{Name: "fresh", Usage: "start a new session instead of resuming"},
			jsonFlag(),
			formatFlag("{{.Agent}} {{.PID}}"),
		},
		Action: func(c *cli.Context) error {
			out, err := outputFor(c)
			if err != nil {
				return err
			}
			agents, err := targets(c, "agt restart [-t DURATION] [--fresh] NAME...", false)
			if err != nil {
				return err
			}
			failed := false
			for _, a := range agents {
				spawned, err := spawn.Restart(c.Context, a, grace(c), c.Bool("fresh"))
				if err != nil {
					if c.Context.Err() != nil {
						return err // interrupted: no further restarts
					}
					warn(c, "restart", a.Name, err)
					failed = true
					continue
				}
				if err := printSpawned(out, spawned); err != nil {
					return err
				}
			}
			if failed {
				return cli.Exit("", 1)
			}
			return nil
		},
	}
}
