package spawn

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
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

// goneCheckEvery is how often a supervisor without inotify checks that its directory exists.
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
	lock        *state.Lock
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
		s.finish(stream.Failed, "start", nil)
		report(readyMsg{Error: err.Error()})
		return err
	}
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
		if s.isOverBudget() {
			s.finish(stream.Failed, stream.ClassBudget, exit) // spent: never restarted
			return nil
		}
		if stopping || s.a.Want() == "down" {
			// A stop that raced the exit wins over any restart (R6, R18).
			s.finish(stream.Stopped, "stop", exit)
			return nil
		}
		clean := exit.Code == 0 && exit.Signal == "" || s.wasInterrupted()
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
// when the decoder knew better than the exit code.
func endOf(exit *stream.Exit, f stream.Failure) (state, reason string) {
	switch {
	case (exit.Code != 0 || exit.Signal != "") && f.Class != "" && f.Class != stream.ClassTransient:
		return stream.Failed, f.Class
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
		hooks:   newHooks(spec.OnState, time.Duration(spec.HookTimeout), spec.Name, d.Root),
		kick:    make(chan struct{}, 1),
		turnCh:  make(chan string, 1),
		budgetC: make(chan struct{}),
		endC:    make(chan struct{}),
		lock:    lock,
		gone:    watchGone(a.Dir, func() bool { return lock.Check() == nil }),
	}
	now := time.Now()
	s.status = state.Status{
		Name: spec.Name, Kind: spec.Kind, Dir: spec.Cwd,
		SupervisorPID: self.PID, Since: now, Updated: now,
		SessionID: spec.SessionID, Model: spec.Model, Workspace: spec.Workspace, MaxCost: spec.MaxCost,
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
		InputOpen:  spec.Stdin == config.StdinStreamJSON || spec.ConverseTurns,
	}
	if spec.Format != "" && spec.Format != "text" {
		m.Mode = stream.Turns
	}
	return m
}

// logTo makes the supervisor log this process's stdout and stderr, where the Go runtime writes
// if it ever crashes.
func logTo(path string) error {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CREAT|unix.O_APPEND|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("open supervisor log: %w", err)
	}
	defer unix.Close(fd)
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
	if s.hooks != nil {
		// The final status is written: let go of the lock, so that agt wait and agt stop
		// return now, then give the end its hook, which never holds them up.
		s.lock.Close()
		s.hooks.finish()
	}
}

// generation is one run of the agent.
type generation struct {
	outR, errR *os.File        // our ends of the agent's stdout and stderr
	spawned    []byte          // the spawned event
	started    time.Time       // when it started (monotonic)
	readers    <-chan struct{} // closed when its stdout and stderr reach EOF
}

// start launches the agent in its own session with stdout and stderr on pipes and stdin on
// /dev/null (or the prompt, for kinds that read it there), records its identity and emits
// spawned and state events. StartResume resumes the agent's session where the kind can and the
// session was saved, with the resume prompt instead of the original one; else, and for
// StartNew and StartFresh, it starts afresh with the original prompt.
func (s *supervisor) start(mode string) (*generation, error) {
	spawned, outR, errR, err := s.launch(mode)
	if err != nil {
		return nil, err
	}
	g := &generation{spawned: spawned, started: time.Now(), outR: outR, errR: errR}
	g.readers = s.read(outR, errR)
	return g, nil
}

