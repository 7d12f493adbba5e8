package commands

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// Interrupted is the cause of a context that a signal cancelled: SIGINT (Ctrl-C), SIGTERM (what
// CI runners send on cancel) or SIGHUP (a closing terminal). A command cut short by it exits
// 128+N, as a shell reports a process killed by signal N: 130, 143, 129.
type Interrupted struct{ Signal syscall.Signal }

func (i Interrupted) Error() string { return "interrupted by " + signalName(i.Signal) }

// ExitCode is 128+N, the shell's code for signal N.
func (i Interrupted) ExitCode() int { return 128 + int(i.Signal) }

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return fmt.Sprintf("signal %d", int(s))
}

type againKey struct{}

// SignalContext returns a context cancelled, with an Interrupted cause, by the first SIGINT,
// SIGTERM or SIGHUP. The signals after it are not lost: Again hands them to the command that
// wants them (a second Ctrl-C on spawn --wait kills the agent at once). signal.NotifyContext
// tells neither which signal came nor of a second one.
func SignalContext(parent context.Context) context.Context {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	again := make(chan os.Signal, 4)
	ctx, cancel := context.WithCancelCause(context.WithValue(parent, againKey{}, (<-chan os.Signal)(again)))
	go func() {
		first := true
		for s := range sigs {
			if first {
				cancel(Interrupted{s.(syscall.Signal)})
				first = false
				continue
			}
			select {
			case again <- s:
			default: // nobody listens: the command is ending anyway
			}
		}
	}()
	return ctx
}

// Again returns the signals that came after the one that cancelled ctx, or nil when ctx is
// not a SignalContext (a nil channel never delivers).
func Again(ctx context.Context) <-chan os.Signal {
	ch, _ := ctx.Value(againKey{}).(<-chan os.Signal)
	return ch
}

// InterruptCode is the exit status of a command whose context was cancelled: 128+N for signal
// N, 130 when the cause is not known to be a signal.
func InterruptCode(ctx context.Context) int {
	var i Interrupted
	if errors.As(context.Cause(ctx), &i) {
		return i.ExitCode()
	}
	return 130
}
