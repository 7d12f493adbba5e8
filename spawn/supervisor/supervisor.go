// Package supervisor is the program that runs as `agt supervise NAME`, one per agent, detached
// from the spawn that started it: it holds the agent's lock for its whole life, runs the agent
// in its own session, turns its output into events and its silence into states, keeps
// status.json current, talks to it through its conversation (one per way of talking: see
// conversation.go), restarts it as its policy says (end.go) and stops its whole process tree on
// request. The commands reach it through package spawn, over the control channel (package ctl).
//
// Invariants: exit is learned from wait, never from stdout EOF; one owner of all waits (reap);
// want is checked before every start; nothing slow (fsync, a child's exit, a write to the
// agent) happens under mu, which the output path needs; status.json is written before the
// state event that it holds reaches the log.
package supervisor

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"agt/config"
	"agt/pids"
	"agt/spawn/ctl"
	"agt/state"
	"agt/stream"
)

// goneCheckEvery is how often a supervisor without dnotify checks that its directory exists.
const goneCheckEvery = 5 * time.Second

// supervisor runs one agent. The main goroutine owns the process life cycle (start, wait,
// stop); the stdout and stderr readers emit events through emit, which mu serializes.
type supervisor struct {
	root     string
	a        *state.Agent
	spec     *state.Spec
	instance string
	leader   pids.Identity
	conv     conversation                            // how agt talks to the agent: what differs from one way to the next
	after    func(time.Duration, func()) *time.Timer // time.AfterFunc, but in tests
	lock     *state.Lock
	sigs     signals      // the supervisor's own signals, for the waits outside run (connect)
	hooks    *hooks       // the on_state hook; nil without one
	cgroup   *containment // the agent's cgroup; nil where there is none (contain.go)
	policy   config.Policy
	gone     <-chan struct{} // closes when the agent's directory is removed
	ch       *channel        // the control channel; nil when it could not be opened
	// survivors are the main loop's: processes of the tree that outlived SIGKILL.
	survivors []pids.Identity
	// recordGone closes when a status write finds the record gone: removed, or the run
	// directory renamed, which no watch on agents/ sees.
	recordGone     chan struct{}
	recordGoneOnce sync.Once

	mu         sync.Mutex // guards everything below, and what the conversation keeps
	log        *state.LogWriter
	seq        int64
	pending    []byte // events not yet written
	events     []stream.Event
	dec        stream.Decoder
	machine    stream.Machine
	snap       stream.Snapshot
	status     state.Status
	dirty      bool                       // status.json lags behind last_seq
	kick       chan struct{}              // the state changed outside the main loop
	perms      map[string]*ctl.Permission // requests the agent waits on
	alive      bool                       // the agent's process runs (not yet reaped): its group may be signalled
	overBudget bool                       // the agent spent more than spec.MaxCost
	budgetSent bool                       // budgetC is closed
	budgetC    chan struct{}              // closed once the agent is over its budget: the main loop stops it
	writeErr   error
	lost       int64        // events dropped since the last successful write
	sw         statusWriter // status.json's writer (status.go)
	final      bool         // the end is being written: events are kept until the disk takes them
}

// pause waits out a restart delay; false when a stop came first.
func (s *supervisor) pause(sigs signals, delay time.Duration) bool {
	t := time.NewTimer(delay)
	defer t.Stop()
	for {
		select {
		case <-sigs.term:
			return false
		case <-sigs.chld:
			s.reap() // an adopted orphan of the last run
		case <-s.gone:
			return false
		case <-t.C:
			return true
		}
	}
}

func openSupervisor(root, name string) (*supervisor, error) {
	d, err := state.Open(root)
	if err != nil {
		return nil, err
	}
	a, err := d.Agent(name)
	if err != nil {
		return nil, err
	}
	// The lock is held until the process exits: it is how readers tell that we live. It is
	// O_CLOEXEC, so the agent never inherits it.
	lock, err := a.Lock()
	if err != nil {
		return nil, err
	}
	// The end is not known until finish says so (state/endlock.go).
	if err := lock.HoldEnd(); err != nil {
		return nil, err
	}
	if _, err := a.RemoveStaleTemps(); err != nil { // left by a supervisor killed mid-write
		fmt.Fprintf(os.Stderr, "agt supervise %s: %v\n", name, err)
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return nil, fmt.Errorf("become child subreaper: %w", err)
	}
	// Re-executed through /proc/self/exe, the process would be named "exe" in top and ps -o comm.
	setProcessName(ctl.ProcessName)
	self, err := pids.Self()
	if err != nil {
		return nil, err
	}
	if err := a.WritePID(state.SupervisorPIDFile, self.String()); err != nil {
		return nil, err
	}
	spec, err := a.ReadSpec()
	if err != nil {
		return nil, err
	}
	log, last, err := state.OpenLog(a.Path(state.EventsFile))
	if err != nil {
		return nil, err
	}
	s := newSupervisor(d, a, spec, lock, log, last, self.PID)
	s.cgroup = contain(a, spec.Name) // before anything runs: the agent and the hooks start in it
	if s.hooks != nil {
		s.hooks.cgroup = s.cgroup.hooksDir() // read by the first hook, which a start queues
	}
	s.gone = watchGone(a.Dir, func() bool { return lock.Check() == nil })
	if err := s.listen(); err != nil {
		// The agent runs all the same; only send, approve, deny and interrupt cannot reach it.
		fmt.Fprintf(os.Stderr, "agt supervise %s: %v\n", spec.Name, err)
	}
	return s, nil
}

