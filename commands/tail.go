package commands

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"
	"github.com/urfave/cli/v2"

	"agt/spawn"
	"agt/state"
	"agt/stream"
)

func tailCommand() *cli.Command {
	return &cli.Command{
		Name:  "tail",
		Usage: "print agents' events as NDJSON",
		UsageText: "agt tail [-f] [-n N] [--since DURATION|TIME] [--type TYPE,...] [NAME...]\n\n" +
			"Prints the events of the named agents (all when none is named), merged in time order.\n\n" +
			"EXAMPLES:\n" +
			"   agt tail demo\n" +
			"   agt tail -f --type output,exit demo\n" +
			"   agt tail -n 20 --since 10m\n" +
			"   agt tail --format '{{.Agent}} {{.Type}} {{.Line}}' demo",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "print new events as they come, until every agent has ended"},
			&cli.IntFlag{Name: "lines", Aliases: []string{"n"}, Usage: "print only the last `N` events (0: all)", DefaultText: "all"},
			&cli.StringFlag{Name: "since", Usage: "only events newer than a `DURATION` ago or an RFC 3339 TIME"},
			&cli.StringSliceFlag{Name: "type", Usage: "only events of these `TYPE`s (comma-separated, repeatable)"},
			formatFlag("{{.Agent}} {{.Type}}"),
		},
		Action: func(c *cli.Context) error {
			f := tailFilter{last: c.Int("lines")}
			if f.last < 0 {
				return usagef(c, "-n %d: must not be negative", f.last)
			}
			var err error
			if f.since, err = parseSince(c, c.String("since")); err != nil {
				return err
			}
			for _, t := range c.StringSlice("type") {
				for _, t := range strings.Split(t, ",") {
					if t = strings.TrimSpace(t); t != "" {
						if f.types == nil {
							f.types = map[string]bool{}
						}
						f.types[t] = true
					}
				}
			}
			out, err := outputFor(c)
			if err != nil {
				return err
			}
			if out.mode == modeTable {
				out.mode = modeJSON // events are NDJSON on a terminal too
			}
			agents, err := targets(c, "", true)
			if err != nil {
				return err
			}
			if !c.Bool("follow") {
				bw := bufio.NewWriterSize(out.w, 64<<10)
				out.w = bw
				cursors, err := printPast(out, agents, f)
				if err != nil {
					return err
				}
				closeAll(cursors)
				return bw.Flush()
			}
			return followEvents(c.Context, out, agents, f)
		},
	}
}

// tailFilter selects events.
type tailFilter struct {
	types map[string]bool
	since time.Time
	last  int
}

func (f tailFilter) match(line []byte) bool {
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

// printPast prints the events already logged, merged in time order, and returns each log's
// offset past its last complete line.
func printPast(out *output, agents []*state.Agent, f tailFilter) ([]*state.Cursor, error) {
	cursors := make([]*state.Cursor, len(agents))
	var events []pastEvent
	keep := func(line []byte) error {
		if f.match(line) {
			ts, _ := time.Parse(time.RFC3339Nano, gjson.GetBytes(line, "ts").String())
			events = append(events, pastEvent{ts, gjson.GetBytes(line, "seq").Int(), append([]byte(nil), line...)})
		}
		return nil
	}
	for i, a := range agents {
		// The current log first, held open for a follower; then the rotated one, unless it
		// is the file just read (rotated in between). Sorting puts them in order.
		path := a.Path(state.EventsFile)
		c, _, err := state.ReadLogCursor(path, keep)
		if err != nil {
			closeAll(cursors)
			return nil, err
		}
		cursors[i] = c
		if fi, err := os.Stat(path + state.RotatedSuffix); err == nil && !c.SameFile(fi) {
			if _, _, err := state.ReadLog(path+state.RotatedSuffix, keep); err != nil {
				closeAll(cursors)
				return nil, err
			}
		}
	}
	sort.SliceStable(events, func(i, j int) bool {
		if !events[i].ts.Equal(events[j].ts) {
			return events[i].ts.Before(events[j].ts)
		}
		return events[i].seq < events[j].seq
	})
	if f.last > 0 && len(events) > f.last {
		events = events[len(events)-f.last:]
	}
	for _, e := range events {
		if err := printEvent(out, e.line); err != nil {
			closeAll(cursors)
			return nil, err
		}
	}
	return cursors, nil
}

func closeAll(cursors []*state.Cursor) {
	for _, c := range cursors {
		c.Close()
	}
}

func printEvent(out *output, line []byte) error {
	line = bytes.TrimSuffix(line, []byte{'\n'})
	if out.mode != modeTemplate {
		return out.item(nil, line)
	}
	var ev stream.Event
	if err := json.Unmarshal(line, &ev); err != nil {
		return nil // broken lines are skipped, as the reader does
	}
	return out.item(ev, nil)
}

// followEvents prints what is logged, then new events as they come, until every agent has
// reached a final state (or is lost), or ctx ends.
func followEvents(ctx context.Context, out *output, agents []*state.Agent, f tailFilter) error {
	// Events are written through a buffer, flushed after every drain of a log: a flood of
	// small events costs one write per batch, not one per event.
	bw := bufio.NewWriterSize(out.w, 64<<10)
	buffered := *out
	buffered.w = bw
	out = &buffered
	cursors, err := printPast(out, agents, f)
	if err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		closeAll(cursors)
		return err
	}
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs = make([]error, len(agents))
	)
	for i, a := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Probing the agent's status and lock after every drain would cost a flood two
			// file reads per batch: while lines flow and none of them ends the agent, it has
			// not ended. A drain that brought nothing, or a final state event, asks.
			lines, final := 0, false
			errs[i] = state.FollowLogFrom(ctx, a.Path(state.EventsFile), cursors[i], func(line []byte) error {
				lines++
				if gjson.GetBytes(line, "type").String() == stream.TypeState && stream.IsFinal(gjson.GetBytes(line, "to").String()) {
					final = true
				}
				if !f.match(line) {
					return nil
				}
				mu.Lock()
				defer mu.Unlock()
				return printEvent(out, line)
			}, func() bool {
				mu.Lock()
				bw.Flush()
				mu.Unlock()
				busy := lines > 0 && !final
				lines, final = 0, false
				return !busy && ended(a)
			})
		}()
	}
	wg.Wait()
	if err := bw.Flush(); err != nil {
		return err
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
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