func (s *supervisor) launch(mode string) (spawned []byte, outR, errR *os.File, err error) {
	s.instance = newInstance()
	tmpl := s.spec.Argv
	prompt, err := s.prompt()
	if err != nil {
		return nil, nil, nil, err
	}
	session, resumed := s.session(mode)
	s.mu.Lock()
	next := s.next
	s.next, s.interrupted = nil, false
	s.mu.Unlock()
	switch {
	case next != nil:
		// The next turn of a conversation of turn processes: the message is the prompt, in
		// the session when the agent saved it, else in a fresh one.
		if resumed {
			tmpl = s.spec.Resume
		}
		prompt = next
	case resumed && s.spec.Stdin == config.StdinStreamJSON:
		// A conversation resumes where it was: waiting for the next message.
		tmpl, prompt = s.spec.Resume, nil
	case resumed:
		// The session goes on: the original prompt is not sent again.
		tmpl = s.spec.Resume
		rp := s.spec.ResumePrompt
		if rp == "" {
			rp = config.DefaultResumePrompt
		}
		prompt = &rp
	}
	vals := s.tokens(prompt, session)
	if resumed {
		vals["AGT_PROMPT_FILE"] = "" // it holds the original prompt, which a resume does not send
	}
	env := s.agentEnv(vals)
	argv, err := config.Expand(tmpl, vals)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(argv) == 0 || argv[0] == "" {
		return nil, nil, nil, errors.New("no command to run")
	}
	// What events show: the prompt replaced by its size (R27).
	if prompt != nil {
		vals["AGT_PROMPT"] = fmt.Sprintf("<prompt: %d bytes>", len(*prompt))
	}
	shown, _ := config.Expand(tmpl, vals)

	if fi, err := os.Stat(s.spec.Cwd); err != nil || !fi.IsDir() {
		// Before the command is looked for: a missing directory is no missing program.
		return nil, nil, nil, fmt.Errorf("could not start %s: its working directory %s is gone; make it again, or agt rm %s", argv[0], s.spec.Cwd, s.spec.Name)
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return nil, nil, nil, fmt.Errorf("could not start %s: executable not found in $PATH; is it installed?", argv[0])
		}
		return nil, nil, nil, fmt.Errorf("could not start %s: %w", argv[0], errors.Unwrap(err))
	}
	var pipes []*os.File // the child's ends, closed once it started
	defer func() {
		for _, f := range pipes {
			f.Close()
		}
	}()
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, nil, nil, err
	}
	pipes = append(pipes, outW, errW)
	var stdinW *os.File
	// Kinds that converse on stdin get a pipe that stays open between turns; the prompt is the
	// first user message. Kinds that read their prompt there get it as a file, read to its end.
	// Others get /dev/null: Codex and opencode hang on an open pipe.
	var stdin *os.File
	switch {
	case s.spec.Stdin == config.StdinStreamJSON:
		stdin, stdinW, err = os.Pipe()
	case s.spec.Stdin == config.StdinPrompt && prompt != nil:
		stdin, err = promptFile(*prompt)
	default:
		stdin, err = os.Open(os.DevNull)
	}
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, nil, nil, err
	}
	pipes = append(pipes, stdin)
	// syscall.ForkExec, not os/exec: a third of the cost of a start, and waits belong to the
	// SIGCHLD loop alone anyway. Setsid alone also makes a new process group (Setpgid with it
	// fails with EPERM).
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Dir:   s.spec.Cwd,
		Env:   env,
		Files: []uintptr{stdin.Fd(), outW.Fd(), errW.Fd()},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		outR.Close()
		errR.Close()
		if stdinW != nil {
			stdinW.Close()
		}
		return nil, nil, nil, fmt.Errorf("could not start %s: %w", argv[0], err)
	}
	if stdinW != nil {
		s.mu.Lock() // control handlers read it
		if s.stdin != nil {
			s.stdin.Close() // the last run's
		}
		s.stdin = stdinW
		s.mu.Unlock()
		if prompt != nil {
			// The prompt: the first turn.
			go s.writeIn(stdinW, userMessage(*prompt))
		}
	}
	leader := pids.Identity{PID: pid}
	if id, err := pids.Of(pid); err == nil {
		leader = id
	}
	s.mu.Lock() // interrupt reads it
	s.leader = leader
	s.mu.Unlock()
	if err := s.a.WritePID(state.AgentPIDFile, s.leader.String()); err != nil {
		s.emitError(err.Error(), false)
	}

	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status.PID = pid
	s.alive = true
	s.status.Started = now
	s.status.Instance = s.instance
	s.status.ExitCode, s.status.Signal = nil, ""
	s.snap.Activity = now
	ev := stream.Event{Type: stream.TypeSpawned, Kind: s.spec.Kind, Argv: shown, Cwd: s.spec.Cwd, PID: pid, Workspace: s.spec.Workspace}
	spawned = s.appendLocked(&ev, now)
	spawned = append([]byte(nil), spawned[:len(spawned)-1]...)
	// A plain command is running from the start: nothing it says or keeps quiet changes that.
	// So is the next turn process of a conversation: its turn began with the message.
	first := stream.Starting
	if s.machine.Mode == stream.Plain || next != nil {
		first = stream.Running
	}
	s.setStateLocked(first, "", now)
	switch {
	case prompt != nil:
		s.snap = s.machine.Begin(s.snap, now) // a turn is under way from its prompt
	case s.machine.InputOpen:
		s.setStateLocked(stream.Waiting, stream.ReasonInput, now) // a conversation with no word yet
	}
	s.writeStatusLocked() // the new run's pid, even if it was starting already
	return spawned, outR, errR, nil
}

