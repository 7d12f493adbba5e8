package commands

import (
	"os"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"agt/spawn"
)

// superviseCommand is the hidden verb `agt spawn` re-executes, detached, to run one agent.
func superviseCommand() *cli.Command {
	return &cli.Command{
		Name:      "supervise",
		Hidden:    true,
		UsageText: "agt supervise [--ready-fd FD] [--go-fd FD] [--mode MODE] NAME",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "ready-fd", Usage: "report readiness on this inherited descriptor"},
			&cli.IntFlag{Name: "go-fd", Usage: "wait for a byte on this inherited descriptor before starting"},
			&cli.StringFlag{Name: "mode", Usage: "how to start: empty (new), resume or fresh"},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Len() != 1 {
				return usagef(c, "want exactly one NAME")
			}
			var ready *os.File
			if fd := c.Int("ready-fd"); fd > 2 {
				// Inherited without close-on-exec: make sure the agent does not get it too.
				unix.CloseOnExec(fd)
				ready = os.NewFile(uintptr(fd), "ready")
			}
			var goAhead *os.File
			if fd := c.Int("go-fd"); fd > 2 {
				unix.CloseOnExec(fd)
				goAhead = os.NewFile(uintptr(fd), "go")
			}
			root := c.String("run-dir")
			return spawn.Supervise(root, c.Args().First(), c.String("mode"), ready, goAhead)
		},
	}
}
