package commands

import (
	"context"
	"sort"
	"sync"

	"agt/hosts"
)

// serveHub is the server's one view of the fleet: top's model (localFleet, topRow) fed by the
// run directory's one Watcher, so that a thousand agents and a hundred open pages cost one
// inotify instance (R31). It keeps every agent's row, tells the pages' fleet streams which rows
// changed, and wakes the transcript streams of the agents whose logs grew. It never blocks on
// a reader: each keeps a set of what changed and a signal, as the Watcher does.
type serveHub struct {
	fleet *fleet

	// heard closes once every source has told its rows (or that it cannot be reached).
	heard   chan struct{}
	unheard map[string]bool

	mu    sync.Mutex
	rows  map[string]topRow // by key
	subs  map[*fleetSub]struct{}
	wakes map[string]map[chan struct{}]struct{} // agent name → its transcript streams' wakes
}

// fleetSub is one fleet stream: the keys of the rows that changed since it last looked.
type fleetSub struct {
	ready   chan struct{}
	changed map[string]bool
	all     bool
}

func newServeHub(ctx context.Context, f *fleet) *serveHub {
	h := &serveHub{
		fleet: f, rows: map[string]topRow{}, heard: make(chan struct{}), unheard: map[string]bool{},
		subs: map[*fleetSub]struct{}{}, wakes: map[string]map[chan struct{}]struct{}{},
	}
	for _, src := range f.sources {
		if _, here := src.(*localFleet); !here {
			h.unheard[src.label()] = true
		}
	}
	if len(h.unheard) == 0 {
		close(h.heard)
	}
	for _, r := range f.rows() {
		h.rows[r.key()] = r
	}
	go f.run(ctx, h.apply) // the Watcher's changes, gathered for topBatch as top does; each host's stream
	return h
}

// apply records new rows of the source host and tells the streams.
func (h *serveHub) apply(host string, rows []topRow, logged map[string]bool, all bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if all {
		for k, r := range h.rows {
			if r.Host == host {
				delete(h.rows, k)
			}
		}
		if h.unheard[host] {
			delete(h.unheard, host)
			if len(h.unheard) == 0 {
				close(h.heard)
			}
		}
	}
	// The transcript streams woken here are this machine's: a host's stream its own events.
	here := h.fleet.local != nil && host == h.fleet.local.host
	if logged == nil || !here {
		logged = map[string]bool{}
	}
	keys := make([]string, 0, len(rows))
	for _, r := range rows {
		if r.Gone {
			delete(h.rows, r.key())
		} else {
			h.rows[r.key()] = r
		}
		keys = append(keys, r.key())
		// A status change may end a stream (the agent went): its follower looks.
		if here {
			logged[r.Name] = true
		}
	}
	if len(keys) > 0 || all {
		for s := range h.subs {
			if all {
				s.all = true
			}
			for _, k := range keys {
				s.changed[k] = true
			}
			poke(s.ready)
		}
	}
	for name, wakes := range h.wakes {
		if all && here || logged[name] {
			for w := range wakes {
				poke(w)
			}
		}
	}
}

func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// list is every row, in top's order: those that need their person first.
func (h *serveHub) list() []topRow {
	h.mu.Lock()
	rows := make([]topRow, 0, len(h.rows))
	for _, r := range h.rows {
		rows = append(rows, r)
	}
	h.mu.Unlock()
	sortRows(rows)
	return rows
}

// row is the row of key (HOST:NAME; NAME, :NAME or local:NAME here), and whether there is one.
func (h *serveHub) row(key string) (topRow, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	host, name := splitKey(key)
	if host == "" || host == hosts.Local {
		for _, k := range []string{":" + name, hosts.Local + ":" + name} {
			if r, ok := h.rows[k]; ok {
				return r, ok
			}
		}
		return topRow{}, false
	}
	r, ok := h.rows[key]
	return r, ok && r.Name != ""
}

// hostsWith lists, sorted, the hosts (not this machine) that have an agent called name: where
// a bare NAME that is not here may be.
func (h *serveHub) hostsWith(name string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var found []string
	for _, r := range h.rows {
		if r.Name == name && r.Host != "" && r.Host != hosts.Local {
			found = append(found, r.Host)
		}
	}
	sort.Strings(found)
	return found
}

// subscribe starts a fleet stream; cancel ends it.
func (h *serveHub) subscribe() (s *fleetSub, cancel func()) {
	s = &fleetSub{ready: make(chan struct{}, 1), changed: map[string]bool{}}
	h.mu.Lock()
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	return s, func() {
		h.mu.Lock()
		delete(h.subs, s)
		h.mu.Unlock()
	}
}

// take returns what changed for s since it last took: the rows (those gone as Gone rows), or
// every row when all is set.
func (h *serveHub) take(s *fleetSub) (rows []topRow, all bool) {
	h.mu.Lock()
	changed, all := s.changed, s.all
	s.changed, s.all = map[string]bool{}, false
	if !all {
		for k := range changed {
			r, ok := h.rows[k]
			if !ok {
				host, name := splitKey(k)
				r = topRow{Host: host, Name: name, Gone: true}
			}
			rows = append(rows, r)
		}
	}
	h.mu.Unlock()
	if all {
		return h.list(), true
	}
	sortRows(rows)
	return rows, false
}

// wake returns a channel signalled when the log of the agent name grew; cancel lets it go.
func (h *serveHub) wake(name string) (wake chan struct{}, cancel func()) {
	wake = make(chan struct{}, 1)
	h.mu.Lock()
	if h.wakes[name] == nil {
		h.wakes[name] = map[chan struct{}]struct{}{}
	}
	h.wakes[name][wake] = struct{}{}
	h.mu.Unlock()
	return wake, func() {
		h.mu.Lock()
		delete(h.wakes[name], wake)
		if len(h.wakes[name]) == 0 {
			delete(h.wakes, name)
		}
		h.mu.Unlock()
	}
}

// splitKey parses a row key, HOST:NAME (HOST empty for this machine's agents).
func splitKey(key string) (host, name string) {
	for i := len(key) - 1; i >= 0; i-- {
		if key[i] == ':' {
			return key[:i], key[i+1:]
		}
	}
	return "", key
}