// session decides how a start of the given mode treats the agent's session: it returns the
// session id for $AGT_SESSION_ID and whether the start resumes it. A resume needs a resume argv
// and a session the agent saved (one that got a reply); otherwise the start is fresh, and says
// so when a resume was asked for. A fresh start of a kind that is given its session id gets a
// new one (reusing one the agent saved would be refused as in use).
func (s *supervisor) session(mode string) (id string, resumed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id = s.status.SessionID // the readers of the last run may still be writing it
	switch {
	case mode == StartResume && len(s.spec.Resume) > 0 && id != "" && s.status.Resumable:
		return id, true
	case mode == StartResume && len(s.spec.Resume) > 0 && id != "":
		ev := stream.Event{Type: stream.TypeError, Source: stream.SourceSupervisor,
			Message: fmt.Sprintf("session %s was never saved; starting afresh with the original prompt", id)}
		s.appendLocked(&ev, time.Now())
		s.flushLocked()
	case mode == StartNew:
		return id, false
	}
	id = ""
	if s.spec.NewSession {
		id = NewSessionID()
	}
	s.status.SessionID, s.status.SessionTotal, s.status.Resumable = id, state.Usage{}, false
	return id, false
}

// promptFile returns a file holding prompt, read from its start: an agent reads it to its end
// as stdin. It lives in memory and goes when the last descriptor closes.
func promptFile(prompt string) (*os.File, error) {
	fd, err := unix.MemfdCreate("agt-prompt", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("prompt for stdin: %w", err)
	}
	f := os.NewFile(uintptr(fd), "agt-prompt")
	if _, err := io.WriteString(f, prompt); err != nil {
		f.Close()
		return nil, fmt.Errorf("prompt for stdin: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("prompt for stdin: %w", err)
	}
	return f, nil
}

// prompt reads the agent's prompt file; nil when it was spawned without one.
func (s *supervisor) prompt() (*string, error) {
	b, err := os.ReadFile(s.a.Path(state.PromptFile))
	if errors.Is(err, fs.ErrNotExist) && s.spec.PromptBytes == 0 {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read prompt of %s: %w", s.spec.Name, err)
	}
	p := string(b)
	return &p, nil
}

// tokens are the values of the $AGT_* tokens for this start.
func (s *supervisor) tokens(prompt *string, session string) map[string]string {
	vals := map[string]string{
		"AGT_NAME":        s.spec.Name,
		"AGT_PROMPT":      "",
		"AGT_PROMPT_FILE": "",
		"AGT_MODEL":       s.spec.Model,
		"AGT_SESSION_ID":  session,
		"AGT_WORKSPACE":   s.spec.Cwd,
		"AGT_RUN_DIR":     s.root,
	}
	if prompt != nil {
		vals["AGT_PROMPT"] = *prompt
		vals["AGT_PROMPT_FILE"] = s.a.Path(state.PromptFile)
	}
	return vals
}

// userMessage is a prompt as a Claude stream-json user message line, as the Agent SDK writes it.
func userMessage(prompt string) []byte {
	b := []byte(`{"type":"user","message":{"role":"user","content":`)
	b = stream.AppendString(b, prompt)
	return append(b, `},"parent_tool_use_id":null,"session_id":""}`+"\n"...)
}

// read starts the stdout and stderr readers; the returned channel closes when both reach EOF.
func (s *supervisor) read(outR, errR *os.File) <-chan struct{} {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer outR.Close()
		s.readStream(outR, s.a.Path(state.StdoutLog), false)
	}()
	go func() {
		defer wg.Done()
		defer errR.Close()
		s.readStream(errR, s.a.Path(state.StderrLog), true)
	}()
	go func() { wg.Wait(); close(done) }()
	return done
}

