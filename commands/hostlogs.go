package commands

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"agt/hosts"
	"agt/termsafe"
)

// logsFollowOnPlace is logs -f of an agent on a host. Its agt says first where what it prints
// starts (logs --mark); when the link drops, the follow goes on, with backoff while the host
// cannot be reached, from that start and the bytes that came (logs --resume): nothing is lost
// or printed twice, byte for byte.
func logsFollowOnPlace(c *cli.Context, place hosts.Place, args []string) error {
	host := place.Name()
	var at *markedWriter // the last run's: where its bytes start, and how many came
	delay := reconnectMin
	for {
		call := &hosts.Call{Args: append([]string{"logs", "--mark"}, args...), Stream: true,
			Stderr: &hostDiagnostics{w: c.App.ErrWriter, host: host}}
		if at != nil && at.marked {
			call.Args = append([]string{"logs", "--mark", fmt.Sprintf("--resume=%s:%d", at.start, at.n)}, args...)
		}
		run := &markedWriter{w: c.App.Writer}
		call.Stdout = run
		t0 := time.Now()
		err := place.Run(c.Context, call)
		if run.marked || at == nil {
			at = run
		}
		if !hosts.IsUnreachable(err) || c.Context.Err() != nil {
			return passExit(c, place, err)
		}
		if !at.marked {
			printHostError(c.App.ErrWriter, host, err)
			return cli.Exit(fmt.Sprintf("the link to %s dropped before its log began\nhint: 'agt logs -f %s:NAME' follows it again", termsafe.Text(host), termsafe.Text(host)), 1)
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

// markedWriter takes the first line of logs --mark, where the bytes start, and passes the
// bytes after it on, counting them after the ones the host skipped.
type markedWriter struct {
	w      io.Writer
	head   []byte
	marked bool
	start  rawPos
	n      int64 // bytes after start: skipped by the host, then written
}

func (m *markedWriter) Write(p []byte) (int, error) {
	size := len(p)
	if !m.marked {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if m.head = append(m.head, p...); len(m.head) > 200 {
				return 0, fmt.Errorf("logs: no mark from the host")
			}
			return size, nil
		}
		line := string(append(m.head, p[:i]...))
		rest, ok := strings.CutPrefix(line, logsMark)
		start, skip, err := parseResume(rest)
		if !ok || err != nil {
			return 0, fmt.Errorf("logs: the host's mark %q is not one", termsafe.Text(line))
		}
		m.marked, m.start, m.n, m.head = true, start, skip, nil
		p = p[i+1:]
	}
	n, err := m.w.Write(p)
	m.n += int64(n)
	if err != nil {
		return 0, err
	}
	return size, nil
}
