package commands

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"
	"github.com/urfave/cli/v2"

	"agt/spawn"
	"agt/state"
	"agt/stream"
)

// eventTypes are the types of schema v1, which --type takes.
var eventTypes = stream.Types

func tailCommand() *cli.Command {
	return &cli.Command{
		Name:  "tail",
		Usage: "print agents' events: a transcript on a terminal, NDJSON otherwise",
		UsageText: "agt tail [-f] [-n N] [--since DURATION|TIME] [--type TYPE,...] [--json | --format T] [NAME...]\n\n" +
			"Prints the events of the named agents (every agent without NAME), merged in time order: a\n" +
			"transcript on a terminal, NDJSON otherwise.\n\n" +
			"EXAMPLES:\n" +
			"   agt tail demo\n" +
			"   agt tail -f --type output,exit demo\n" +
			"   agt tail -f -n 0            # what every agent does from now on\n" +
			"   agt tail -n 20 --since 10m\n" +
			"   agt tail -f --after 41 demo  # resume after the last event seen (seq 41)\n" +
			"   agt tail --format '{{.agent}} {{.type}} {{.line}}' demo",
		Description: helpText("tail"),
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "print new events as they come: until the named agents end, or with no NAME until interrupted"},
			&cli.IntFlag{Name: "lines", Aliases: []string{"n"}, Usage: "print only the last `N` events of each agent (0: none, only new ones with -f)", DefaultText: "all"},
			&cli.StringFlag{Name: "since", Usage: "only events newer than a `DURATION` ago or an RFC 3339 TIME"},
			&cli.StringSliceFlag{Name: "after", Usage: "only events after `SEQ` (every agent named), or NAME=SEQ (repeatable): resumes where a reader left off; -n does not limit such an agent's"},
			&cli.StringSliceFlag{Name: "type", Usage: "only events of these `TYPE`s (comma-separated, repeatable): " + strings.Join(eventTypes, ", ")},
			&cli.BoolFlag{Name: "seqs", Hidden: true, Usage: "after the events, each agent's last seq (what agt asks of a host before it follows)"},
			jsonFlag(),
			formatFlag("tail", stream.Event{}, "{{.agent}} {{.type}}"),
		},
		Action: runTail,
	}
}

func runTail(c *cli.Context) error {
	f := tailFilter{last: -1}
	if c.IsSet("lines") {
		if f.last = c.Int("lines"); f.last < 0 {
			return usagef(c, "-n %d: must not be negative", f.last)
		}
	}
	var err error
	if f.since, err = parseSince(c, c.String("since")); err != nil {
		return err
	}
	if err := f.parseAfter(c, c.StringSlice("after")); err != nil {
		return err
	}
	for _, t := range c.StringSlice("type") {
		for _, t := range strings.Split(t, ",") {
			if t = strings.TrimSpace(t); t == "" {
				continue
			}
			if !slices.Contains(eventTypes, t) {
				return usagef(c, "--type %q: not an event type; want one of %s", t, strings.Join(eventTypes, ", "))
			}
			if f.types == nil {
				f.types = map[string]bool{}
			}
			f.types[t] = true
		}
	}
	out, err := outputFor(c)
	if err != nil {
		return err
	}
	agents, err := targets(c, "", true)
	if err != nil {
		return err
	}
	if out.mode == modeTable {
		names := make([]string, len(agents))
		for i, a := range agents {
			names[i] = a.Name
		}
		out.view = newTranscript(out, names)
		out.view.bell = c.Bool("follow") && isTerminal(c.App.Writer) && bellWanted()
	}
	if c.Bool("follow") {
		var all *state.Dir
		if c.Args().Len() == 0 {
			// No NAME: every agent, and those started later, until interrupted.
			if all, err = openRunDir(c); err != nil {
				return err
			}
		}
		return followEvents(c.Context, out, agents, f, all)
	}
	bw := bufio.NewWriterSize(out.w, 64<<10)
	out.w = bw
	cursors, lastSeqs, err := printPast(out, agents, f)
	if err != nil {
		return err
	}
	closeAll(cursors)
	if c.Bool("seqs") && out.mode == modeJSON {
		for i, a := range agents {
			fmt.Fprintf(bw, "{\"agent\":%s,\"last_seq\":%d}\n", stream.AppendString(nil, a.Name), lastSeqs[i])
		}
	}
	return bw.Flush()
}

