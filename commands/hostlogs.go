package commands

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"agt/hosts"
	"agt/termsafe"
)

// logsFollowOnPlace is logs -f of an agent on a host. Its agt says where what it prints starts
// (logs --mark); when the link drops, the follow goes on, with backoff while the host cannot
// be reached, from that start and the bytes that came (logs --resume): nothing is lost or
// printed twice, byte for byte.
func logsFollowOnPlace(c *cli.Context, place hosts.Place, args []string) error {
	host := place.Name()
	var (
		mu      sync.Mutex
		start   string // INODE:OFFSET, once the host said it
		printed int64  // bytes of the log printed after start
	)
	delay := reconnectMin
	for {
		call := &hosts.Call{Args: append([]string{"logs", "--mark"}, args...), Stream: true}
		if start != "" {
			call.Args = append([]string{"logs", fmt.Sprintf("--resume=%s:%d", start, printed)}, args...)
		}
		out := &countingWriter{w: c.App.Writer}
		diag := &hostDiagnostics{w: c.App.ErrWriter, host: host}
		var mark string
		call.Stdout = out
		call.Stderr = &lineWriter{fn: func(line []byte) error {
			if m, ok := strings.CutPrefix(string(line), logsMark); ok {
				mu.Lock()
				mark = m
				mu.Unlock()
				return nil
			}
			_, err := diag.Write(append(line, '\n'))
			return err
		}}
		t0 := time.Now()
		err := place.Run(c.Context, call)
		call.Stderr.(*lineWriter).Close()
		mu.Lock()
		if mark != "" {
			start, printed = mark, out.n // this run started afresh there
		} else {
			printed += out.n
		}
		mu.Unlock()
		if !hosts.IsUnreachable(err) || c.Context.Err() != nil {
			return passExit(c, place, err)
		}
		if start == "" {
			printHostError(c.App.ErrWriter, host, err)
			return cli.Exit(fmt.Sprintf("the link to %s dropped before it said where its log starts\nhint: 'agt logs -f %s:NAME' follows it again", termsafe.Text(host), termsafe.Text(host)), 1)
		}
		if time.Since(t0) > reconnectMax {
			delay = reconnectMin
		}
		wait := jittered(delay)
		PrintError(c.App.ErrWriter, termsafe.Text(fmt.Sprintf("%s: %s; following again in %s", host, err.(*hosts.Unreachable).Reason, wait.Round(10*time.Millisecond))))
		if err := hosts.Pause(c.Context, wait); err != nil {
			return err
		}
		delay = min(2*delay, reconnectMax)
	}
}

// countingWriter passes bytes on and counts those written.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
