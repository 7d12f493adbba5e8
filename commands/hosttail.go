package commands

import (
	"context"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/tidwall/gjson"
	"github.com/urfave/cli/v2"

	"agt/hosts"
	"agt/state"
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
	fl := &hostFollower{errw: c.App.ErrWriter, flags: flags, marked: map[string]bool{}}
	for _, g := range plan.groups {
		fl.marked[g.place.Name()] = c.Bool("follow") && runsAgt(g.place)
	}
	outs := runEach(c.Context, c.App.ErrWriter, plan.groups, true, func(i int) *hosts.Call {
		mode := []string{"--json"}
		if fl.marked[plan.groups[i].place.Name()] {
			mode = append(mode, "--seqs") // where each log stands: the follow goes on from there
		}
		return &hosts.Call{Args: joinArgs(c, flags, mode, plan.groups[i].names)}
	})
	var past, marks [][]byte
	order := map[string]int{}
	for i, o := range outs {
		for _, l := range o.lines {
			if isSeqMark(l) {
				marks = append(marks, l) // taken in after the events they follow
			} else {
				past = append(past, l)
			}
		}
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
	fl.out = out
	for _, line := range append(past, marks...) {
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
	// sink, when set, takes each event instead of out (agt top's and agt serve's transcripts).
	sink func(line []byte) error
	// marked: the places asked where each agent's log stood (tail --seqs), whose stream
	// resumes every agent it knows after its seq and shows the others whole: an agent that
	// came after the asking has nothing the user saw.
	marked map[string]bool

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
	if isSeqMark(line) {
		// Where the agent's log stood when the place was asked (tail --seqs): what follows
		// it is new, even when -n showed none of what came before.
		if state.ValidateName(agent) == nil {
			f.last[host][agent] = max(f.last[host][agent], gjson.GetBytes(line, "last_seq").Int())
		}
		return nil
	}
	if seq > 0 {
		if seq <= f.last[host][agent] {
			return nil // printed before the link broke
		}
		f.last[host][agent] = seq
	}
	if f.sink != nil {
		return f.sink(line)
	}
	if f.out.mode == modeTable {
		line = relabel(line, qualified(host, agent))
	}
	return printEvent(f.out, line)
}

// runsAgt reports whether a place runs agt itself (this machine, an SSH host), and so takes
// agt's hidden flags; an engine answers a few verbs its own way.
func runsAgt(pl hosts.Place) bool {
	switch pl.(type) {
	case *hosts.This, *hosts.SSH:
		return true
	}
	return false
}

// isSeqMark tells tail --seqs's closing lines, where an agent's log stood, from events.
func isSeqMark(line []byte) bool {
	return gjson.GetBytes(line, "last_seq").Exists() && !gjson.GetBytes(line, "type").Exists()
}

// resume makes the follower start the stream of agent of host after seq.
func (f *hostFollower) resume(host, agent string, seq int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.last == nil {
		f.last = map[string]map[string]int64{}
	}
	if f.last[host] == nil {
		f.last[host] = map[string]int64{}
	}
	f.last[host][agent] = seq
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
	if f.marked[host] {
		out = append([]string{"--after=0"}, out...)
	}
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
		wait := jittered(delay)
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
