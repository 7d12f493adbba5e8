package commands

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"agt/spawn"
	"agt/state"
	"agt/stream"
	"agt/workspace"
)

func restartCommand() *cli.Command {
	return &cli.Command{
		Name:  "restart",
		Usage: "stop agents if they run, then start them again, resuming their sessions",
		UsageText: "agt restart [-t DURATION] [--fresh] NAME...\n\n" +
			"Stops each agent, then starts it again from its record, resuming its session unless\n" +
			"--fresh.\n\n" +
			"EXAMPLES:\n" +
			"   agt restart fix-auth\n" +
			"   agt restart --fresh -t 5s fix-auth review",
		Description: helpText("restart"),
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "timeout", Aliases: []string{"t"}, Usage: "grace before SIGKILL when stopping; 0 kills at once", DefaultText: "the agent's --timeout"},
			&cli.BoolFlag{Name: "fresh", Usage: "start a new session instead of resuming"},
			jsonFlag(),
			formatFlag("restart", stream.Event{}, "{{.agent}} {{.pid}}"),
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
				if err := workdirGone(a); err != nil {
					warn(c, "restart", a.Name, err)
					failed = true
					continue
				}
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

// workdirGone is an error, with what to do, when the directory a's record runs it in is gone
// (its worktree was removed): checked before a live agent is stopped for nothing, and before
// the start fails on it with a message that would seem to blame the command.
func workdirGone(a *state.Agent) error {
	spec, err := a.ReadSpec()
	if err != nil {
		return nil // spawn.Restart says what is wrong with the record
	}
	if fi, err := os.Stat(spec.Cwd); err == nil && fi.IsDir() {
		return nil
	}
	hint := fmt.Sprintf("'agt rm %s' forgets it; then spawn it again", a.Name)
	if ws, _ := recordWorkspace(a); ws != nil {
		switch ws.Type {
		case workspace.Git:
			hint = fmt.Sprintf("bring the worktree back with 'git -C %s worktree prune && git -C %s worktree add %s %s', "+
				"or forget it all with 'agt rm --workspace %s'", ws.Repo, ws.Repo, ws.Path, ws.Branch, a.Name)
		case workspace.JJ:
			hint = fmt.Sprintf("'agt rm --workspace %s' forgets it and its jj workspace; then spawn it again", a.Name)
		}
	}
	return withHint(fmt.Errorf("the working directory of %s, %s, is gone", a.Name, spec.Cwd), hint)
}
