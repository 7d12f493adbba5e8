// Command agt runs AI coding agents the Unix way: each in its own supervised process tree, with
// state in plain files and one normalized NDJSON event stream.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"agt/commands"
)

// version is set at link time with -ldflags "-X main.version=…".
var version string

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := commands.New(buildVersion()).RunContext(ctx, os.Args)
	stop()
	os.Exit(exitCode(ctx, err))
}

// exitCode maps the app's error to an exit status, printing it once with the agt: prefix.
// Lines after the first (hints) are prefixed too.
func exitCode(ctx context.Context, err error) int {
	if err == nil {
		return 0
	}
	code := 1
	var coder cli.ExitCoder
	switch {
	case errors.As(err, &coder):
		code = coder.ExitCode()
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		return 130
	}
	if msg := strings.TrimSpace(err.Error()); msg != "" {
		for _, line := range strings.Split(msg, "\n") {
			fmt.Fprintf(os.Stderr, "agt: %s\n", line)
		}
	}
	return code
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}
