// Package spawn starts agents without a daemon and is the client every command uses: `agt
// spawn` reserves the name, writes the record and re-executes agt detached as the agent's
// supervisor (package supervisor, which holds the agent's lock for its whole life); Observe,
// Stop, Reap, Control, Attach and Permissions read the record and talk to that supervisor. It
// never imports the supervisor: what both ends agree on is package ctl.
//
// Invariants: at most one supervisor per name (the lock); a spawn that fails leaves nothing
// behind (no record, no process); `want` is set to down before any stop signal; a status is
// trusted only while its supervisor holds the lock; only processes whose recorded identity
// still matches are signalled.
package spawn

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"agt/pids"
	"agt/spawn/ctl"
	"agt/state"
	"agt/stream"
)

// Options say what to spawn: the record to write (Start sets its version, creation time,
// prompt size and workspace) and how to start.
type Options struct {
	// Spec is spec.json: Argv and Resume are argv templates whose $AGT_* tokens are expanded at
	// each start; Cwd is the working directory, replaced by the workspace Prepare makes.
	state.Spec
	Root   string // run directory
	Prompt *string
	// MaxAgents caps the agents alive at once in the run directory; 0 means no cap.
	MaxAgents int
	// MaxCostTotal is the run directory's budget in USD: no spawn once its agents spent it.
	MaxCostTotal float64

	// Prepare, when set, runs once the name is reserved and before the agent starts: it makes
	// the agent's workspace and returns the directory to run in (replacing Cwd), the
	// workspace's description for the spawned event and the record, and how to undo it when
	// the agent then cannot start.
	Prepare func() (dir string, workspace json.RawMessage, undo func(), err error)
}

// Start reserves opts.Name, starts its supervisor and returns once the agent has started, with
// the spawned event as one JSON line (no newline). If the agent cannot start, it returns why and
// leaves no record behind.
func Start(ctx context.Context, opts Options) ([]byte, error) {
	if len(opts.Argv) == 0 {
		return nil, errors.New("no command to run")
	}
	d, err := state.Open(opts.Root)
	if err != nil {
		return nil, err
	}
	sup, err := startSupervisor(d, opts.Name, StartNew)
	if err != nil {
		return nil, err
	}
	spawned, err := reserveAndStart(ctx, d, sup, opts)
	if err != nil {
		sup.cancel()
	}
	return spawned, err
}

// ErrFull is a spawn refused because max_agents agents are alive: another host may have room.
var ErrFull = errors.New("too many agents running")

// reserveAndStart reserves the name, makes the workspace and writes the record, then lets sup
// go. Whatever fails, the record and workspace are removed again; the caller cancels sup.
func reserveAndStart(ctx context.Context, d *state.Dir, sup *pending, opts Options) ([]byte, error) {
	if err := CheckBudget(d, opts.MaxCostTotal); err != nil {
		return nil, err
	}
	release := func() {}
	if opts.MaxAgents > 0 {
		// Counting and reserving under one lock: ten spawns at once against a cap of three
		// start exactly three.
		unlock, err := d.LockSpawns(ctx)
		if err != nil {
			return nil, err
		}
		n := Alive(d)
		if n >= opts.MaxAgents {
			unlock()
			return nil, fmt.Errorf("%w (%d of %d); stop one or raise max_agents", ErrFull, n, opts.MaxAgents)
		}
		release = unlock
	}
	a, err := d.Create(opts.Name)
	// Once reserved, the new record counts as alive for the next spawn (no status yet reads
	// as unknown), so the lock need not cover the workspace and the start.
	release()
	if err != nil {
		return nil, err
	}
	// Who writes the record: should this spawn be killed before the supervisor takes over,
	// the record reads as lost, not unknown for ever, and agt reap finishes it.
	if self, err := pids.Self(); err == nil {
		if err := a.WritePID(state.SpawnerPIDFile, self.String()); err != nil {
			a.Remove()
			return nil, err
		}
	}
	undo := func() {}
	if opts.Prepare != nil {
		dir, ws, u, err := opts.Prepare()
		if err != nil {
			a.Remove()
			return nil, err
		}
		opts.Cwd, opts.Workspace = dir, ws
		if u != nil {
			undo = u
		}
	}
	spawned, err := start(a, sup, opts)
	if err != nil {
		undo()
		a.Remove()
		return nil, err
	}
	return spawned, nil
}

