package spawn

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/tidwall/gjson"
	"golang.org/x/sys/unix"

	"agt/config"
	"agt/pids"
	"agt/state"
	"agt/stream"
)

// TestOnlyGroupKillOnly switches the descendant and AGT_INSTANCE sweeps off, leaving only the
// process-group kill. Tests set it to prove that the tree tests can fail; users never do.
var TestOnlyGroupKillOnly bool

// TestOnlyRanFor, when set, is how long every run counts as having lasted: tests inject the
// clock of the healthy-run reset with it instead of waiting ten minutes.
var TestOnlyRanFor time.Duration

// TestOnlyDiskFull, when set and true, makes event writes fail with ENOSPC: tests inject a
// full disk with it.
var TestOnlyDiskFull func() bool

// TestOnlyUnkillable, when set, names processes that a sweep's SIGKILL cannot reach, as a
// process of another user or one stuck in the kernel: tests inject survivors with it.
var TestOnlyUnkillable func(pid int) bool

// ReasonSurvivors is the reason of an agent failed because part of its tree outlived SIGKILL.
const ReasonSurvivors = "survivors"

// goneCheckEvery is how often a supervisor without dnotify checks that its directory exists.
const goneCheckEvery = 5 * time.Second

// cleanupGrace is how long processes left behind by an agent that exited on its own get between
// SIGTERM and SIGKILL.
const cleanupGrace = time.Second

// supervisor runs one agent. The main goroutine owns the process life cycle (start, wait,
// stop); the stdout and stderr readers emit events through emit, which mu serializes.
type supervisor struct {
	root     string
	a        *state.Agent
	spec     *state.Spec
	instance string
	leader   pids.Identity

	mu          sync.Mutex // guards everything below
	log         *state.LogWriter
	seq         int64
	pending     []byte // events not yet written
	events      []stream.Event
	dec         stream.Decoder
	machine     stream.Machine
	snap        stream.Snapshot
	status      state.Status
	dirty       bool                   // status.json lags behind last_seq
	kick        chan struct{}          // the state changed outside the main loop
	stdin       *os.File               // the agent's stdin pipe, for stream-json kinds
	perms       map[string]*Permission // requests the agent waits on
	turnCh      chan string            // ConverseTurns: the message that starts the next turn
	between     bool                   // ConverseTurns: no turn process runs; a send goes to turnCh
	next        *string                // ConverseTurns: the prompt of the turn being started
	interrupted bool                   // the running turn process got SIGINT from agt interrupt
	alive       bool                   // the agent's process runs (not yet reaped): its group may be signalled
	overBudget  bool                   // the agent spent more than spec.MaxCost
	budgetSent  bool                   // budgetC is closed
	budgetC     chan struct{}          // closed once the agent is over its budget: the main loop stops it
	hooks       *hooks                 // the on_state hook; nil without one
	ending      bool                   // end the conversation once the running turn is over (stop --after-turn)
	endSent     bool                   // ...and that is under way
	endC        chan struct{}          // ConverseTurns: closed to end it between turns
	policy      config.Policy          // requests answered without asking
	queue       []string               // messages sent with --queue, for the turn's end
	interrupts  int                    // interrupt requests sent, for their ids
	inMu        sync.Mutex             // serializes writes to stdin (held for the write, never with mu)
	writeErr    error
	lost        int64           // events dropped since the last successful write
	gone        <-chan struct{} // closes when the agent's directory is removed
	survivors   []pids.Identity // the main loop's: processes of the tree that outlived SIGKILL
	sw          statusWriter    // status.json's writer (status.go)
	final       bool            // the end is being written: events are kept until the disk takes them
	// recordGone closes when a status write finds the record gone: removed, or the run
	// directory renamed, which no watch on agents/ sees.
	recordGone     chan struct{}
	recordGoneOnce sync.Once
	lock           *state.Lock
	term           *terminal       // a terminal agent's pty, log and clients; nil for others
	text           stream.TermText // a terminal agent's output as text
	typePrompt     *string         // a terminal agent's prompt, typed once it first waits
	sigs           signals         // the supervisor's own signals, for the waits outside run (connect)

	// ACP agents (stdin "acp"): the client of the protocol (the decoder), the writer of its
	// lines, a kick for connect at every line decoded, the last stderr lines of the run, and
	// whether connect has returned and a later failure has ended the run.
	acp        *stream.ACP
	acpw       *acpWriter
	acpKick    chan struct{}
	stderrTail []string
	connected  bool
	acpEnded   bool
}

