package spawn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"

	"github.com/tidwall/gjson"
	"golang.org/x/sys/unix"

	"agt/config"
	"agt/pids"
	"agt/spawn/ctl"
	"agt/state"
	"agt/stream"
)

// Unknown is the state reported for an agent whose status cannot be read.
const Unknown = "unknown"

// Observe returns a's status as a reader may trust it (R5): the recorded status while the
// supervisor holds the lock or once it is final; "lost" when it claims to be alive but nobody
// holds the lock; "unknown" when there is no readable status. When the supervisor knows the end
// that status.json does not hold yet (a full disk: R38), the status it holds, asked over the
// control channel. It never starts a process, and waits for nothing but that answer.
func Observe(a *state.Agent) *state.Status {
	st, err := a.ReadStatus()
	if err != nil {
		reason := "no status yet"
		if !errors.Is(err, fs.ErrNotExist) {
			reason = "status unreadable"
		}
		st = &state.Status{Name: a.Name, State: Unknown, Reason: reason}
		if reason == "no status yet" && spawnLost(a, st) && !a.Supervised() {
			// Its spawn was killed before the supervisor started: agt reap finishes it.
			st.State, st.Reason = stream.Lost, "spawn killed before the agent started"
		}
		return st
	}
	st.Name = a.Name
	if stream.IsFinal(st.State) {
		return st
	}
	switch supervised, endKnown := a.Liveness(); {
	case !supervised:
		st.Reason = "supervisor gone (was " + st.State + ")"
		st.State = stream.Lost
	case endKnown:
		if held := heldStatus(a); held != nil {
			return held
		}
	}
	return st
}

// heldStatus is a's status as its supervisor holds it, nil when it cannot say.
func heldStatus(a *state.Agent) *state.Status {
	r, err := Control(context.Background(), a, Request{Op: ctl.OpStatus})
	if err != nil || r.Status == nil {
		return nil
	}
	r.Status.Name = a.Name
	return r.Status
}

// WaitEnd blocks until a's end is known: its supervisor says so (state.WaitEndKnown), even
// while its status cannot be written, or, for a supervisor that never says (an older agt's),
// until it lets go of its lock.
func WaitEnd(ctx context.Context, a *state.Agent) error {
	if err := a.WaitEndKnown(ctx); err != nil {
		return err
	}
	if st := Observe(a); stream.IsFinal(st.State) {
		return nil
	}
	return a.WaitFree(ctx)
}

// Stop stops a's agent and returns its final status once written (R13). It writes want=down
// before any signal (R6), and with it grace, the time between SIGTERM and SIGKILL that the
// supervisor takes instead of the one the agent was spawned with (0 kills at once; a negative
// grace keeps the agent's own). Once the grace has passed, a second SIGTERM tells the
// supervisor to SIGKILL at once, should it still wait; it also cuts short the grace of a stop
// already under way. A dead supervisor is not waited for: the agent's tree is reaped from its
// recorded identities instead (R9), with a short fixed grace.
func Stop(ctx context.Context, a *state.Agent, grace time.Duration) (*state.Status, error) {
	return stop(ctx, a, grace, nil)
}

// stop is Stop; when said is not nil, it is set to the want file this stop wrote, so that a
// restart can tell whether another stop wrote one since.
func stop(ctx context.Context, a *state.Agent, grace time.Duration, said *os.FileInfo) (*state.Status, error) {
	timeout, recorded := StopGrace(a, grace)
	if grace < 0 && recorded {
		// Asked for in so many words, so that the supervisor tells this stop's signal from a
		// plain second SIGTERM, which would cut the grace of another stop racing this one.
		grace = timeout
	}
	if err := a.SetWantDown(grace); err != nil {
		return nil, err
	}
	if said != nil {
		*said, _ = os.Stat(a.Path(state.WantFile)) // a new file at each write
	}
	st := Observe(a)
	if stream.IsFinal(st.State) {
		return st, nil
	}
	if !a.Supervised() {
		return settle(ctx, a)
	}
	sup, err := readIdentity(a, state.SupervisorPIDFile)
	if err != nil {
		return nil, fmt.Errorf("read supervisor pid of %s: %w", a.Name, err)
	}
	// A stop already under way is waited for, not repeated: its grace holds unless this one
	// asks for less, which the wait below enforces.
	if st.State != stream.Stopping {
		if err := pids.Signal(sup, syscall.SIGTERM); err != nil && !errors.Is(err, pids.ErrGone) {
			return nil, fmt.Errorf("signal supervisor of %s: %w", a.Name, err)
		}
	}
	wait := func(d time.Duration) error {
		wctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		return WaitEnd(wctx, a) // the end known, even while the disk refuses it
	}
	if err := wait(timeout); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// The grace is over: a second SIGTERM, with a grace of 0, makes the supervisor SIGKILL
		// the tree now. If an agt restart started a new supervisor meanwhile, which holds the
		// lock, this stop (the later word) stops that run too, or it would wait on it and
		// fail while the restarted agent runs.
		if now, err := readIdentity(a, state.SupervisorPIDFile); err == nil && now != sup && now.Alive() {
			return Stop(ctx, a, grace)
		}
		if a.Want() == "down" {
			a.SetStopGrace(0)
			pids.Signal(sup, syscall.SIGTERM)
		}
		if err := wait(10 * time.Second); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("supervisor of %s still runs 10s after it was told to SIGKILL; see %s", a.Name, a.Path(state.SupervisorLog))
		}
	}
	return settle(ctx, a)
}

