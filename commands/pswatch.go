package commands

import (
	"context"
	"encoding/json"
	"io"
	"sort"

	"github.com/urfave/cli/v2"

	"agt/hosts"
	"agt/spawn"
	"agt/state"
)

// ps --watch is the stream of rows that agt top and agt serve read of a host: one connection
// that stays open and says what changed as it changes, where polling would pay an ssh session
// a second. It is a hidden flag: what agt asks of another agt over a link (hosts.Protocol).
//
// What it writes, one JSON object a line, a batch at a time:
//
//	{"name":"fix",...}                 a row, as ps --json writes it
//	{"name":"old","gone":true}         an agent whose record went
//	{"batch":"all","logged":["fix"]}   the end of a batch: "all" when its rows are every agent
//	                                   (the first batch, or after the watcher lost track), else
//	                                   "changed"; logged names the agents whose logs grew
//
// It ends when ctx does: over a link, when the link does (--end-on-eof).

// watchBatchEnd ends a batch of ps --watch.
type watchBatchEnd struct {
	Batch  string   `json:"batch"`
	Logged []string `json:"logged,omitempty"`
}

// watchPs writes d's rows as they change until ctx ends.
func watchPs(ctx context.Context, w io.Writer, d *state.Dir) error {
	watcher := d.Watch(ctx) // before the first listing: a change meanwhile is not lost
	names, err := d.Names()
	if err != nil {
		return err
	}
	if err := writeWatchBatch(w, d, names, nil, true); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-watcher.Ready():
		}
		if err := hosts.Pause(ctx, topBatch); err != nil {
			return nil
		}
		changed, all := watcher.Take()
		if all {
			if names, err = d.Names(); err != nil {
				return err
			}
			if err := writeWatchBatch(w, d, names, nil, true); err != nil {
				return err
			}
			continue
		}
		var rows, logged []string
		for name, what := range changed {
			if what&state.Changed != 0 {
				rows = append(rows, name)
			}
			if what&state.Logged != 0 {
				logged = append(logged, name)
			}
		}
		if len(rows) == 0 && len(logged) == 0 {
			continue
		}
		sort.Strings(rows)
		sort.Strings(logged)
		if err := writeWatchBatch(w, d, rows, logged, false); err != nil {
			return err
		}
	}
}

// writeWatchBatch writes the rows of names (a gone line for an agent whose record went), then
// the batch's end, in one write.
func writeWatchBatch(w io.Writer, d *state.Dir, names, logged []string, all bool) error {
	var b []byte
	for _, name := range names {
		if state.ValidateName(name) != nil {
			continue // an agt rm under way renames the directory first
		}
		a, err := d.Agent(name)
		if err != nil {
			if !all {
				gone, _ := json.Marshal(struct {
					Name string `json:"name"`
					Gone bool   `json:"gone"`
				}{name, true})
				b = append(append(b, gone...), '\n')
			}
			continue
		}
		st := spawn.Observe(a)
		if st.CostUSD != nil {
			st.CostUSD = roundUSD(*st.CostUSD)
		}
		r := psRow{a.Name, st, spawn.WaitingFor(a, st)}
		b = append(r.appendJSON(b), '\n')
	}
	end := watchBatchEnd{Batch: "changed", Logged: logged}
	if all {
		end.Batch = "all"
	}
	e, _ := json.Marshal(end)
	b = append(append(b, e...), '\n')
	_, err := w.Write(b)
	return err
}

// runPsWatch is ps --watch's action: NDJSON of every agent, no NAME, no filter.
func runPsWatch(c *cli.Context) error {
	if c.Args().Len() > 0 || len(c.StringSlice("state")) > 0 || c.Bool("quiet") || c.IsSet("format") {
		return usagef(c, "--watch streams every agent as NDJSON: it takes no NAME, --state, -q or --format")
	}
	d, err := openRunDir(c)
	if err != nil {
		return err
	}
	return watchPs(c.Context, c.App.Writer, d)
}