// newSupervisor is the supervisor of agent a of d, as spec records it, holding its lock and
// appending to its event log, whose last seq is last; its status writer runs. pid is the
// supervisor's own.
func newSupervisor(d *state.Dir, a *state.Agent, spec *state.Spec, lock *state.Lock, log *state.LogWriter, last int64, pid int) *supervisor {
	s := &supervisor{
		root: d.Root, a: a, spec: spec, log: log, seq: last,
		dec:     stream.ForFormat(spec.Format),
		machine: machineFor(spec),
		policy:  config.Policy{Allow: spec.Allow, Deny: spec.Deny, Dir: spec.Cwd},
		hooks:   newHooks(spec, a, d.Root),
		kick:    make(chan struct{}, 1),
		budgetC: make(chan struct{}),
		lock:    lock,
		after:   time.AfterFunc,
	}
	s.conv = conversationFor(s)
	s.startStatusWriter()
	now := time.Now()
	s.status = state.Status{
		Name: spec.Name, Kind: spec.Kind, Dir: spec.Cwd,
		SupervisorPID: pid, Since: now, Updated: now,
		SessionID: spec.SessionID, Model: spec.Model, Workspace: spec.Workspace, MaxCost: spec.MaxCost,
		Group: spec.Group,
	}
	if old, err := a.ReadStatus(); err == nil {
		// agt restart: the count, the session and the totals carry on.
		s.status.Restarts, s.status.History = old.Restarts, old.History
		s.status.Turns, s.status.CostUSD, s.status.Usage = old.Turns, old.CostUSD, old.Usage
		s.status.Error = old.Error
		if old.SessionID != "" {
			s.status.SessionID, s.status.SessionTotal = old.SessionID, old.SessionTotal
			s.status.Resumable = old.Resumable
			if r, ok := s.dec.(stream.SessionResumer); ok {
				// Codex reports the thread's usage so far: without where it stood, the first
				// resumed turn would count the whole thread again.
				r.ResumeSession(old.SessionID, stream.Usage(old.SessionTotal))
			}
		}
		if old.Model != "" {
			s.status.Model = old.Model
		}
		s.snap.State = old.State
	}
	if s.status.Model == "" {
		s.status.Model = config.ConfiguredModel(spec.Format, s.agentGetenv())
	}
	return s
}

// machineFor is the state machine of the agent spec describes: structured agents follow their
// turns, plain commands run while they live. Its conversation adds what is its own (a
// terminal's timing, input open between turns).
func machineFor(spec *state.Spec) stream.Machine {
	m := stream.Machine{
		IdleAfter:  time.Duration(spec.IdleAfter),
		StaleAfter: time.Duration(spec.StaleAfter),
		StallAfter: time.Duration(spec.StallAfter),
	}
	if spec.Format != "" && spec.Format != "text" {
		m.Mode = stream.Turns
	}
	return m
}

// logTo makes the supervisor log this process's stdout and stderr, where the Go runtime writes
// if it ever crashes.
func logTo(path string) error {
	f, err := state.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600) // never through a link
	if err != nil {
		return fmt.Errorf("open supervisor log: %w", err)
	}
	defer f.Close()
	fd := int(f.Fd())
	for _, to := range []int{1, 2} {
		if err := unix.Dup3(fd, to, 0); err != nil {
			return fmt.Errorf("log to %s: %w", path, err)
		}
	}
	return nil
}

// newInstance returns 96 random bits in hex. math/rand/v2's generator (ChaCha8, seeded from the
// kernel) is unique enough for a tag, and unlike crypto/rand it adds no package inits to every
// agt start-up.
func newInstance() string {
	var b [12]byte
	binary.LittleEndian.PutUint64(b[:8], mrand.Uint64())
	binary.LittleEndian.PutUint32(b[8:], mrand.Uint32())
	return hex.EncodeToString(b[:])
}

func (s *supervisor) close() {
	s.unlisten()
	s.mu.Lock()
	if s.log != nil {
		s.log.Close()
	}
	s.mu.Unlock()
	s.conv.end()
	s.answerWaiters()
	if s.hooks != nil {
		// The final status is written: let go of the lock, so that agt wait and agt stop
		// return now, then give the end its hook, which never holds them up.
		s.lock.Close()
		s.hooks.finish()
	}
	s.uncontain() // what the hooks left, and the cgroups
}

// now is the time as the state machine sees it.
func (s *supervisor) now() time.Time {
	if ctl.Test.Clock != nil {
		return ctl.Test.Clock()
	}
	return time.Now()
}

// dueIn is how long the main loop sleeps before a transition due at when: never less than a
// second (a tick costs a status write), unless a test drives the clock, which it then watches.
func (s *supervisor) dueIn(when time.Time) time.Duration {
	if ctl.Test.Clock != nil {
		return 10 * time.Millisecond
	}
	return max(when.Sub(time.Now()), time.Second)
}
