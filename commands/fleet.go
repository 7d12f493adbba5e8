package commands

import (
	"context"
	"fmt"
	"sync"

	"github.com/urfave/cli/v2"

	"agt/hosts"
	"agt/state"
)

// A fleetSource gives agt top and agt serve the rows of some agents and does what a person asks
// of them: this machine's run directory (localFleet), or a host's (hostFleet), whose rows come
// over one long-lived stream. Every other part of top and serve works on rows, whatever their
// source: another host is another source.
type fleetSource interface {
	// label is the Host of its rows: "" for this machine when no host is in play, else the
	// place's name ("local" for this machine).
	label() string
	// rows are the rows known at once: every one of this machine's; a host's come in its first
	// batch.
	rows() []topRow
	// batches hands fn what changed, a batch at a time, until ctx ends. all: rows are every row
	// of this source, and those it no longer has went.
	batches(ctx context.Context, fn func(rows []topRow, logged map[string]bool, all bool))
	// act does act to the agent of row and says what it did in one line.
	act(ctx context.Context, act fleetAction, row *topRow) (string, error)
}

// fleet is every source that top or serve shows.
type fleet struct {
	sources []fleetSource
	// local is this machine's run directory, nil when it is not shown (--host box2).
	local *localFleet
}

// newFleet is the fleet of the places plan chose (this machine's run directory d when it is one
// of them), or of d alone when plan is nil (no host in play).
func newFleet(ctx context.Context, c *cli.Context, plan *hostPlan) (*fleet, error) {
	if plan == nil {
		d, err := openRunDir(c)
		if err != nil {
			return nil, err
		}
		return fleetHere(ctx, d), nil
	}
	f := &fleet{}
	for _, pl := range plan.chosen {
		if pl.Name() == hosts.Local {
			d, err := openRunDir(c)
			if err != nil {
				return nil, err
			}
			f.local = newLocalFleet(ctx, d)
			f.local.host = hosts.Local
			f.sources = append(f.sources, f.local)
			continue
		}
		f.sources = append(f.sources, &hostFleet{place: pl})
	}
	return f, nil
}

// fleetHere is the fleet of the run directory d alone.
func fleetHere(ctx context.Context, d *state.Dir) *fleet {
	l := newLocalFleet(ctx, d)
	return &fleet{local: l, sources: []fleetSource{l}}
}

// rows are the rows known at once.
func (f *fleet) rows() []topRow {
	var rows []topRow
	for _, s := range f.sources {
		rows = append(rows, s.rows()...)
	}
	return rows
}

// run hands fn each source's batches, one source at a time, until ctx ends; it returns when
// every source has stopped.
func (f *fleet) run(ctx context.Context, fn func(host string, rows []topRow, logged map[string]bool, all bool)) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, s := range f.sources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.batches(ctx, func(rows []topRow, logged map[string]bool, all bool) {
				mu.Lock()
				defer mu.Unlock()
				fn(s.label(), rows, logged, all)
			})
		}()
	}
	wg.Wait()
}

// source is the source of the rows of host, nil when there is none.
func (f *fleet) source(host string) fleetSource {
	for _, s := range f.sources {
		if s.label() == host {
			return s
		}
	}
	return nil
}

// act does act to the agent of row, at its source.
func (f *fleet) act(ctx context.Context, act fleetAction, row *topRow) (string, error) {
	s := f.source(row.Host)
	if s == nil {
		return "", fmt.Errorf("no host %q here", row.Host)
	}
	if row.Name == "" {
		return "", fmt.Errorf("%s cannot be reached: no agent of it to %s", row.Host, act.What)
	}
	return s.act(ctx, act, row)
}

// hostOfRow is the place of a row from a host, nil for this machine's.
func (f *fleet) hostOfRow(row *topRow) *hostFleet {
	h, _ := f.source(row.Host).(*hostFleet)
	return h
}