func (s *supervisor) readStream(r io.Reader, rawPath string, stderr bool) {
	raw := openCapped(rawPath, rawLogCap)
	defer raw.Close()
	lr := newLineReader(r, MaxLine)
	lr.tee = raw.Write
	for {
		line, truncated, n, err := lr.next()
		if err != nil {
			s.mu.Lock()
			s.flushLocked()
			s.mu.Unlock()
			return
		}
		// Events of lines already read go out in one write; the batch is written before
		// the reader can block, so batching adds no delay.
		s.emitLine(line, truncated, n, stderr, !lr.more())
	}
}

// emitLine turns one line of agent output into events.
func (s *supervisor) emitLine(line []byte, truncated bool, n int, stderr, flush bool) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = s.events[:0]
	switch {
	case stderr:
		s.events = append(s.events, stream.Event{Type: stream.TypeStderr, Line: string(line)})
		if !truncated {
			s.events = s.dec.DecodeStderr(s.events, line)
		}
	case truncated:
		// A cut line cannot be decoded; keep what fits and say so.
		if _, text := s.dec.(stream.Text); text {
			s.events = append(s.events, stream.Event{Type: stream.TypeOutput, Line: string(line)})
		} else {
			s.events = append(s.events, stream.Unparsed(line))
		}
	default:
		s.events = s.dec.Decode(s.events, line)
	}
	if len(s.events) == 0 {
		// A line the decoder folds away (a streamed token) is still a sign of life.
		if s.moveLocked(s.machine.Active(s.snap, now), now) {
			s.writeStatusLocked()
		}
	}
	for i := range s.events {
		ev := &s.events[i]
		if truncated && (ev.Type == stream.TypeStderr || ev.Type == stream.TypeOutput || ev.Type == stream.TypeUnparsed) {
			ev.Truncated, ev.Bytes = true, n
		}
		s.recordLocked(ev)
		answer := s.decideLocked(ev)
		s.appendLocked(ev, now)
		s.observeLocked(ev, now)
		if answer != nil {
			go s.writeIn(s.stdin, answer)
		}
	}
	if flush || len(s.pending) >= maxPending {
		s.flushLocked()
	}
}

// emitError records an error event from the supervisor.
func (s *supervisor) emitError(msg string, fatal bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ev := stream.Event{Type: stream.TypeError, Message: msg, Source: stream.SourceSupervisor, Fatal: fatal}
	s.appendLocked(&ev, time.Now())
	s.flushLocked()
}

// maxPending bounds the events held for one write.
const maxPending = 256 << 10

// appendLocked stamps ev and adds its line to the pending batch; flushLocked writes the batch.
// Every line is whole within one write (R20), and a batch never waits for more input. It
// returns the line (valid until the next append).
func (s *supervisor) appendLocked(ev *stream.Event, now time.Time) []byte {
	s.seq++
	ev.V, ev.TS, ev.Agent, ev.Seq = stream.Version, now, s.spec.Name, s.seq
	start := len(s.pending)
	s.pending = append(ev.AppendJSON(s.pending), '\n')
	s.status.LastSeq = s.seq
	if !s.dirty {
		// The main loop writes status.json within a second (see flush in run), so that
		// last_seq, turns, cost and the session catch up without a change of state.
		s.dirty = true
		s.kickLocked()
	}
	return s.pending[start:]
}