// tailFilter selects events.
type tailFilter struct {
	types map[string]bool
	since time.Time
	last  int // the last events of each agent that the past shows; -1 all
	// after holds where readers left off (--after): an agent's events up to its seq are not
	// shown; "" is every agent's.
	after map[string]int64
}

func (f tailFilter) match(line []byte) bool {
	if f.after != nil {
		if after, ok := f.afterOf(gjson.GetBytes(line, "agent").String()); ok && gjson.GetBytes(line, "seq").Int() <= after {
			return false
		}
	}
	if f.types != nil && !f.types[gjson.GetBytes(line, "type").String()] {
		return false
	}
	if !f.since.IsZero() {
		ts, err := time.Parse(time.RFC3339Nano, gjson.GetBytes(line, "ts").String())
		if err != nil || ts.Before(f.since) {
			return false
		}
	}
	return true
}

type pastEvent struct {
	ts   time.Time
	seq  int64
	line []byte
}

// pastEventOf copies an event line for later, with the time and seq it is sorted by.
func pastEventOf(line []byte) pastEvent {
	ts, _ := time.Parse(time.RFC3339Nano, gjson.GetBytes(line, "ts").String())
	return pastEvent{ts, gjson.GetBytes(line, "seq").Int(), append([]byte(nil), line...)}
}

// printPast prints the events already logged (the last f.last of each agent), merged in time
// order, and returns a cursor at the end of each log and the last seq there. Each log is read
// backwards from its end, then its rotated files, newest first, until f.last events matched:
// tail -n 1 reads a block of a log of any size, and memory holds only what is printed.
func printPast(out *output, agents []*state.Agent, f tailFilter) ([]*state.Cursor, []int64, error) {
	cursors := make([]*state.Cursor, len(agents))
	lastSeqs := make([]int64, len(agents))
	var events []pastEvent
	for i, a := range agents {
		var mine []pastEvent // newest first
		var oldest int64     // the smallest seq read: a file read twice across a rotation
		last := f.last
		after, resumed := f.afterOf(a.Name)
		if resumed {
			last = -1 // everything after where the reader left off
		}
		collect := func(line []byte) bool {
			if last == 0 {
				return false
			}
			seq := gjson.GetBytes(line, "seq").Int()
			if seq > 0 {
				if oldest > 0 && seq >= oldest {
					return true
				}
				oldest = seq
				lastSeqs[i] = max(lastSeqs[i], seq)
				if resumed && seq <= after {
					return false // the reader has this one and all before it
				}
			}
			if f.match(line) {
				mine = append(mine, pastEventOf(line))
			}
			return last < 0 || len(mine) < last
		}
		path := a.Path(state.EventsFile)
		c, err := state.ReadLogBack(path, collect)
		if err == nil {
			cursors[i] = c
			lastSeqs[i] = max(lastSeqs[i], c.Seq())
			if last < 0 || len(mine) < last {
				err = state.ReadRotatedBack(path, collect)
			}
		}
		if err != nil {
			closeAll(cursors)
			return nil, nil, fmt.Errorf("read events of %s: %w", a.Name, err)
		}
		if resumed && oldest > after+1 {
			// What followed after was rotated away: say how much, as a follower does.
			gap := stream.Event{V: stream.Version, TS: time.Now(), Agent: a.Name, Seq: oldest - 1, Type: stream.TypeGap,
				Missed: oldest - 1 - after, FromSeq: after + 1, ToSeq: oldest - 1}
			if line := gap.AppendJSON(nil); f.match(line) {
				mine = append(mine, pastEvent{seq: gap.Seq, line: line})
				if len(mine) > 1 {
					mine[len(mine)-1].ts = mine[len(mine)-2].ts // sorted just before the oldest kept
				}
			}
		}
		slices.Reverse(mine)
		events = append(events, mine...)
	}
	sort.SliceStable(events, func(i, j int) bool {
		if !events[i].ts.Equal(events[j].ts) {
			return events[i].ts.Before(events[j].ts)
		}
		return events[i].seq < events[j].seq
	})
	for _, e := range events {
		if err := printEvent(out, e.line); err != nil {
			closeAll(cursors)
			return nil, nil, err
		}
	}
	return cursors, lastSeqs, nil
}