// StopGrace is the grace between SIGTERM and SIGKILL of a stop of a that asks for grace: grace
// itself, unless negative; then the agent's own, from its record (recorded), else the default.
func StopGrace(a *state.Agent, grace time.Duration) (g time.Duration, recorded bool) {
	if grace >= 0 {
		return grace, false
	}
	if spec, err := a.ReadSpec(); err == nil {
		return time.Duration(spec.StopTimeout), true
	}
	return config.DefaultStopTimeout, false
}

// settle returns a's final status once no supervisor holds its lock. A supervisor that died
// before it wrote the end (kill -9 or the OOM killer during the stop) leaves the tree to this
// stop, which kills it and records the end itself (R9, R13): "stop exited 0" always means
// nothing of the agent runs.
func settle(ctx context.Context, a *state.Agent) (*state.Status, error) {
	if st := Observe(a); stream.IsFinal(st.State) {
		return st, survived(st)
	}
	if _, err := Reap(a); err != nil {
		return nil, err
	}
	// Nil from Reap: a concurrent reap, or a supervisor just starting, holds the lock.
	if err := a.WaitFree(ctx); err != nil {
		return nil, err
	}
	st := Observe(a)
	if stream.IsFinal(st.State) {
		return st, survived(st)
	}
	if _, err := os.Lstat(a.Dir); errors.Is(err, fs.ErrNotExist) {
		// A spawn racing this stop saw want = down and gave up: nothing ran.
		return &state.Status{Name: a.Name, State: stream.Stopped, Reason: "stopped while being spawned"}, nil
	}
	return nil, fmt.Errorf("%s is still %s after its supervisor let go; run 'agt stop %s' again", a.Name, st.State, a.Name)
}

// survived is the error of a stop that could not kill the whole tree: it is no success (R13).
func survived(st *state.Status) error {
	if st.State != stream.Failed || st.Reason != ctl.ReasonSurvivors {
		return nil
	}
	return fmt.Errorf("%s (stuck in the kernel, or another user's?): the agent is marked failed; kill them, then check with 'agt ps %s'", st.Error, st.Name)
}

// Reaped says what Reap did.
type Reaped struct {
	Name   string `json:"name"`
	From   string `json:"from"`
	Reason string `json:"reason"`
	Killed int    `json:"killed"`
}

// Reap finishes an agent whose supervisor is gone: it takes the lock, kills what is left of the
// tree (only processes whose identity is verified), appends the final events and writes the
// final status. It returns nil when there was nothing to do (the supervisor lives, or the
// agent is already final), so a second reap does nothing.
func Reap(a *state.Agent) (*Reaped, error) {
	r := ReapAll([]*state.Agent{a})
	return r[0].Reaped, r[0].Err
}

// ReapResult is what ReapAll did to one agent: Reaped is nil when there was nothing to do.
type ReapResult struct {
	Reaped *Reaped
	Err    error
}