// flushLocked writes the pending events. When the disk refuses them (ENOSPC, EDQUOT, EFBIG,
// EIO…) they are counted as dropped and the agent goes on: its output keeps draining (R23).
// The first write that succeeds again is followed by an error event saying how many were lost.
// A log over its size cap is rotated (R22).
func (s *supervisor) flushLocked() {
	if len(s.pending) == 0 {
		return
	}
	err := s.writeLog(s.pending)
	if err != nil {
		n := int64(bytes.Count(s.pending, []byte{'\n'}))
		s.status.Dropped += n
		s.lost += n
		if s.writeErr == nil {
			fmt.Fprintf(os.Stderr, "agt supervise %s: write events: %v\n", s.spec.Name, err)
		}
		s.writeErr = err
	} else if s.lost > 0 {
		s.seq++
		ev := stream.Event{V: stream.Version, TS: time.Now(), Agent: s.spec.Name, Seq: s.seq, Type: stream.TypeError,
			Message: fmt.Sprintf("%d events lost: %v", s.lost, s.writeErr), Source: stream.SourceSupervisor}
		if s.writeLog(append(ev.AppendJSON(nil), '\n')) == nil {
			s.status.LastSeq = s.seq
			s.lost, s.writeErr = 0, nil
		}
	}
	s.pending = s.pending[:0]
	if cap(s.pending) > 4*maxPending {
		s.pending = nil // a huge line passed through: do not keep its buffer
	}
	if max := s.spec.LogMaxSize; max > 0 && s.log.Size() >= max {
		if err := s.log.Rotate(); err != nil {
			fmt.Fprintf(os.Stderr, "agt supervise %s: %v\n", s.spec.Name, err)
		}
	}
}

// writeLog writes to the event log, unless the test hook says the disk is full.
func (s *supervisor) writeLog(b []byte) error {
	if TestOnlyDiskFull != nil && TestOnlyDiskFull() {
		return fmt.Errorf("write %s: %w", s.a.Path(state.EventsFile), syscall.ENOSPC)
	}
	return s.log.Write(b)
}

// recordLocked records what an event of the agent tells about it in the status, before the
// event is written: a result is numbered with the agent's count of finished turns.
func (s *supervisor) recordLocked(ev *stream.Event) {
	switch ev.Type {
	case stream.TypeSession:
		if ev.SessionID != "" && ev.SessionID != s.status.SessionID {
			s.status.SessionTotal, s.status.Resumable = state.Usage{}, false
			s.status.SessionID = ev.SessionID
		}
		if ev.Model != "" {
			s.status.Model = ev.Model
		}
	case stream.TypeText, stream.TypeToolUse, stream.TypeToolResult:
		// The model replied: the agent has saved its session, which a restart can resume.
		s.status.Resumable = s.status.SessionID != ""
	case stream.TypeResult:
		s.status.Turns++
		ev.Turns = s.status.Turns
		if ev.OK {
			s.status.Resumable = s.status.SessionID != ""
			s.status.Error = ""
		}
		if ev.CostUSD != nil && !math.IsNaN(*ev.CostUSD) && !math.IsInf(*ev.CostUSD, 0) {
			c := *ev.CostUSD
			if s.status.CostUSD != nil {
				c += *s.status.CostUSD
			}
			s.status.CostUSD = &c
			if max := s.spec.MaxCost; max > 0 && c > max && !s.overBudget {
				// Past the budget: the agent ends, failed (budget), with what it spent.
				s.overBudget = true
				ev := stream.Event{Type: stream.TypeError, Source: stream.SourceSupervisor, Fatal: true, Class: stream.ClassBudget,
					Message: fmt.Sprintf("spent $%s, over the budget of $%s: stopping", costText(c), costText(max))}
				s.appendLocked(&ev, time.Now())
				s.status.Error = ev.Message
				s.kickLocked()
			}
		}
		if ev.Usage != nil {
			// state.Usage is stream.Usage's twin (state does not import stream).
			(*stream.Usage)(&s.status.Usage).Add(*ev.Usage)
		}
		if r, ok := s.dec.(stream.SessionResumer); ok {
			if total, ok := r.SessionTotal(s.status.SessionID); ok {
				s.status.SessionTotal = state.Usage(total)
			}
		}
	}
}