func closeAll(cursors []*state.Cursor) {
	for _, c := range cursors {
		c.Close()
	}
}

// printEvent prints one event line as out says: as is (NDJSON), through the template, or in
// the transcript.
func printEvent(out *output, line []byte) error {
	line = bytes.TrimSuffix(line, []byte{'\n'})
	out.status.hide()
	switch out.mode {
	case modeTable:
		if out.view == nil {
			out.view = newTranscript(out, nil)
		}
		return out.view.event(out.w, line)
	case modeTemplate:
		if !gjson.ValidBytes(line) {
			return nil // broken lines are skipped, as the reader does
		}
		return out.item(nil, roundCost(line))
	}
	return out.item(nil, roundCost(line))
}

// followEvents prints what is logged, then new events as they come, until every agent has
// reached a final state (or is lost), or ctx ends. With all set (tail -f with no NAME) it also
// follows every agent that appears in all later, and agents that start again, until ctx ends.
func followEvents(ctx context.Context, out *output, agents []*state.Agent, f tailFilter, all *state.Dir) error {
	// Events are written through a buffer, flushed after every drain of a log: a flood of
	// small events costs one write per batch, not one per event.
	bw := bufio.NewWriterSize(out.w, 64<<10)
	buffered := *out
	buffered.w = bw
	out = &buffered
	cursors, lastSeqs, err := printPast(out, agents, f)
	if err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		closeAll(cursors)
		return err
	}
	if out.view != nil {
		out.view.live = true // the past is printed: what comes now may ring the bell
	}
	fl := &follower{ctx: ctx, out: out, bw: bw, f: f, following: map[string]*followed{}}
	for i, a := range agents {
		fl.start(a, cursors[i], &followed{lastSeq: lastSeqs[i]})
	}
	if all != nil {
		fl.discover(all)
	}
	fl.wg.Wait()
	if err := bw.Flush(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err // interrupted: main exits 128+N, quietly
	}
	return fl.err
}

// follower follows agents' logs, one goroutine each, printing through one buffer.
type follower struct {
	ctx context.Context
	out *output
	bw  *bufio.Writer
	f   tailFilter
	wg  sync.WaitGroup

	mu        sync.Mutex // guards the writer and what follows
	err       error
	following map[string]*followed
}

// followed is an agent that tail -f has followed: where its log stood when its follower ended.
type followed struct {
	dir     os.FileInfo // its directory: another one of the same name is another agent
	active  bool
	lastSeq int64 // the last event printed
	size    int64 // of its log when its follower ended
}

// start follows a's log from c (from its start when c is nil), printing only the events after
// fd.lastSeq, the last one of a already printed.
func (fl *follower) start(a *state.Agent, c *state.Cursor, fd *followed) {
	dir, _ := os.Stat(a.Dir)
	fl.mu.Lock()
	if fd.dir == nil {
		fd.dir = dir
	}
	fd.active = true
	fl.following[a.Name] = fd
	fl.mu.Unlock()
	fl.wg.Add(1)
	go func() {
		defer fl.wg.Done()
		// Probing the agent's status and lock after every drain would cost a flood two
		// file reads per batch: while lines flow and none of them ends the agent, it has
		// not ended. A drain that brought nothing, or a final state event, asks.
		lines, final := 0, false
		err := state.FollowLogFrom(fl.ctx, a.Path(state.EventsFile), c, func(line []byte) error {
			lines++
			if gjson.GetBytes(line, "type").String() == stream.TypeState && stream.IsFinal(gjson.GetBytes(line, "to").String()) {
				final = true
			}
			fl.mu.Lock()
			defer fl.mu.Unlock()
			seq := gjson.GetBytes(line, "seq").Int()
			if seq != 0 && seq <= fd.lastSeq {
				return nil // printed by an earlier follower of a
			}
			fd.lastSeq = max(fd.lastSeq, seq)
			if !fl.f.match(line) {
				return nil
			}
			return printEvent(fl.out, line)
		}, func(from, to int64) error {
			// The follower fell further behind than the rotated logs kept: say so.
			fl.mu.Lock()
			defer fl.mu.Unlock()
			if to <= fd.lastSeq {
				return nil
			}
			from = max(from, fd.lastSeq+1)
			fd.lastSeq = to
			ev := stream.Event{V: stream.Version, TS: time.Now(), Agent: a.Name, Seq: to, Type: stream.TypeGap,
				Missed: to - from + 1, FromSeq: from, ToSeq: to}
			line := ev.AppendJSON(nil)
			if !fl.f.match(line) {
				return nil
			}
			return printEvent(fl.out, line)
		}, func() bool {
			fl.mu.Lock()
			fl.bw.Flush()
			fl.mu.Unlock()
			busy := lines > 0 && !final
			lines, final = 0, false
			return !busy && ended(a)
		})
		fl.mu.Lock()
		defer fl.mu.Unlock()
		fd.active = false
		if fi, serr := os.Stat(a.Path(state.EventsFile)); serr == nil {
			fd.size = fi.Size()
		}
		if err != nil && fl.err == nil && fl.ctx.Err() == nil {
			fl.err = err
		}
	}()
}