func start(a *state.Agent, sup *pending, opts Options) ([]byte, error) {
	spec := opts.Spec
	spec.Created = time.Now().UTC()
	if opts.Prompt != nil {
		// The prompt stays out of the spec and out of every event: only its size is shown.
		if err := state.WriteFileAtomic(a.Path(state.PromptFile), []byte(*opts.Prompt)); err != nil {
			return nil, fmt.Errorf("save prompt of %s: %w", a.Name, err)
		}
		spec.PromptBytes = len(*opts.Prompt)
	}
	if err := a.WriteSpec(&spec); err != nil {
		return nil, err
	}
	// A stop that raced the spawn found a record without a supervisor, wrote want = down and
	// finished it as stopped: its word stands, and the spawn fails rather than start what the
	// stop reported stopped (R6). A stop after this is seen by the supervisor, which checks
	// want once it holds the lock.
	if err := a.ClaimWant(); errors.Is(err, state.ErrStoppedFirst) {
		return nil, fmt.Errorf("agent %q was stopped while it was being spawned; spawn it again if it should run", a.Name)
	} else if err != nil {
		return nil, err
	}
	return sup.release()
}

// pending is a supervisor started ahead of its record, so that its start-up (a whole agt
// start-up, the larger part of a spawn) overlaps the caller's writing of the record. It waits
// on its go pipe before it touches the agent's directory, and exits quietly when the pipe
// closes without a go.
type pending struct {
	name   string
	log    string   // the supervisor log, which it opens itself once told to go
	ready  *os.File // read end of the readiness pipe
	goW    *os.File // write end of the go pipe
	exited chan struct{}
}

// SupervisorArgs is the argv of the supervisor of the agent name in root, started as mode
// says: readiness on descriptor 3, the go-ahead on 4. agt's main recognises exactly this form.
func SupervisorArgs(root, mode, name string) []string {
	return []string{"agt", "--run-dir", root, "supervise", "--ready-fd", "3", "--go-fd", "4", "--mode", mode, name}
}

// startSupervisor re-executes agt detached as the supervisor of the agent name in d.
func startSupervisor(d *state.Dir, name, mode string) (*pending, error) {
	closeInheritedOnExec()
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer readyW.Close()
	goR, goW, err := os.Pipe()
	if err != nil {
		readyR.Close()
		return nil, err
	}
	defer goR.Close()
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		readyR.Close()
		goW.Close()
		return nil, err
	}
	defer devNull.Close()
	// /proc/self/exe is this very binary, even if the file was replaced since it started.
	// Stdout and stderr are /dev/null until the supervisor puts its log there: not ours, or
	// `$(agt spawn …)` would wait for the supervisor to close them. syscall.ForkExec, not
	// os/exec: a third of the cost, which counts twice in every spawn.
	null := devNull.Fd()
	pid, err := syscall.ForkExec("/proc/self/exe",
		SupervisorArgs(d.Root, mode, name),
		&syscall.ProcAttr{
			Env:   ctl.SupervisorEnv(),
			Files: []uintptr{null, null, null, readyW.Fd(), goR.Fd()},
			Sys:   &syscall.SysProcAttr{Setsid: true},
		})
	if err != nil {
		readyR.Close()
		goW.Close()
		return nil, fmt.Errorf("start supervisor of %s: %w", name, err)
	}
	p := &pending{name: name, log: d.AgentFile(name, state.SupervisorLog),
		ready: readyR, goW: goW, exited: make(chan struct{})}
	go func() {
		// Reaped here while we live; once we exit, whoever adopts it does.
		var ws syscall.WaitStatus
		for {
			if _, err := syscall.Wait4(pid, &ws, 0, nil); err != syscall.EINTR {
				break
			}
		}
		close(p.exited)
	}()
	return p, nil
}

// cancel tells the supervisor there is nothing to supervise and waits until it has gone.
func (p *pending) cancel() {
	p.goW.Close()
	p.ready.Close()
	<-p.exited
}

// release tells the supervisor to go, now that the record is complete, and waits until the
// agent has started. It returns the spawned event.
func (p *pending) release() ([]byte, error) {
	defer p.ready.Close()
	_, err := p.goW.Write([]byte{'g'})
	p.goW.Close()
	if err != nil {
		<-p.exited
		return nil, fmt.Errorf("supervisor of %s ended before the agent started: %s", p.name, logTail(p.log))
	}
	var msg ctl.Ready
	line, rerr := bufio.NewReader(p.ready).ReadBytes('\n')
	if rerr == nil {
		msg, rerr = ctl.ParseReady(line)
	}
	switch {
	case rerr != nil:
		<-p.exited
		return nil, fmt.Errorf("supervisor of %s ended before the agent started: %s", p.name, logTail(p.log))
	case msg.Error != "":
		<-p.exited // it wrote its last; the record can go
		return nil, errors.New(msg.Error)
	}
	return msg.Spawned, nil
}