// observeLocked feeds an event to the state machine, writing the status when the state moved.
func (s *supervisor) observeLocked(ev *stream.Event, now time.Time) {
	if ev.Type == stream.TypePermission && ev.Decision == "" && s.spec.Stdin == config.StdinStreamJSON {
		s.askedLocked(ev)
	}
	if s.moveLocked(s.machine.Event(s.snap, ev, now), now) {
		s.writeStatusLocked()
	}
	if ev.Type == stream.TypeResult {
		s.endIfIdleLocked()
		s.sendQueuedLocked(now)
	}
}

// moveLocked records a new snapshot, emitting a state event when the state changed, which it
// reports. Writing the status is the caller's, once it has recorded all that goes with the move:
// the state event is written to the log after the status (writeStatusLocked), so that whoever
// reads the state in the log finds it in status.json too.
func (s *supervisor) moveLocked(next stream.Snapshot, now time.Time) bool {
	prev := s.snap
	s.snap = next
	if next.State == prev.State && next.Reason == prev.Reason {
		return false
	}
	ev := stream.Event{Type: stream.TypeState, From: prev.State, To: next.State, Reason: next.Reason}
	s.appendLocked(&ev, now)
	s.hooks.changed(prev.State, next.State, next.Reason)
	s.status.State, s.status.Reason, s.status.Since = next.State, next.Reason, next.Since
	s.kickLocked()
	return true
}

// kickLocked wakes the main loop to re-arm its timers: the state's due time and the flush;
// and to stop the agent once it is over its budget.
func (s *supervisor) kickLocked() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
	if s.overBudget && !s.budgetSent {
		s.budgetSent = true
		close(s.budgetC)
	}
}

// isOverBudget reports whether the agent spent more than its budget.
func (s *supervisor) isOverBudget() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.overBudget
}

// costText writes a cost as ps does, to the cent, or to the micro-dollar below a cent.
func costText(c float64) string {
	if c < 0.01 {
		return strconv.FormatFloat(c, 'f', 6, 64)
	}
	return strconv.FormatFloat(c, 'f', 2, 64)
}

func (s *supervisor) setStateLocked(state, reason string, now time.Time) {
	next := s.snap
	next.State, next.Reason, next.Since = state, reason, now
	s.moveLocked(next, now)
}

// writeStatusLocked writes status.json, then the events waiting to be written.
func (s *supervisor) writeStatusLocked() {
	defer s.flushLocked()
	s.status.Updated = time.Now()
	s.status.Activity, s.status.Doing = s.snap.Activity, s.snap.Doing
	st := s.status
	if err := s.lock.WriteStatus(&st); err != nil {
		fmt.Fprintf(os.Stderr, "agt supervise %s: %v\n", s.spec.Name, err)
		return
	}
	s.dirty = false
}

// tree is every process that belongs to the agent: its group, the supervisor's descendants,
// and whatever carries its AGT_INSTANCE.
func (s *supervisor) tree() pids.Tree {
	return pids.Tree{
		Leader:    s.leader,
		Group:     s.leader.PID,
		Root:      os.Getpid(),
		Env:       "AGT_INSTANCE=" + s.instance,
		GroupOnly: TestOnlyGroupKillOnly,
		Spare:     processName,
		SparePIDs: s.hooks.pids(),
	}
}

