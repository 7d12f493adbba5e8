package commands

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/tidwall/gjson"
	"github.com/urfave/cli/v2"

	"agt/hosts"
	"agt/stream"
	"agt/termsafe"
)

// tailOnHosts is tail across hosts. What is logged already is asked of every place at once and
// printed merged in time order; with -f, each place is then followed on a connection of its
// own from the last event printed of each agent (tail --after), again after a broken link, so
// that no event is lost or printed twice.
func tailOnHosts(c *cli.Context, plan *hostPlan) error {
	out, err := outputFor(c)
	if err != nil {
		return err
	}
	flags, err := forwardFlags(c, "json", "format", "follow")
	if err != nil {
		return err
	}
	outs := runEach(c.Context, c.App.ErrWriter, plan.groups, true, func(i int) *hosts.Call {
		return &hosts.Call{Args: joinArgs(c, flags, []string{"--json"}, plan.groups[i].names)}
	})
	var past [][]byte
	order := map[string]int{}
	for i, o := range outs {
		past = append(past, o.lines...)
		order[o.place.Name()] = i
	}
	sort.SliceStable(past, func(i, j int) bool {
		ti, tj := gjson.GetBytes(past[i], "ts").Time(), gjson.GetBytes(past[j], "ts").Time()
		if !ti.Equal(tj) {
			return ti.Before(tj)
		}
		return order[hostOf(past[i])] < order[hostOf(past[j])]
	})
	if out.mode == modeTable {
		labels := []string{}
		for _, l := range past {
			labels = append(labels, qualified(hostOf(l), nameOf(l)))
		}
		out.view = newTranscript(out, labels) // what agents say starts in one column
	}
	fl := &hostFollower{out: out, errw: c.App.ErrWriter, flags: flags}
	for _, line := range past {
		if err := fl.print(line); err != nil {
			return err
		}
	}
	if !c.Bool("follow") {
		return hostExit(c, outs)
	}
	// Follow each place that answered, each from where its agents' events stopped.
	var wg sync.WaitGroup
	errs := make([]error, len(outs))
	for i, o := range outs {
		if o.err != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fl.follow(c.Context, o.place, plan.groups[i].names)
		}()
	}
	wg.Wait()
	if c.Context.Err() != nil {
		return c.Context.Err()
	}
	for i := range outs {
		if outs[i].err == nil && errs[i] != nil {
			outs[i].err = errs[i]
		}
	}
	return hostExit(c, outs)
}

// hostFollower prints events from places, each at most once: it keeps the last seq printed of
// every agent of every place, and resumes a place's stream after them.
type hostFollower struct {
	out   *output
	errw  io.Writer
	flags []string // tail's own flags, for the host's tail -f
	// until, when set, ends the follow after the event for which it reports true.
	until func(line []byte) bool

	mu   sync.Mutex
	last map[string]map[string]int64 // host → agent → seq printed
}

// print prints one tagged event unless its seq was printed already, and remembers it.
func (f *hostFollower) print(line []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	host, agent, seq := hostOf(line), gjson.GetBytes(line, "agent").String(), gjson.GetBytes(line, "seq").Int()
	if f.last == nil {
		f.last = map[string]map[string]int64{}
	}
	if f.last[host] == nil {
		f.last[host] = map[string]int64{}
	}
	if seq > 0 {
		if seq <= f.last[host][agent] {
			return nil // printed before the link broke
		}
		f.last[host][agent] = seq
	}
	if f.out.mode == modeTable {
		line = relabel(line, qualified(host, agent))
	}
	return printEvent(f.out, line)
}

// after is the --after flags that resume a place's stream where its events stopped.
func (f *hostFollower) after(host string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for agent, seq := range f.last[host] {
		out = append(out, fmt.Sprintf("--after=%s=%d", agent, seq))
	}
	sort.Strings(out)
	return out
}

// Reconnection backoff: from reconnectMin, doubling to reconnectMax, with ±20 % jitter.
const (
	reconnectMin = 200 * time.Millisecond
	reconnectMax = 5 * time.Second
)

// follow follows the place's agents (names, or all of them) with tail -f on a connection of
// its own until they end or ctx does. A broken link is tried again, with backoff, resuming
// after the last event printed: a dropped connection costs no event and repeats none.
func (f *hostFollower) follow(ctx context.Context, place hosts.Place, names []string) error {
	host := place.Name()
	delay := reconnectMin
	for {
		got, enough := false, false
		run, stop := context.WithCancel(ctx)
		lw := &lineWriter{fn: func(line []byte) error {
			tagged := tagHost(line, host)
			if tagged == nil || enough {
				return nil
			}
			got = true
			if err := f.print(tagged); err != nil {
				return err
			}
			if f.until != nil && f.until(tagged) {
				enough = true
				stop()
			}
			return nil
		}}
		args := append([]string{"tail", "--follow"}, f.flags...)
		args = append(append(append(args, "--json"), f.after(host)...), names...)
		err := place.Run(run, &hosts.Call{Args: args, Stream: true, Stdout: lw,
			Stderr: &hostDiagnostics{w: f.errw, host: host}})
		stop()
		if cerr := lw.Close(); err == nil {
			err = cerr
		}
		switch {
		case enough && ctx.Err() == nil:
			return nil // what the caller waited for came
		case err == nil:
			return nil // the agents ended
		case ctx.Err() != nil:
			return ctx.Err()
		case !hosts.IsUnreachable(err):
			return err
		}
		if got {
			delay = reconnectMin // it had come back
		}
		wait := time.Duration(float64(delay) * (0.8 + 0.4*rand.Float64()))
		PrintError(f.errw, termsafe.Text(fmt.Sprintf("%s: %s; following again in %s", host, err.(*hosts.Unreachable).Reason, wait.Round(10*time.Millisecond))))
		if err := hosts.Pause(ctx, wait); err != nil {
			return err
		}
		delay = min(2*delay, reconnectMax)
	}
}

// relabel names an event's agent label for people: HOST:NAME in a transcript of several hosts.
func relabel(line []byte, label string) []byte {
	r := gjson.GetBytes(line, "agent")
	if r.Index <= 0 {
		return line
	}
	out := make([]byte, 0, len(line)+len(label))
	out = append(out, line[:r.Index]...)
	out = stream.AppendString(out, label)
	return append(out, line[r.Index+len(r.Raw):]...)
}
