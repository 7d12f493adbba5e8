package main

import "sync"

// fixture is something the scripts share that is slow to start (the SSH hosts, the swarm):
// started once per run of TestScripts, by the first script that needs it, and ended by
// TestScripts' cleanup. err says why there is none: the scripts that need it skip with it.
type fixture[T any] struct {
	mu      sync.Mutex
	started bool
	up      T
	err     error
	start   func() (T, error)
	stop    func(T) // ends what start made; called once, when start succeeded
}

func (f *fixture[T]) get() (T, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.started {
		f.up, f.err = f.start()
		f.started = true
	}
	return f.up, f.err
}

// end ends the fixture, if it was started; the next get starts it again.
func (f *fixture[T]) end() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.started && f.err == nil {
		f.stop(f.up)
	}
	var zero T
	f.up, f.err, f.started = zero, nil, false
}
