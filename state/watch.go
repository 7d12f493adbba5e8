package state

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// What changed of an agent, as a Watcher reports it.
const (
	// Changed: its record (status, spec, want, the permission inbox), or the agent came or went.
	Changed = 1 << iota
	// Logged: its event log grew or rotated.
	Logged
)

// Watcher tells which agents of a run directory changed, from one inotify instance for the
// whole directory (R31: a thousand agents cost the user one instance and two watches each).
// It never blocks on its reader: changes pile up in a set until Take collects them, and Ready
// is signalled once for any number of them. Without inotify (the user's limits reached) it
// marks every agent changed every pollEvery instead.
type Watcher struct {
	d       *Dir
	fs      *fsnotify.Watcher
	ready   chan struct{}
	mu      sync.Mutex
	pending map[string]int
	all     bool // every agent: the fallback, or a change the watcher could not place
}

// pollEvery is the fallback's period when inotify cannot be had.
const pollEvery = 2 * time.Second

// Watch starts a Watcher of d's agents until ctx ends.
func (d *Dir) Watch(ctx context.Context) *Watcher {
	w := &Watcher{d: d, ready: make(chan struct{}, 1), pending: map[string]int{}}
	fw, err := fsnotify.NewWatcher()
	if err == nil && fw.Add(d.AgentsDir()) != nil {
		fw.Close()
		fw = nil
	}
	if fw == nil {
		go w.poll(ctx)
		return w
	}
	w.fs = fw
	names, _ := d.Names()
	for _, n := range names {
		w.addAgent(n)
	}
	go w.run(ctx)
	return w
}

// AgentsDir is the directory holding one directory per agent.
func (d *Dir) AgentsDir() string { return filepath.Join(d.Root, "agents") }

// Ready is signalled when changes wait to be taken.
func (w *Watcher) Ready() <-chan struct{} { return w.ready }

// Take returns the agents changed since the last Take, each with what changed (Changed,
// Logged); all is true when every agent is to be read again.
func (w *Watcher) Take() (changed map[string]int, all bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	changed, all = w.pending, w.all
	w.pending, w.all = map[string]int{}, false
	return changed, all
}

func (w *Watcher) mark(name string, what int, all bool) {
	w.mu.Lock()
	if all {
		w.all = true
	} else {
		w.pending[name] |= what
	}
	w.mu.Unlock()
	select {
	case w.ready <- struct{}{}:
	default:
	}
}

// addAgent watches an agent's directory and its permission inbox (when it has one yet).
func (w *Watcher) addAgent(name string) {
	dir := w.d.AgentFile(name, "")
	if w.fs.Add(dir) == nil {
		w.fs.Add(filepath.Join(dir, PermissionsDir)) // made when the first request comes
	}
}

func (w *Watcher) run(ctx context.Context) {
	defer w.fs.Close()
	agents := w.d.AgentsDir()
	for {
		select {
		case <-ctx.Done():
			return
		case err := <-w.fs.Errors:
			if err != nil {
				w.mark("", Changed, true) // an overflow: events were lost
			}
		case ev := <-w.fs.Events:
			rel, err := filepath.Rel(agents, ev.Name)
			if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
				continue
			}
			parts := strings.Split(rel, string(filepath.Separator))
			name := parts[0]
			switch {
			case len(parts) == 1: // an agent came or went
				if ev.Has(fsnotify.Create) {
					w.addAgent(name)
				}
				w.mark(name, Changed, false)
			case len(parts) == 2 && parts[1] == PermissionsDir && ev.Has(fsnotify.Create):
				w.fs.Add(ev.Name)
				w.mark(name, Changed, false)
			case len(parts) == 2 && strings.HasPrefix(parts[1], EventsFile):
				w.mark(name, Logged, false)
			case len(parts) == 2 && strings.HasSuffix(parts[1], ".log"), len(parts) == 2 && parts[1] == LockFile:
				// raw logs and the lock's open and close: nothing a reader of the record shows
			default:
				w.mark(name, Changed, false)
			}
		}
	}
}

func (w *Watcher) poll(ctx context.Context) {
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.mark("", Changed|Logged, true)
		}
	}
}