// readyMsg is the one line the supervisor writes on the readiness pipe: {"spawned":EVENT} or
// {"error":"why"}. Both ends code it by hand: it is on the path of every spawn, and
// encoding/json's first use in a process costs more than the rest of the line's trip.
type readyMsg struct {
	Spawned json.RawMessage `json:"spawned,omitempty"`
	Error   string          `json:"error,omitempty"`
}

func (m readyMsg) line() []byte {
	if m.Error != "" || len(m.Spawned) == 0 {
		b := stream.AppendString([]byte(`{"error":`), m.Error)
		return append(b, "}\n"...)
	}
	b := append([]byte(`{"spawned":`), m.Spawned...)
	return append(b, "}\n"...)
}

// parseReady reads a line that line wrote.
func parseReady(line []byte) (readyMsg, error) {
	if !gjson.ValidBytes(line) {
		return readyMsg{}, errors.New("not JSON")
	}
	var m readyMsg
	if r := gjson.GetBytes(line, "spawned"); r.IsObject() {
		m.Spawned = json.RawMessage(r.Raw)
	}
	m.Error = gjson.GetBytes(line, "error").String()
	if m.Error == "" && m.Spawned == nil {
		return readyMsg{}, errors.New("neither spawned nor error")
	}
	return m, nil
}

// How a supervisor starts its agent.
const (
	StartNew    = ""       // agt spawn: the start argv
	StartResume = "resume" // agt restart: resume the session where the kind can
	StartFresh  = "fresh"  // agt restart --fresh: the start argv again
)

