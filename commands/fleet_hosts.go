package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"agt/hosts"
	"agt/spawn"
	"agt/state"
	"agt/termsafe"
)

// hostFleet is the source of the rows of a host's agents: the host's ps --watch, on a
// connection of its own, says what changed as it changes (no ssh a second). When the link
// drops, the host's rows stay as it last told them, marked unreachable with ssh's reason, and
// the stream is opened again with backoff; its first batch then replaces them.
type hostFleet struct {
	place hosts.Place

	mu   sync.Mutex
	last map[string]topRow // what the host said last, by name
}

func (h *hostFleet) label() string { return h.place.Name() }

// rows is empty: a host's rows come in its first batch.
func (h *hostFleet) rows() []topRow { return nil }

// batches follows the host's ps --watch until ctx ends, again after every drop.
func (h *hostFleet) batches(ctx context.Context, fn func(rows []topRow, logged map[string]bool, all bool)) {
	delay := reconnectMin
	for {
		got := false
		var batch []topRow
		lw := &lineWriter{fn: func(line []byte) error {
			if !gjson.ValidBytes(line) {
				return nil
			}
			end := gjson.GetBytes(line, "batch")
			if !end.Exists() {
				if r, ok := rowOfPs(line, h.label()); ok {
					batch = append(batch, r)
				}
				return nil
			}
			all := end.String() == "all"
			logged := map[string]bool{}
			for _, n := range gjson.GetBytes(line, "logged").Array() {
				logged[n.String()] = true
			}
			h.remember(batch, all)
			fn(batch, logged, all)
			batch, got = nil, true
			return nil
		}}
		said := &boundedBuffer{max: 64 << 10}
		err := h.place.Run(ctx, &hosts.Call{Args: []string{"ps", "--watch", "--json"}, Stream: true, Stdout: lw, Stderr: said})
		if ctx.Err() != nil {
			return
		}
		if got {
			delay = reconnectMin // it had come back
		}
		fn(h.unreachable(whyNot(err, said)), nil, true)
		if hosts.Pause(ctx, jittered(delay)) != nil {
			return
		}
		delay = min(2*delay, reconnectMax)
	}
}

// remember keeps what the host said last, for the rows shown while it cannot be reached.
func (h *hostFleet) remember(rows []topRow, all bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if all || h.last == nil {
		h.last = map[string]topRow{}
	}
	for _, r := range rows {
		if r.Gone {
			delete(h.last, r.Name)
		} else {
			h.last[r.Name] = r
		}
	}
}

// unreachable is every row of the host as it last said, marked unreachable for why; one row
// with no name when it said nothing yet.
func (h *hostFleet) unreachable(why string) []topRow {
	h.mu.Lock()
	defer h.mu.Unlock()
	rows := make([]topRow, 0, len(h.last))
	for _, r := range h.last {
		r.Unreachable = why
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		rows = append(rows, topRow{Host: h.label(), Unreachable: why})
	}
	return rows
}

// whyNot is in one line why a command on a host did not answer: ssh's reason, or what the
// host's agt said.
func whyNot(err error, said *boundedBuffer) string {
	var u *hosts.Unreachable
	var exit *hosts.ExitError
	switch {
	case errors.As(err, &u):
		return u.Reason
	case errors.As(err, &exit) && said.firstLine() != "":
		return said.firstLine()
	case err != nil:
		return err.Error()
	}
	return "its stream ended"
}

