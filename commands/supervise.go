package commands

import (
	"os"
	"strconv"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"agt/spawn/supervisor"
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
			return supervise(c.String("run-dir"), c.Args().First(), c.String("mode"), c.Int("ready-fd"), c.Int("go-fd"))
		},
	}
}

// FastSupervise runs the supervisor when args are exactly what spawn writes
// (spawn.SupervisorArgs), without the CLI library: its set-up is part of every spawn's wait,
// and its allocations would stay resident in every supervisor. It returns false, having done
// nothing, for any other args.
func FastSupervise(args []string) (bool, error) {
	sa, ok := parseSuperviseArgs(args)
	if !ok {
		return false, nil
	}
	return true, supervise(sa.root, sa.name, sa.mode, sa.readyFD, sa.goFD)
}

type superviseArgs struct {
	root, name, mode string
	readyFD, goFD    int
}

// parseSuperviseArgs reads the form spawn.SupervisorArgs writes, and nothing else.
func parseSuperviseArgs(args []string) (superviseArgs, bool) {
	if len(args) != 11 || args[1] != "--run-dir" || args[3] != "supervise" || args[4] != "--ready-fd" ||
		args[6] != "--go-fd" || args[8] != "--mode" {
		return superviseArgs{}, false
	}
	ready, err1 := strconv.Atoi(args[5])
	goFD, err2 := strconv.Atoi(args[7])
	if err1 != nil || err2 != nil {
		return superviseArgs{}, false
	}
	return superviseArgs{root: args[2], name: args[10], mode: args[9], readyFD: ready, goFD: goFD}, true
}

// supervise runs supervisor.Run with the inherited descriptors (ignored unless above 2).
func supervise(root, name, mode string, readyFD, goFD int) error {
	file := func(fd int, name string) *os.File {
		if fd <= 2 {
			return nil
		}
		// Inherited without close-on-exec: make sure the agent does not get it too.
		unix.CloseOnExec(fd)
		return os.NewFile(uintptr(fd), name)
	}
	return supervisor.Run(root, name, mode, file(readyFD, "ready"), file(goFD, "go"))
}