// Supervise is the hidden `agt supervise` verb: it runs the agent recorded under name in the run
// directory root, reporting readiness on ready (then closing it), restarts it as its policy
// says, and returns once the agent and everything it started are gone and the final status is
// written. It answers to signals of its own (SIGTERM stops the agent), not to a context.
func Supervise(root, name, mode string, ready, goAhead *os.File) error {
	report := func(m readyMsg) {
		if ready == nil {
			return
		}
		ready.Write(m.line())
		ready.Close()
		ready = nil
	}
	// Nothing to mark close-on-exec here: the spawn did so before starting us, and passes only
	// 0-4, of which commands marks 3 and 4.
	// The supervisor owns its signals: SIGTERM stops the agent, a later one can bring the kill
	// forward (stopDeadline). SIGHUP and SIGINT (a closing terminal) are not ours to act on. They are caught
	// before the lock is taken, so a stop that sees the lock held is never lost: it is the
	// one way a stop reaches us. The ones set aside are caught into a channel nobody reads,
	// not ignored: an ignored signal stays ignored across exec, in the agent and all it runs.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP, syscall.SIGINT, syscall.SIGPIPE)
	// SIGTERM and SIGCHLD on channels of their own: a burst of exiting children must never
	// crowd out a stop request (signal.Notify drops what a full channel cannot take).
	terms, chld := make(chan os.Signal, 4), make(chan os.Signal, 1)
	signal.Notify(terms, syscall.SIGTERM)
	signal.Notify(chld, syscall.SIGCHLD)
	defer signal.Stop(terms)
	defer signal.Stop(chld)
	sigs := signals{term: terms, chld: chld}
	if goAhead != nil {
		// Started ahead of the record (see pending): wait for it to be complete.
		var b [1]byte
		n, _ := goAhead.Read(b[:])
		goAhead.Close()
		if n != 1 {
			return nil // the spawn failed before; it removes what it made
		}
		if err := logTo((&state.Dir{Root: root}).AgentFile(name, state.SupervisorLog)); err != nil {
			report(readyMsg{Error: err.Error()})
			return err
		}
	}
	s, err := openSupervisor(root, name)
	if err != nil {
		report(readyMsg{Error: err.Error()})
		return err
	}
	defer s.close()
	s.sigs = sigs

	if s.a.Want() == "down" {
		err := fmt.Errorf("agent %q was stopped before it started", name)
		s.finish(stream.Failed, "stopped before start", nil)
		report(readyMsg{Error: err.Error()})
		return err
	}
	if mode != StartNew {
		s.mu.Lock()
		s.status.Restarts++
		ev := stream.Event{Type: stream.TypeRestart, Attempt: s.status.Restarts, Reason: "agt restart"}
		if mode == StartFresh {
			ev.Reason = "agt restart --fresh"
		}
		s.appendLocked(&ev, time.Now())
		s.flushLocked()
		s.mu.Unlock()
	}
	g, err := s.start(mode)
	if err != nil {
		s.emitError(err.Error(), true)
		if errors.Is(err, errStoppedConnecting) {
			s.finish(stream.Stopped, "stop", nil)
		} else {
			s.finish(stream.Failed, "start", nil)
		}
		report(readyMsg{Error: err.Error()})
		return err
	}
	// The first status is in status.json when agt spawn returns: ps shows the agent.
	s.mu.Lock()
	s.syncStatusLocked(false)
	s.mu.Unlock()
	report(readyMsg{Spawned: g.spawned})

	b := backoff{
		Initial:     time.Duration(s.spec.RestartDelay),
		Max:         time.Duration(s.spec.RestartMaxDelay),
		Healthy:     time.Duration(s.spec.HealthyAfter),
		MaxRestarts: s.spec.MaxRestarts,
	}
	failures := 0
	for {
		exit, failure, stopping := s.run(sigs, g)
		if len(s.survivors) > 0 {
			// Not stopped, and never restarted beside what is left of the last run (R13).
			s.mu.Lock()
			s.status.Error = survivedSIGKILL(s.survivors)
			s.mu.Unlock()
			s.finish(stream.Failed, ReasonSurvivors, exit)
			return nil
		}
		if s.isOverBudget() {
			s.finish(stream.Failed, stream.ClassBudget, exit) // spent: never restarted
			return nil
		}
		if stopping || s.a.Want() == "down" {
			// A stop that raced the exit wins over any restart (R6, R18).
			s.finish(stream.Stopped, "stop", exit)
			return nil
		}
		// A failure on a clean exit is an ACP run that the client ended (auth, config).
		clean := exit.Code == 0 && exit.Signal == "" && failure.Class == "" || s.wasInterrupted()
		if clean && s.spec.ConverseTurns {
			// A conversation of turn processes: the turn is over, the next message starts
			// the next one.
			if g, err = s.nextTurn(sigs, exit); err != nil {
				if err == errStopped {
					s.finish(stream.Stopped, "stop", nil)
				} else {
					s.finish(stream.Failed, "start", nil)
				}
				return nil
			}
			failures = 0
			continue
		}
		if !clean {
			s.failed(exit, failure)
		}
		if !clean && !restartable(failure.Class) {
			// A bad key or an unknown model fails the same way every time: no restart.
			s.finish(stream.Failed, failure.Class, exit)
			return nil
		}
		if s.spec.Restart == config.RestartNever || clean && s.spec.Restart != config.RestartAlways {
			state, reason := endOf(exit, failure)
			s.finish(state, reason, exit)
			return nil
		}
		var again bool
		var delay time.Duration
		ran := time.Since(g.started) // monotonic (R19)
		if TestOnlyRanFor > 0 {
			ran = TestOnlyRanFor
		}
		if clean {
			failures = 0 // restart=always: a clean exit is no failure, and never a reason to give up
		}
		failures, again, delay = b.next(failures, ran, mrand.Float64())
		if !again {
			_, why := endOf(exit, failure)
			s.finish(stream.Failed, gaveUp(failures-1, why), exit)
			return nil
		}
		if failure.Class == stream.ClassRate && delay < b.Max {
			delay = b.Max // a rate limit lifts in its own time: come back late
		}
		for {
			s.restarting(exit, failure, delay)
			if !s.pause(sigs, delay) || s.a.Want() == "down" {
				// A stop came while we waited (R6, R18): nothing runs, so nothing to kill.
				s.finish(stream.Stopped, "stop", nil)
				return nil
			}
			if g, err = s.start(StartResume); err == nil {
				break
			}
			// Could not start again (the binary is gone?): a failure like any other.
			s.emitError(err.Error(), false)
			if errors.Is(err, errStoppedConnecting) {
				s.finish(stream.Stopped, "stop", nil)
				return nil
			}
			exit, failure = nil, stream.Failure{}
			failures, again, delay = b.next(failures, 0, mrand.Float64())
			if !again {
				s.finish(stream.Failed, gaveUp(failures-1, err.Error()), nil)
				return nil
			}
		}
	}
}

// gaveUp is the reason of an agent failed for good after n restarts.
func gaveUp(n int, why string) string {
	if n == 1 {
		return fmt.Sprintf("gave up after 1 restart (%s)", why)
	}
	return fmt.Sprintf("gave up after %d restarts in a row (%s)", n, why)
}

// signals are the supervisor's own: SIGTERM asks for a stop, SIGCHLD says a child exited.
type signals struct {
	term, chld <-chan os.Signal
}

// restartable reports whether a restart can cure a failure of the class: never for a bad key
// (auth) or a bad setting (config).
func restartable(class string) bool {
	return class != stream.ClassAuth && class != stream.ClassConfig
}