// ReapAll reaps agents as Reap does, together: one read of /proc serves every tree, and the
// trees are killed side by side, so reaping a thousand lost agents costs a few scans, not two
// per agent.
func ReapAll(agents []*state.Agent) []ReapResult {
	results := make([]ReapResult, len(agents))
	var jobs []*reaping
	for i, a := range agents {
		rp, err := startReap(a)
		results[i].Err = err
		if rp != nil {
			rp.i = i
			jobs = append(jobs, rp)
		}
	}
	var trees []pids.Tree
	for _, rp := range jobs {
		if rp.tree != nil {
			trees = append(trees, *rp.tree)
		}
	}
	killed, left, err := killTrees(trees)
	for _, rp := range jobs {
		switch {
		case err != nil:
			// Nothing is known of the tree: the record stays as it was, for the next reap.
			rp.lock.Close()
			results[rp.i].Err = fmt.Errorf("reap %s: %w", rp.a.Name, err)
			continue
		case rp.tree != nil:
			rp.r.Killed, rp.survivors = killed[0], left[0]
			killed, left = killed[1:], left[1:]
		}
		if rp.cgroup != nil {
			// What the hooks left, and anything forked since the last look; then the cgroups go.
			if err := rp.cgroup.End(ctl.SurvivorWait); err != nil {
				fmt.Fprintf(os.Stderr, "agt: reap %s: %v\n", rp.a.Name, err)
			}
		}
		results[rp.i].Reaped, results[rp.i].Err = rp.finish()
	}
	return results
}

// reaping is one agent being reaped: its lock held, its status read, its tree to kill.
type reaping struct {
	i    int
	a    *state.Agent
	lock *state.Lock
	st   *state.Status
	r    *Reaped
	tree *pids.Tree // nil: nothing to signal
	// survivors are the processes of the tree that outlived SIGKILL: the end is failed, not
	// stopped (R13).
	survivors []pids.Identity
	cgroup    *pids.Containment // the agent's cgroup, ended after the tree; nil for none
}

// startReap takes a's lock and says what is to be done; nil when nothing is.
func startReap(a *state.Agent) (*reaping, error) {
	lock, err := a.Lock()
	if errors.Is(err, state.ErrLocked) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if _, err := a.RemoveStaleTemps(); err != nil {
		fmt.Fprintf(os.Stderr, "agt: reap %s: %v\n", a.Name, err)
	}
	st, err := a.ReadStatus()
	if err != nil {
		st = &state.Status{Name: a.Name, State: Unknown}
	}
	if stream.IsFinal(st.State) {
		lock.Close()
		return nil, nil
	}
	rp := &reaping{a: a, lock: lock, st: st, r: &Reaped{Name: a.Name, From: st.State, Reason: "supervisor-lost"}}
	if spawnLost(a, st) {
		rp.r.Reason = "spawn-lost"
	}
	boot, _ := pids.BootID()
	leader, _ := readIdentity(a, state.AgentPIDFile)
	if leader.Boot != "" && leader.Boot != boot {
		// After a reboot nothing recorded names our processes any more: signal nothing (R1).
		rp.r.Reason = "reboot"
	} else if leader.PID > 0 || st.Instance != "" {
		rp.tree = &pids.Tree{Leader: leader, Group: leader.PID, Env: instanceEnv(st.Instance), Nested: ctl.NestedSupervisor}
	}
	if rp.tree != nil {
		rp.cgroup = recordedContainment(a)
		if rp.cgroup != nil {
			rp.tree.Cgroup = rp.cgroup.Agent // what left the group and the environment too (R37)
		}
	}
	return rp, nil
}

// recordedContainment is the cgroup a's supervisor made, nil when it made none or it is gone.
func recordedContainment(a *state.Agent) *pids.Containment {
	path, err := a.ReadPID(state.CgroupFile)
	if err != nil {
		return nil
	}
	c, err := pids.OpenContainment(path)
	if err != nil {
		return nil
	}
	return c
}

// finish records the end, once the tree is gone, and lets go of the lock. The dead
// supervisor's socket goes too: an ended agent leaves none.
func (rp *reaping) finish() (*Reaped, error) {
	defer rp.lock.Close()
	a, st, r := rp.a, rp.st, rp.r
	unix.Unlink(a.Path(state.CtlSocket))
	if end := endInLog(a); end != nil {
		// The supervisor wrote the end to the log but died before status.json took it (a
		// full disk): that end is the truth, not a guess (R4).
		r.Reason = "recovered: " + end.Reason
		st.State, st.Reason, st.Since, st.Updated, st.LastSeq = end.To, end.Reason, end.TS, time.Now(), end.Seq
		if end.Code != nil || end.Signal != "" {
			st.ExitCode, st.Signal = end.Code, end.Signal
		}
		return r, rp.lock.WriteStatus(st)
	}
	log, last, err := state.OpenLog(a.Path(state.EventsFile))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	now := time.Now()
	to, reason := stream.Stopped, r.Reason
	if len(rp.survivors) > 0 {
		to, reason, st.Error = stream.Failed, ctl.ReasonSurvivors, ctl.SurvivedSIGKILL(rp.survivors)
		r.Reason = reason
	}
	ev := stream.Event{V: stream.Version, TS: now, Agent: a.Name, Seq: last + 1, Type: stream.TypeState, From: st.State, To: to, Reason: reason}
	if err := log.Write(append(ev.AppendJSON(nil), '\n')); err != nil {
		return nil, fmt.Errorf("append to events of %s: %w", a.Name, err)
	}
	st.State, st.Reason, st.Since, st.Updated, st.LastSeq = to, reason, now, now, last+1
	if err := rp.lock.WriteStatus(st); err != nil {
		return nil, err
	}
	return r, nil
}

