package commands

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/urfave/cli/v2"
)

// keepWaiting is spawn --wait's stdout when its reader may go away (a job's log that is cut,
// a pipe into head): a write that fails ends the printing, never the wait. spawn --wait goes
// on until the agent ends, removes it with --rm, and exits with its code, as the engine
// contract (docs/engines.md) says. SIGPIPE is caught, so that such a write fails with EPIPE
// instead of killing agt; a caught signal is not passed on to the processes agt starts.
func keepWaiting(c *cli.Context, w io.Writer, name string) io.Writer {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	return &goneWriter{w: w, errw: c.App.ErrWriter, name: name}
}

// goneWriter passes writes on until one fails, then drops them, saying so once on errw.
type goneWriter struct {
	w    io.Writer
	errw io.Writer
	name string
	mu   sync.Mutex
	gone bool
}

func (g *goneWriter) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gone {
		return len(p), nil
	}
	if _, err := g.w.Write(p); err != nil {
		g.gone = true
		PrintError(g.errw, fmt.Sprintf("stdout: %v: %s's events are no longer printed; still waiting for it to end", err, g.name))
	}
	return len(p), nil
}