// failed records why a run failed: the agent's own one line, and when the session it was to
// resume does not exist, that the next start is fresh.
func (s *supervisor) failed(exit *stream.Exit, f stream.Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status.Error = f.Message
	if f.Class == stream.ClassSession && s.status.SessionID != "" {
		ev := stream.Event{Type: stream.TypeError, Source: stream.SourceSupervisor,
			Message: fmt.Sprintf("session %s cannot be resumed (%s); the next start is fresh, with the original prompt", s.status.SessionID, f.Message)}
		s.appendLocked(&ev, time.Now())
		s.flushLocked()
		s.status.Resumable = false
	}
}

// endOf is the final state and reason of an agent that ended on its own: a failure's class
// when the decoder knew more than the exit code (transient too: a 500 the agent reported).
func endOf(exit *stream.Exit, f stream.Failure) (state, reason string) {
	switch {
	case (exit.Code != 0 || exit.Signal != "") && f.Reason(*exit) != "":
		return stream.Failed, f.Reason(*exit)
	case exit.Signal != "":
		return stream.Failed, "killed by " + exit.Signal
	case exit.Code != 0:
		return stream.Failed, fmt.Sprintf("exit code %d", exit.Code)
	}
	return stream.Exited, ""
}

// restarting records the end of a run that will be restarted after delay: the exit event, the
// restarting state, the restart event and the count in the status.
func (s *supervisor) restarting(exit *stream.Exit, f stream.Failure, delay time.Duration) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	reason := "start failed"
	if exit != nil {
		s.recordExitLocked(exit, now)
		_, reason = endOf(exit, f)
		if reason == "" {
			reason = "exited" // restart=always
		}
	}
	s.status.Restarts++
	s.setStateLocked(stream.Restarting, reason, now)
	ev := stream.Event{Type: stream.TypeRestart, Attempt: s.status.Restarts, DelayMS: delay.Milliseconds(), Reason: reason}
	s.appendLocked(&ev, now)
	s.writeStatusLocked()
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
	if _, err := a.RemoveStaleTemps(); err != nil { // left by a supervisor killed mid-write
		fmt.Fprintf(os.Stderr, "agt supervise %s: %v\n", name, err)
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return nil, fmt.Errorf("become child subreaper: %w", err)
	}
	// Re-executed through /proc/self/exe, the process would be named "exe" in top and ps -o comm.
	setProcessName(processName)
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
	s := &supervisor{
		root: d.Root, a: a, spec: spec, log: log, seq: last,
		dec:     stream.ForFormat(spec.Format),
		machine: machineFor(spec),
		policy:  config.Policy{Allow: spec.Allow, Deny: spec.Deny, Dir: spec.Cwd},
		hooks:   newHooks(spec, a, d.Root),
		kick:    make(chan struct{}, 1),
		turnCh:  make(chan string, 1),
		budgetC: make(chan struct{}),
		endC:    make(chan struct{}),
		lock:    lock,
		gone:    watchGone(a.Dir, func() bool { return lock.Check() == nil }),
		acpKick: make(chan struct{}, 1),
	}
	if acp, ok := s.dec.(*stream.ACP); ok {
		s.acp = acp
	}
	s.startStatusWriter()
	if spec.TTY {
		s.term = newTerminal(spec, a)
	}
	now := time.Now()
	s.status = state.Status{
		Name: spec.Name, Kind: spec.Kind, Dir: spec.Cwd,
		SupervisorPID: self.PID, Since: now, Updated: now,
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
	if err := s.listen(); err != nil {
		// The agent runs all the same; only send, approve, deny and interrupt cannot reach it.
		fmt.Fprintf(os.Stderr, "agt supervise %s: %v\n", spec.Name, err)
	}
	return s, nil
}

// machineFor is the state machine of the agent spec describes: structured agents follow their
// turns, plain commands run while they live.
func machineFor(spec *state.Spec) stream.Machine {
	m := stream.Machine{
		IdleAfter:  time.Duration(spec.IdleAfter),
		StaleAfter: time.Duration(spec.StaleAfter),
		StallAfter: time.Duration(spec.StallAfter),
		InputOpen:  config.StdinConverses(spec.Stdin) || spec.ConverseTurns,
	}
	switch {
	case spec.TTY:
		m.Mode, m.Prompts = stream.Terminal, prompts(spec)
	case spec.Format != "" && spec.Format != "text":
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
	s.mu.Lock()
	if s.log != nil {
		s.log.Close()
	}
	s.mu.Unlock()
	if s.term != nil {
		s.term.end() // attached clients get the last output, then the end
	}
	if s.hooks != nil {
		// The final status is written: let go of the lock, so that agt wait and agt stop
		// return now, then give the end its hook, which never holds them up.
		s.lock.Close()
		s.hooks.finish()
	}
}