// LastExit returns the exit event of a's last run, nil when that run has none: a restart was
// scheduled after it, or the last start has not ended (a lost agent that reap killed).
func LastExit(a *state.Agent) []byte {
	line, _ := state.LastLine(a.Path(state.EventsFile), 1<<20, func(l []byte) bool {
		t := gjson.GetBytes(l, "type").String()
		return t == stream.TypeExit || t == stream.TypeRestart || t == stream.TypeSpawned
	})
	if gjson.GetBytes(line, "type").String() != stream.TypeExit {
		return nil
	}
	return line
}

// endInLog returns the final state event that ends a's log, with the exit of the run it
// ended in Code and Signal; nil when the log does not end with the agent's end.
func endInLog(a *state.Agent) *stream.Event {
	path := a.Path(state.EventsFile)
	line, err := state.LastLine(path, 1<<20, func(l []byte) bool {
		return gjson.GetBytes(l, "type").String() == stream.TypeState
	})
	if err != nil || line == nil {
		return nil
	}
	var end stream.Event
	if json.Unmarshal(line, &end) != nil || !stream.IsFinal(end.To) {
		return nil
	}
	if exit := LastExit(a); exit != nil {
		var ev stream.Event
		if json.Unmarshal(exit, &ev) == nil {
			end.Code, end.Signal = ev.Code, ev.Signal
		}
	}
	return &end
}

// spawnLost reports whether a record without a status was left by a spawn that is gone (killed
// before its supervisor started): nothing will ever finish it but a reap.
func spawnLost(a *state.Agent, st *state.Status) bool {
	if st.State != Unknown {
		return false
	}
	id, err := readIdentity(a, state.SpawnerPIDFile)
	return err == nil && !id.Alive()
}

func instanceEnv(instance string) string {
	if instance == "" {
		return ""
	}
	return "AGT_INSTANCE=" + instance
}

func readIdentity(a *state.Agent, file string) (pids.Identity, error) {
	line, err := a.ReadPID(file)
	if err != nil {
		return pids.Identity{}, err
	}
	return pids.Parse(line)
}

// killTrees sends SIGTERM to every tree, gives them a moment, then SIGKILLs what is left, and
// returns how many processes of each it signalled at first. Each look at what is left is one
// read of /proc for all the trees.
func killTrees(trees []pids.Tree) (n []int, left [][]pids.Identity, err error) {
	n, left = make([]int, len(trees)), make([][]pids.Identity, len(trees))
	if len(trees) == 0 {
		return n, left, nil
	}
	snap, err := pids.TakeSnapshot()
	if err != nil {
		return nil, nil, err
	}
	for i, t := range trees {
		n[i], _ = pids.SignalAll(t.MembersIn(snap), syscall.SIGTERM)
	}
	deadline := time.Now().Add(ctl.CleanupGrace)
	for {
		if snap, err = pids.TakeSnapshot(); err != nil {
			return nil, nil, err
		}
		some := false
		for i, t := range trees {
			left[i] = t.MembersIn(snap)
			if len(left[i]) > 0 {
				some = true
				if !time.Now().Before(deadline) {
					ctl.Kill(left[i])
				}
			}
		}
		if !some || time.Now().After(deadline.Add(ctl.SurvivorWait)) {
			return n, left, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Prune deletes the record of an agent that has been final for longer than age. It takes the
// lock first, so it never removes a record a supervisor or a restart is using; false when the
// agent is not (or no longer) prunable. Workspaces are never touched.
func Prune(a *state.Agent, age time.Duration) (bool, error) {
	lock, err := a.Lock()
	if errors.Is(err, state.ErrLocked) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer lock.Close()
	st, err := a.ReadStatus()
	if err != nil || !stream.IsFinal(st.State) || time.Since(st.Since) <= age {
		return false, nil
	}
	if err := a.Remove(); err != nil {
		return false, err
	}
	return true, nil
}
