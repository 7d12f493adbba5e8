package commands

import (
	"context"
	"sort"
	"time"

	"github.com/tidwall/gjson"

	"agt/spawn"
	"agt/state"
	"agt/stream"
)

// topRow is one agent as top shows it. Text an agent controls (reasons, what it waits for,
// what it does) is kept as it came and made safe where it is drawn. Host is "" for the agents
// of this machine: rows from other hosts are more rows of the same list, and a HOST column
// appears when any has one.
type topRow struct {
	Host, Name, Kind, State, Reason, Error string
	// Waiting is what it waits on a person for, nil when it waits for nobody.
	Waiting *spawn.Waiting
	// Doing is the tool in flight; Since when the state began (a turn's time while running).
	Doing     string
	Since     time.Time
	CostUSD   *float64
	Workspace string
	// Gone: the agent's record went (agt rm); the row goes with the next update.
	Gone bool
}

// key names a row across sources.
func (r *topRow) key() string { return r.Host + ":" + r.Name }

// needs reports whether the agent needs its user: it waits for one, or it failed.
func (r *topRow) needs() bool {
	return r.Waiting != nil || r.State == stream.Failed || r.State == stream.Lost
}

// rank orders rows: those that need the user first (a permission or a plan before a question of
// input), then those at work, then the ended.
func (r *topRow) rank() int {
	switch {
	case r.Waiting != nil && (r.Waiting.Reason == stream.ReasonPermission || r.Waiting.Reason == stream.ReasonPlan):
		return 0
	case r.State == stream.Failed || r.State == stream.Lost:
		return 1
	case r.Waiting != nil:
		return 2
	case stream.IsFinal(r.State):
		return 4
	}
	return 3
}

// sortRows puts rows in top's order: rank, then host and name.
func sortRows(rows []topRow) {
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := &rows[i], &rows[j]
		if ra, rb := a.rank(), b.rank(); ra != rb {
			return ra < rb
		}
		if a.Host != b.Host {
			return a.Host < b.Host
		}
		return a.Name < b.Name
	})
}

// localFleet is the source of rows for the agents of one run directory, fed by one Watcher.
type localFleet struct {
	d *state.Dir
	w *state.Watcher
}

func newLocalFleet(ctx context.Context, d *state.Dir) *localFleet {
	return &localFleet{d: d, w: d.Watch(ctx)}
}

// all reads every agent's row.
func (f *localFleet) all() []topRow {
	names, _ := f.d.Names()
	rows := make([]topRow, 0, len(names))
	for _, n := range names {
		rows = append(rows, f.row(n))
	}
	return rows
}

// changed reads the rows of the agents whose records changed since the last call, every row
// when the watcher lost track; logged lists the agents whose logs grew.
func (f *localFleet) changed() (rows []topRow, logged map[string]bool, all bool) {
	ch, all := f.w.Take()
	logged = map[string]bool{}
	if all {
		return f.all(), nil, true
	}
	for name, what := range ch {
		if what&state.Changed != 0 {
			rows = append(rows, f.row(name))
		}
		if what&state.Logged != 0 {
			logged[name] = true
		}
	}
	return rows, logged, false
}

// row reads one agent's row: its status (one small file) and, when it waits on a request,
// its inbox.
func (f *localFleet) row(name string) topRow {
	a, err := f.d.Agent(name)
	if err != nil {
		return topRow{Name: name, Gone: true}
	}
	st := spawn.Observe(a)
	r := topRow{
		Name: name, Kind: st.Kind, State: st.State, Reason: st.Reason, Error: st.Error,
		Doing: st.Doing, Since: st.Since, Waiting: spawn.WaitingFor(a, st),
	}
	if st.CostUSD != nil {
		r.CostUSD = roundUSD(*st.CostUSD)
	}
	if len(st.Workspace) > 0 {
		r.Workspace = gjson.GetBytes(st.Workspace, "path").String()
	}
	if r.Workspace == "" {
		r.Workspace = st.Dir
	}
	return r
}

// agent opens the agent a row names, for the actions.
func (f *localFleet) agent(r *topRow) (*state.Agent, error) {
	return f.d.Agent(r.Name)
}