// run is the main loop of one generation: it waits for the agent's exit (from wait, never
// from stdout EOF), stop requests and silence deadlines. It returns once nothing of the
// generation is left, with how the agent ended and whether a stop was asked for.
func (s *supervisor) run(sigs signals, g *generation) (exit *stream.Exit, failure stream.Failure, stopping bool) {
	var (
		graceEnd  <-chan time.Time
		graceAt   time.Time
		grace     *time.Timer
		due       = time.NewTimer(time.Hour)
		flush     = time.NewTimer(time.Hour)
		flushArmd bool
	)
	defer due.Stop()
	defer flush.Stop()
	// Without inotify (its per-user limit of instances is shared by every supervisor), the
	// removal of the agent's directory is noticed by a check every few seconds instead.
	var goneCheck <-chan time.Time
	if s.gone == nil {
		t := time.NewTicker(goneCheckEvery)
		defer t.Stop()
		goneCheck = t.C
	}
	arm := func() {
		s.mu.Lock()
		when := s.machine.Due(s.snap)
		s.mu.Unlock()
		if when.IsZero() {
			due.Stop()
			return
		}
		d := time.Until(when)
		if d < time.Second {
			d = time.Second // never tick faster than once a second
		}
		due.Reset(d)
	}
	arm()
	stop := func(reason string) {
		if stopping {
			// Another request can bring the kill forward, never put it off.
			if at := s.stopDeadline(time.Now(), false); at.Before(graceAt) {
				graceAt = at
				grace.Reset(time.Until(at))
			}
			return
		}
		stopping = true
		s.a.SetWant("down") // already so when agt stop asked (R6); not when a plain SIGTERM did
		graceAt = s.stopDeadline(time.Now(), true)
		s.mu.Lock()
		s.setStateLocked(stream.Stopping, reason, time.Now())
		s.writeStatusLocked()
		s.mu.Unlock()
		s.tree().Signal(syscall.SIGTERM)
		grace = time.NewTimer(time.Until(graceAt))
		graceEnd = grace.C
	}
	removed := func() {
		fmt.Fprintf(os.Stderr, "agt supervise %s: %s was removed; stopping the agent\n", s.spec.Name, s.a.Dir)
		stop("run directory removed")
	}
	for exit == nil {
		select {
		case <-sigs.term:
			stop("stop")
		case <-s.budgetC:
			s.budgetC = nil // once
			stop("budget")
		case <-sigs.chld:
			exit = s.reap()
		case <-graceEnd:
			s.tree().Signal(syscall.SIGKILL)
		case <-goneCheck:
			if s.lock.Check() != nil && !stopping {
				removed()
			}
		case <-s.gone:
			s.gone = nil
			removed()
		case <-due.C:
			s.mu.Lock()
			if s.moveLocked(s.machine.Tick(s.snap, time.Now()), time.Now()) {
				s.writeStatusLocked()
			}
			s.mu.Unlock()
			arm()
		case <-s.kick:
			arm()
			if !flushArmd {
				flush.Reset(time.Second)
				flushArmd = true
			}
		case <-flush.C:
			flushArmd = false
			s.mu.Lock()
			if s.dirty {
				s.writeStatusLocked()
			}
			s.mu.Unlock()
		}
	}

	// The agent is gone. Whatever it left behind goes too: within the stop grace when
	// stopping, else after a short grace, then SIGKILL; nothing is left when we write the end.
	deadline := time.Now().Add(cleanupGrace)
	if stopping {
		deadline = graceAt
	}
	if s.sweep(sigs, graceEnd, deadline, stopping) {
		stopping = true
	}
	s.drain(g)

	s.mu.Lock()
	now := time.Now()
	s.endPermissionsLocked(now)
	s.events, failure = s.dec.End(s.events[:0], *exit)
	for i := range s.events {
		s.recordLocked(&s.events[i]) // a turn's result that only the end reveals (opencode)
		s.appendLocked(&s.events[i], now)
	}
	s.flushLocked()
	s.mu.Unlock()

	return exit, failure, stopping
}

// reap collects every child that has exited (adopted orphans included: we are their subreaper)
// and returns the agent's exit once it is among them. It is the only place that waits.
func (s *supervisor) reap() *stream.Exit {
	var exit *stream.Exit
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
			return exit
		}
		if s.hooks.reaped(pid, ws) {
			continue
		}
		s.mu.Lock()
		leader := s.alive && pid == s.leader.PID
		if leader {
			s.alive = false // reaped: its pid may be anyone's from now on
		}
		s.mu.Unlock()
		if !leader {
			continue
		}
		e := stream.Exit{Code: ws.ExitStatus()}
		if ws.Signaled() {
			e = stream.Exit{Code: -1, Signal: unix.SignalName(ws.Signal())}
		}
		exit = &e
	}
}