// rowOfPs is the row of a line of a host's ps --watch (a row as ps --json writes it, or a gone
// line); ok is false for anything else. Its words stay as the host sent them: they are made
// safe where they are drawn, as an agent's are.
func rowOfPs(line []byte, host string) (topRow, bool) {
	r := gjson.ParseBytes(line)
	name := r.Get("name").String()
	if !r.IsObject() || state.ValidateName(name) != nil {
		return topRow{}, false
	}
	if r.Get("gone").Bool() {
		return topRow{Host: host, Name: name, Gone: true}, true
	}
	row := topRow{
		Host: host, Name: name, Kind: r.Get("kind").String(), State: r.Get("state").String(),
		Reason: r.Get("reason").String(), Error: r.Get("error").String(), Doing: r.Get("doing").String(),
		Since: r.Get("since").Time(), Workspace: r.Get("workspace.path").String(),
	}
	if row.Workspace == "" {
		row.Workspace = r.Get("dir").String()
	}
	if c := r.Get("cost_usd"); c.Type == gjson.Number {
		row.CostUSD = roundUSD(c.Float())
	}
	if w := r.Get("waiting_for"); w.IsObject() {
		var wf spawn.Waiting
		if json.Unmarshal([]byte(w.Raw), &wf) == nil {
			row.Waiting = &wf
		}
	}
	return row, true
}

// act runs the command of act on the host (agt approve, deny, send, interrupt, stop there),
// which judges it as it would here, and says what it did.
func (h *hostFleet) act(ctx context.Context, act fleetAction, row *topRow) (string, error) {
	name, q := row.Name, qualified(h.label(), row.Name)
	call := &hosts.Call{}
	switch act.What {
	case "approve":
		call.Args = []string{"approve"}
		if act.Always {
			call.Args = append(call.Args, "--always")
		}
	case "deny":
		call.Args = []string{"deny"}
		if act.Text != "" {
			call.Args = append(call.Args, "--message="+act.Text)
		}
	case "send":
		call.Args = []string{"send", "--json"}
		if act.Queue {
			call.Args = append(call.Args, "--queue")
		}
		call.Args = append(call.Args, name, "-") // the message on stdin, never in argv
		call.Stdin = strings.NewReader(act.Text)
	case "interrupt":
		call.Args = []string{"interrupt", name}
	case "stop":
		call.Args = []string{"stop", "--json", name}
	default:
		return "", fmt.Errorf("no action %q: want approve, deny, send, interrupt or stop", act.What)
	}
	if act.What == "approve" || act.What == "deny" {
		call.Args = append(call.Args, name)
		if act.ID != "" {
			call.Args = append(call.Args, act.ID)
		}
	}
	var out bytes.Buffer
	said := &boundedBuffer{max: 64 << 10}
	call.Stdout, call.Stderr = &limitedWriter{w: &out, n: 1 << 20}, said
	if err := h.place.Run(ctx, call); err != nil {
		return "", errors.New(termsafe.Text(h.label() + ": " + whyNot(err, said)))
	}
	switch act.What {
	case "approve", "deny":
		text, named := hostLine(termsafe.Text(said.firstLine()), h.label(), []string{name})
		if !named {
			text = termsafe.Text(h.label()) + ": " + text
		}
		return text, nil // allowed box1:fix Bash (req-1)
	case "send":
		how := "sent to"
		if gjson.GetBytes(out.Bytes(), "queued").Bool() {
			how = "queued for"
		}
		return fmt.Sprintf("%s %s (%d bytes)", how, q, len(act.Text)), nil
	case "interrupt":
		return "interrupted " + q, nil
	}
	return stoppedLine(q, cell(gjson.GetBytes(out.Bytes(), "to").String())), nil
}

// jittered is d within ±20 %: hosts that dropped together do not all come back at once.
func jittered(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// boundedBuffer keeps the first max bytes written to it: what a host's command said on stderr.
type boundedBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - len(b.b); room > 0 {
		b.b = append(b.b, p[:min(len(p), room)]...)
	}
	return len(p), nil
}

// firstLine is its first line that says something, without agt's "agt: " before it.
func (b *boundedBuffer) firstLine() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, line := range strings.Split(string(b.b), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			return strings.TrimPrefix(line, "agt: ")
		}
	}
	return ""
}

// limitedWriter passes on the first n bytes written to it and drops the rest.
type limitedWriter struct {
	w *bytes.Buffer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if room := l.n - l.w.Len(); room > 0 {
		l.w.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
