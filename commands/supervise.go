package commands

import (
	"os"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"agt/spawn"
)

// superviseCommand is the hidden verb a spawn re-executes agt as: the supervisor of one agent.
// It learns which agent from its go descriptor (see spawn.Prestart).
func superviseCommand() *cli.Command {
	return &cli.Command{
		Name:      "supervise",
		Hidden:    true,
		UsageText: "agt supervise --ready-fd FD --go-fd FD",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "ready-fd", Usage: "report readiness on this inherited descriptor"},
			&cli.IntFlag{Name: "go-fd", Usage: "read the orders (run directory, name, mode) from this inherited descriptor"},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Len() != 0 || c.Int("ready-fd") <= 2 || c.Int("go-fd") <= 2 {
				return usagef(c, "want --ready-fd and --go-fd, each above 2, and no arguments; agt itself runs this")
			}
			// Inherited without close-on-exec: make sure the agent does not get them too.
			files := make([]*os.File, 2)
			for i, name := range []string{"ready-fd", "go-fd"} {
				fd := c.Int(name)
				unix.CloseOnExec(fd)
				files[i] = os.NewFile(uintptr(fd), name)
			}
			return spawn.Supervise(files[0], files[1])
		},
	}
}