// stopDeadline is when a stop request that came at now wants the agent killed: after the
// grace agt stop asked for (stop_timeout), else, for the first request, after the grace the
// agent was spawned with; a later request that asks for none (a plain second SIGTERM) wants
// it at once. Two stops that race both signal: the second one asks for a grace too, and so
// does not cut the first one's short.
func (s *supervisor) stopDeadline(now time.Time, first bool) time.Time {
	if g, ok := s.a.StopGrace(); ok {
		return now.Add(g)
	}
	if first {
		return now.Add(time.Duration(s.spec.StopTimeout))
	}
	return now
}

// sweep signals what is left of the agent's tree until nothing is: SIGTERM first, SIGKILL once
// the deadline passes (or the stop grace ends), reaping adopted children as they exit.
func (s *supervisor) sweep(sigs signals, graceEnd <-chan time.Time, deadline time.Time, stopAsked bool) bool {
	t := s.tree()
	t.Signal(syscall.SIGTERM)
	killed := false
	// Each look costs a scan of /proc: look often at first (most processes exit at once on
	// SIGTERM), then less and less, up to five times a second.
	wait := 10 * time.Millisecond
	tick := time.NewTimer(wait)
	defer tick.Stop()
	for {
		s.reap()
		t.SparePIDs = s.hooks.pids() // a hook started since is no member either
		members, err := t.Members()
		if err == nil && len(members) == 0 {
			return stopAsked
		}
		if !killed && !time.Now().Before(deadline) {
			if err == nil {
				pids.SignalAll(members, syscall.SIGKILL) // those just seen: no second scan
			} else {
				t.Signal(syscall.SIGKILL)
			}
			killed = true
		}
		if killed && time.Now().After(deadline.Add(5*time.Second)) {
			s.emitError(fmt.Sprintf("%d processes survived SIGKILL", len(members)), false)
			return stopAsked
		}
		select {
		case <-sigs.term:
			// A stop now ends the agent for good; a later one can bring the kill forward.
			if at := s.stopDeadline(time.Now(), false); stopAsked && at.Before(deadline) {
				deadline = at
			}
			stopAsked = true
		case <-sigs.chld:
		case <-graceEnd:
			deadline = time.Now()
		case <-tick.C:
			if wait < 200*time.Millisecond {
				wait *= 2
			}
			tick.Reset(wait)
		}
	}
}

// drain waits a moment for the readers to reach EOF. Once the tree is gone nobody holds the
// pipes, so this returns at once unless a process outside the tree kept a copy.
func (s *supervisor) drain(g *generation) {
	select {
	case <-g.readers:
	case <-time.After(time.Second):
		s.emitError("agent output still open after exit; stopped reading", false)
		// Closing our ends ends the readers, so they cannot feed the next run's decoder.
		g.outR.Close()
		g.errR.Close()
		<-g.readers
	}
}

// finish writes the exit event (when exit is not nil), the final state event and the final
// status.
func (s *supervisor) finish(state, reason string, exit *stream.Exit) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if exit != nil {
		s.recordExitLocked(exit, now)
	}
	if state == stream.Exited {
		s.status.Error = "" // the last failure was cured
	}
	s.setStateLocked(state, reason, now)
	// The other way round from a live move: a follower stops once the status is final, so the
	// final state event must be in the log by then.
	s.flushLocked()
	s.writeStatusLocked()
}

// recordExitLocked writes the exit event and keeps the exit in the status and its history.
func (s *supervisor) recordExitLocked(exit *stream.Exit, now time.Time) {
	ev := stream.Event{Type: stream.TypeExit, Signal: exit.Signal}
	rec := state.Exit{Signal: exit.Signal, At: now}
	s.status.ExitCode = nil
	if exit.Signal == "" {
		code := exit.Code
		ev.Code, rec.Code, s.status.ExitCode = &code, &code, &code
	}
	s.status.Signal = exit.Signal
	s.status.History = append(s.status.History, rec)
	if n := len(s.status.History); n > state.HistoryLen {
		s.status.History = s.status.History[n-state.HistoryLen:]
	}
	s.appendLocked(&ev, now)
	s.flushLocked()
}
