package state

import (
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"sync"

	"github.com/fsnotify/fsnotify"
)

// The followers of logs in a process share one inotify instance, however many logs they
// follow: the user's instances are few (128 by default, shared by every program they run), and
// one tail -f over 250 agents once held 117 of them. Followers subscribe to a directory of the
// one watcher, which is made for the first and closed after the last. (A Watcher of a whole
// run directory, watch.go, has an instance of its own.)
var watches watchHub

type watchHub struct {
	mu   sync.Mutex
	w    *fsnotify.Watcher
	dirs map[string][]chan struct{} // the followers of each directory watched
}

// watchDir returns a channel that receives (without blocking the watcher, so a burst is one
// wake) when something changes in dir, and the function that stops it. A nil channel, with no
// error, means no watch could be had (the inotify limits): the follower polls. It fails only when
// dir does not exist.
func watchDir(dir string) (<-chan struct{}, func(), error) {
	dir = filepath.Clean(dir)
	h := &watches
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.w == nil {
		w, err := fsnotify.NewWatcher()
		if err != nil {
			return nil, func() {}, nil
		}
		h.w, h.dirs = w, make(map[string][]chan struct{})
		go h.dispatch(w)
	}
	if len(h.dirs[dir]) == 0 {
		if err := h.w.Add(dir); err != nil {
			h.closeIfIdle()
			if errors.Is(err, fs.ErrNotExist) {
				return nil, func() {}, err
			}
			return nil, func() {}, nil
		}
	}
	ch := make(chan struct{}, 1)
	h.dirs[dir] = append(h.dirs[dir], ch)
	return ch, func() { h.unwatch(dir, ch) }, nil
}

func (h *watchHub) unwatch(dir string, ch chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	subs := slices.DeleteFunc(h.dirs[dir], func(c chan struct{}) bool { return c == ch })
	if len(subs) > 0 {
		h.dirs[dir] = subs
		return
	}
	delete(h.dirs, dir)
	if h.w != nil {
		h.w.Remove(dir) // fails when the directory went, and its watch with it
	}
	h.closeIfIdle()
}

// closeIfIdle gives the instance back once nothing is watched.
func (h *watchHub) closeIfIdle() {
	if len(h.dirs) == 0 && h.w != nil {
		h.w.Close()
		h.w = nil
	}
}

// dispatch wakes the followers of the directory of each event, and all of them on an error (a
// queue overflow loses events, not data: each follower reads the file to its end).
func (h *watchHub) dispatch(w *fsnotify.Watcher) {
	wake := func(subs []chan struct{}) {
		for _, ch := range subs {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
	for {
		select {
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			h.mu.Lock()
			if h.w == w {
				wake(h.dirs[filepath.Dir(ev.Name)])
			}
			h.mu.Unlock()
		case _, ok := <-w.Errors:
			if !ok {
				return
			}
			h.mu.Lock()
			if h.w == w {
				for _, subs := range h.dirs {
					wake(subs)
				}
			}
			h.mu.Unlock()
		}
	}
}
