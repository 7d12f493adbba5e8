// Command agt runs AI coding agents the Unix way: each in its own supervised process tree, with
// state in plain files and one normalized NDJSON event stream.
//
// The runtime's container-aware GOMAXPROCS reads /proc/self/cgroup and /proc/self/mountinfo at
// every start and re-checks them while the process runs. agt's processes wait on files and
// pipes, never on CPU: the reads bought nothing and cost every start (a ps in a shell prompt,
// each half of a spawn) most of a millisecond.
//
//go:debug containermaxprocs=0
//go:debug updatemaxprocs=0
package main

import (
	"context"
	"errors"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"agt/commands"
)

// version is set at link time with -ldflags "-X main.version=…"; without it, agt version
// reports the module version or the VCS revision the binary was built from.
var version string

func main() {
	// ps runs in shell prompts, and a spawn waits for its supervisor to start: their everyday
	// forms skip the CLI library's set-up.
	for _, fast := range []func([]string) (bool, error){commands.FastPs, commands.FastSupervise} {
		if ok, err := fast(os.Args); ok {
			os.Exit(exitCode(context.Background(), err))
		}
	}
	// SIGINT, SIGTERM and SIGHUP cancel the context; a second one reaches commands.Again.
	ctx := commands.SignalContext(context.Background())
	// Flags after NAME are moved before it first: docker users type them there.
	app := commands.New(version)
	err := app.RunContext(ctx, commands.Args(app, os.Args))
	os.Exit(exitCode(ctx, err))
}

// exitCode maps the app's error to an exit status, printing it once with the agt: prefix.
// Lines after the first (hints) are prefixed too. A command cut short by a signal exits
// 128+N, as a shell reports it (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP), and says
// nothing: the interruption was the user's.
func exitCode(ctx context.Context, err error) int {
	if err == nil {
		return 0 // done, whatever came late: a spawn that started its agent says so
	}
	if ctx.Err() != nil {
		return commands.InterruptCode(ctx)
	}
	code := 1
	var coder cli.ExitCoder
	if errors.As(err, &coder) {
		code = coder.ExitCode()
	}
	if msg := strings.TrimSpace(err.Error()); msg != "" {
		commands.PrintError(os.Stderr, msg)
	}
	return code
}