// logTail returns the last line of a log, for error messages.
func logTail(path string) string {
	line, err := state.LastLine(path, 64<<10, func(l []byte) bool {
		l = bytes.TrimSpace(l)
		return len(l) > 0 && !bytes.HasPrefix(l, []byte("agt: hint:"))
	})
	if err != nil || line == nil {
		return "no diagnostics"
	}
	return strings.TrimPrefix(string(bytes.TrimSpace(line)), "agt: ")
}

// ExitCode is the code a shell would give for the agent's end: its exit code, 128+N when a
// signal killed it. ok is false when nobody saw how it ended.
func ExitCode(st *state.Status) (code int, ok bool) {
	if st.State == stream.Lost || st.State == Unknown {
		return 0, false // whatever the status says, it is not how the agent ended
	}
	if st.ExitCode != nil {
		return *st.ExitCode, true
	}
	if st.Signal != "" {
		if n := signalNumber(st.Signal); n > 0 {
			return 128 + n, true
		}
		return 1, true
	}
	if st.State == stream.Failed {
		return 1, true
	}
	return 0, false
}

func signalNumber(name string) int {
	return int(unix.SignalNum(name))
}

// Alive counts the agents of d that are not final: running, waiting, restarting, being spawned.
// Lost agents do not count: nothing of theirs runs under a supervisor.
func Alive(d *state.Dir) int {
	agents, err := d.Agents()
	if err != nil {
		return 0
	}
	n := 0
	for _, a := range agents {
		st := Observe(a)
		if !stream.IsFinal(st.State) && st.State != stream.Lost {
			n++
		}
	}
	return n
}

// Spent sums what the agents of d spent, as their status says.
func Spent(d *state.Dir) float64 {
	agents, err := d.Agents()
	if err != nil {
		return 0
	}
	total := 0.0
	for _, a := range agents {
		if st := Observe(a); st.CostUSD != nil {
			total += *st.CostUSD
		}
	}
	return total
}

// CheckBudget refuses when the agents of d spent max USD or more (max_cost_total; 0: no budget).
func CheckBudget(d *state.Dir, max float64) error {
	if max <= 0 {
		return nil
	}
	if spent := Spent(d); spent >= max {
		return fmt.Errorf("the run directory's budget is spent: $%s of $%s (max_cost_total); raise it, or agt rm the agents that spent it", ctl.CostText(spent), ctl.CostText(max))
	}
	return nil
}

// Restart starts a's agent again from its record: a live one is stopped first (as Stop, with
// grace), a lost one reaped. It resumes the agent's session where its kind can, unless fresh, and returns the
// spawned event of the new run. The restart count and the event sequence carry on.
func Restart(ctx context.Context, a *state.Agent, grace time.Duration, fresh bool) ([]byte, error) {
	st := Observe(a)
	var said os.FileInfo
	switch {
	case st.State == stream.Lost:
		if _, err := Reap(a); err != nil {
			return nil, err
		}
	case !stream.IsFinal(st.State):
		if _, err := stop(ctx, a, grace, &said); err != nil {
			return nil, err
		}
	}
	if err := a.WaitFree(ctx); err != nil {
		return nil, err
	}
	if now, err := os.Stat(a.Path(state.WantFile)); said != nil && (err != nil || !os.SameFile(said, now)) {
		// An agt stop came while this restart stopped the agent: it is the later word, and
		// it returns 0 only if nothing runs after it.
		return nil, fmt.Errorf("%s was stopped (agt stop) while it restarted, and stays stopped; run 'agt restart %s' again to start it", a.Name, a.Name)
	}
	if err := a.SetWant("up"); err != nil {
		return nil, err
	}
	d, err := state.Open(filepath.Dir(filepath.Dir(a.Dir)))
	if err != nil {
		return nil, err
	}
	mode := StartResume
	if fresh {
		mode = StartFresh
	}
	sup, err := startSupervisor(d, a.Name, mode)
	if err != nil {
		return nil, err
	}
	return sup.release()
}
