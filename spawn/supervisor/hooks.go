package supervisor

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"agt/spawn/ctl"
	"agt/state"
)

// A hook (agt.toml on_state) is a command run without a shell at each change of the agent's
// state, with AGT_NAME, AGT_STATE, AGT_REASON, AGT_PREV_STATE and AGT_RUN_DIR in its
// environment: a desktop notification, a chat webhook. Hooks run one at a time, in the order of
// the changes, from a goroutine of their own: a slow hook never holds the supervisor up. One that
// runs past hook_timeout is killed with its process group, and every failure is logged in
// supervisor.log, as is its output, bounded (hooklog.go). Hooks run in the agent's cgroup, where
// it has one, and what they leave running is killed when the supervisor ends (uncontain). The supervisor, which reaps all its children, hands a hook's exit status to
// the goroutine that runs it; the stop sweeps spare a running hook and what it started.

// DefaultHookTimeout bounds a hook's run.
const DefaultHookTimeout = 10 * time.Second

// hookQueue bounds the state changes waiting for their hook; past it, changes are dropped and
// logged (a hook slower than the agent's changes).
const hookQueue = 64

// transition is one change of state; argv, when set, is what runs instead of the on_state hook
// (a desktop notification).
type transition struct {
	prev, state, reason string
	argv                []string
}

// String names the change in supervisor.log: "running → exited", or "running" for an agent's
// first state, which has none before it.
func (t transition) String() string {
	if t.prev == "" {
		return t.state
	}
	return t.prev + " → " + t.state
}

// hooks runs the on_state hook of one agent.
type hooks struct {
	argv    []string
	timeout time.Duration
	env     []string // the supervisor's environment plus AGT_NAME and AGT_RUN_DIR
	queue   chan transition
	done    chan struct{} // closed when the runner has run the last hook
	notify  *notifier     // [notify]: desktop notifications run here, as hooks

	cgroup *os.File // where hooks start: the agent's cgroup for hooks, nil without one
	log    hookLog  // where their output goes, bounded

	mu      sync.Mutex
	running map[int]chan unix.WaitStatus // hook pid → where its exit goes, until reaped
}

// newHooks returns the runner of the agent's on_state hook and notifications; nil for none.
func newHooks(spec *state.Spec, a *state.Agent, root string) *hooks {
	argv, timeout, name := spec.OnState, time.Duration(spec.HookTimeout), spec.Name
	if len(argv) == 0 && spec.Notify == nil {
		return nil
	}
	if timeout <= 0 {
		timeout = DefaultHookTimeout
	}
	h := &hooks{
		argv: argv, timeout: timeout,
		env:     append(ctl.SupervisorEnv(), "AGT_NAME="+name, "AGT_RUN_DIR="+root),
		queue:   make(chan transition, hookQueue),
		done:    make(chan struct{}),
		running: make(map[int]chan unix.WaitStatus),
		log:     hookLog{path: logPath(root, name)},
	}
	h.notify = newNotifier(a, spec.Notify, func(argv []string) {
		select {
		case h.queue <- transition{argv: argv}:
		default:
			fmt.Fprintf(os.Stderr, "agt supervise: notify: %d hooks wait already; dropped a desktop notification\n", hookQueue)
		}
	})
	go h.run()
	return h
}

// changed queues the hook of one change of state; it never blocks.
func (h *hooks) changed(prev, state, reason string) {
	if h == nil {
		return
	}
	h.notify.changed(prev, state, reason)
	if len(h.argv) == 0 {
		return
	}
	t := transition{prev: prev, state: state, reason: reason}
	select {
	case h.queue <- t:
	default:
		fmt.Fprintf(os.Stderr, "agt supervise: on_state hook: %d changes wait already; dropped %s\n", hookQueue, t)
	}
}

func (h *hooks) run() {
	defer close(h.done)
	for t := range h.queue {
		if err := h.runOne(t); err != nil {
			fmt.Fprintf(os.Stderr, "agt supervise: on_state hook for %s: %v\n", t, err)
		}
	}
}

func (h *hooks) runOne(t transition) error {
	argv := h.argv
	if t.argv != nil {
		argv = t.argv
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return err
	}
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		return err
	}
	defer devNull.Close()
	what := "on_state hook for " + t.String()
	if t.argv != nil {
		what = "notification " + argv[0]
	}
	out, err := h.log.pipe(what)
	if err != nil {
		return err
	}
	defer out.Close() // the hook's ends, once it started: the copier sees the end when it exits
	env := append(h.env[:len(h.env):len(h.env)], "AGT_STATE="+t.state, "AGT_REASON="+t.reason, "AGT_PREV_STATE="+t.prev)
	exited := make(chan unix.WaitStatus, 1)
	// Forked and registered under one lock, which the reaper takes too: the exit of a hook is
	// never reaped before it is known to be a hook's.
	h.mu.Lock()
	pid, err := forkExec(path, argv, &syscall.ProcAttr{
		Env:   env,
		Files: []uintptr{devNull.Fd(), out.Fd(), out.Fd()}, // its output in supervisor.log, bounded
		Sys:   &syscall.SysProcAttr{Setsid: true},
	}, h.cgroup) // with the agent: ended with it (R37)
	if err == nil {
		h.running[pid] = exited
	}
	h.mu.Unlock()
	if err != nil {
		return err
	}
	timer := time.NewTimer(h.timeout)
	defer timer.Stop()
	select {
	case ws := <-exited:
		return waitError(ws)
	case <-timer.C:
		// Not reaped yet (its exit would be in exited), so its pid and group are still its own.
		unix.Kill(-pid, unix.SIGKILL)
		<-exited
		return fmt.Errorf("killed after %v", h.timeout)
	}
}

func waitError(ws unix.WaitStatus) error {
	switch {
	case ws.Signaled():
		return fmt.Errorf("killed by %s", unix.SignalName(ws.Signal()))
	case ws.ExitStatus() != 0:
		return fmt.Errorf("exit code %d", ws.ExitStatus())
	}
	return nil
}

// reaped hands the exit of pid to its hook, if it is one's; false when it is not.
func (h *hooks) reaped(pid int, ws unix.WaitStatus) bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	ch, ok := h.running[pid]
	if ok {
		delete(h.running, pid)
		ch <- ws
	}
	return ok
}

// pids returns the hooks running now, for the stop sweeps to spare.
func (h *hooks) pids() []int {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]int, 0, len(h.running))
	for pid := range h.running {
		out = append(out, pid)
	}
	return out
}

// finish runs the hooks still queued, the last change's above all (the agent's end), reaping
// their exits itself: the supervisor's main loop is over. It returns once they ran or were
// killed.
func (h *hooks) finish() {
	if h == nil {
		return
	}
	h.notify.finish() // its last desktop notification goes in the queue first
	close(h.queue)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-h.done:
			return
		case <-tick.C:
			for {
				var ws unix.WaitStatus
				pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
				if err == unix.EINTR {
					continue
				}
				if err != nil || pid <= 0 {
					break
				}
				h.reaped(pid, ws)
			}
		}
	}
}