// discover follows, until ctx ends, every agent of d that appears, and every one whose log
// grows again after its follower ended (agt restart). It looks four times a second: a new
// agent's events print from its first, so nothing is lost to the wait.
func (fl *follower) discover(d *state.Dir) {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-fl.ctx.Done():
			return
		case <-tick.C:
		}
		agents, err := d.Agents()
		if err != nil {
			continue
		}
		for _, a := range agents {
			fl.mu.Lock()
			fd := fl.following[a.Name]
			var was followed
			if fd != nil {
				was = *fd
			}
			fl.mu.Unlock()
			if fd != nil && was.active {
				continue
			}
			dir, err := os.Stat(a.Dir)
			if err != nil {
				continue
			}
			switch {
			case fd == nil || was.dir == nil || !os.SameFile(was.dir, dir):
				fl.start(a, nil, &followed{dir: dir}) // a new agent
			default:
				if fi, err := os.Stat(a.Path(state.EventsFile)); err == nil && fi.Size() != was.size {
					fl.start(a, nil, fd) // it runs again: from where it was
				}
			}
		}
	}
}

// ended reports whether a will write no more events: it is final, or its supervisor is gone.
func ended(a *state.Agent) bool {
	if _, err := os.Stat(a.Dir); err != nil {
		return true // the record is gone: nothing will write to it
	}
	st := spawn.Observe(a)
	return stream.IsFinal(st.State) || st.State == stream.Lost
}

// parseSince parses --since: an age back from now (10m, 36h, 2d, as reap --prune takes), or an
// RFC 3339 time.
func parseSince(c *cli.Context, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := parseAge(s); err == nil {
		return time.Now().Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	return time.Time{}, usagef(c, "--since %q: want a duration (10m, 2d) or an RFC 3339 time", s)
}

// parseAfter reads --after: SEQ, where every agent's readers left off, or NAME=SEQ.
func (f *tailFilter) parseAfter(c *cli.Context, values []string) error {
	for _, v := range values {
		for _, v := range strings.Split(v, ",") {
			name, seqText, ok := strings.Cut(strings.TrimSpace(v), "=")
			if !ok {
				name, seqText = "", name
			} else if err := state.ValidateName(name); err != nil {
				return usagef(c, "--after %q: %v", v, err)
			}
			seq, err := strconv.ParseInt(seqText, 10, 64)
			if err != nil || seq < 0 {
				return usagef(c, "--after %q: want SEQ or NAME=SEQ, SEQ a number 0 or more", v)
			}
			if f.after == nil {
				f.after = map[string]int64{}
			}
			f.after[name] = seq
		}
	}
	return nil
}

// afterOf is where the readers of name left off, and whether --after says.
func (f tailFilter) afterOf(name string) (int64, bool) {
	if seq, ok := f.after[name]; ok {
		return seq, true
	}
	seq, ok := f.after[""]
	return seq, ok
}
