package supervisor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"agt/pids"
	"agt/spawn/ctl"
	"agt/state"
)

// containment is the agent's cgroup (R37): where the user may make one, its process tree and
// its hooks run in it, and what a sweep by pid cannot find (a setsid env -i grandchild after
// the supervisor was killed) the cgroup still holds, for a stop, a reap and the supervisor's
// own end to kill. Without one, everything works by pid as before.
type containment struct {
	*pids.Containment
	hooks *os.File // the hooks' cgroup's directory, to start them in
	// Each run of the agent starts in a cgroup of its own below Agent (run-1, run-2, …): a
	// kernel bug (seen on 6.18) kills at once whatever is started (clone3 CLONE_INTO_CGROUP) in
	// a cgroup that was killed before, as a sweep past its deadline kills Agent.
	run  *os.File
	runs int
}

// contain makes the agent's containment and records where it is, for a reap after our death.
func contain(a *state.Agent, name string) *containment {
	if ctl.Test.NoCgroup || ctl.Test.GroupKillOnly || ctl.Test.Unkillable != nil {
		return nil
	}
	c, err := pids.Contain(name)
	if err != nil {
		if !errors.Is(err, pids.ErrNoCgroup) {
			fmt.Fprintf(os.Stderr, "agt supervise %s: %v; its processes are found by pid alone\n", name, err)
		}
		return nil
	}
	ct := &containment{Containment: c}
	if ct.hooks, err = c.Hooks.Open(); err == nil {
		err = a.WritePID(state.CgroupFile, string(c.Root))
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "agt supervise %s: %v; its processes are found by pid alone\n", name, err)
		ct.close()
		c.Remove()
		return nil
	}
	return ct
}

// forkExec is syscall.ForkExec, the child started in the cgroup whose directory cg is, when
// not nil. Where a process cannot be started in a cgroup (a kernel before 5.7, a cgroup it may
// not enter), it is started here and moved in at once.
func forkExec(path string, argv []string, attr *syscall.ProcAttr, cg *os.File) (int, error) {
	if cg == nil {
		return syscall.ForkExec(path, argv, attr)
	}
	in, sys := *attr, *attr.Sys
	sys.UseCgroupFD, sys.CgroupFD = true, int(cg.Fd())
	in.Sys = &sys
	if pid, err := syscall.ForkExec(path, argv, &in); err == nil {
		return pid, nil
	}
	pid, err := syscall.ForkExec(path, argv, attr) // an exec that fails fails here again
	if err == nil {
		pids.Cgroup(cg.Name()).Enter(pid)
	}
	return pid, err
}

// nextRun makes the cgroup of the agent's next run and returns its directory, to start it in;
// nil without containment. The last run's, empty after its sweep, goes.
func (c *containment) nextRun() *os.File {
	if c == nil {
		return nil
	}
	if c.run != nil {
		c.run.Close()
		unix.Rmdir(c.run.Name()) // fails if something outlived the sweep: removed at the end
		c.run = nil
	}
	c.runs++
	dir := pids.Cgroup(filepath.Join(string(c.Agent), "run-"+strconv.Itoa(c.runs)))
	f, err := dir.Make()
	if err != nil {
		fmt.Fprintf(os.Stderr, "agt supervise: %v; this run starts outside its cgroup\n", err)
		return nil
	}
	c.run = f
	return f
}

// hooksDir is the directory to start hooks in, nil without containment.
func (c *containment) hooksDir() *os.File {
	if c == nil {
		return nil
	}
	return c.hooks
}

// agentCgroup is the cgroup of the agent's tree, "" without containment.
func (c *containment) agentCgroup() pids.Cgroup {
	if c == nil {
		return ""
	}
	return c.Agent
}

// killAgent kills at once everything in the agent's cgroup: a sweep past its deadline.
func (c *containment) killAgent() {
	if c != nil {
		c.Agent.Kill()
	}
}

func (c *containment) close() {
	for _, f := range []*os.File{c.run, c.hooks} {
		if f != nil {
			f.Close()
		}
	}
}

// uncontain ends what is left once the agent's end is written and its last hooks ran: what the
// hooks started (a daemon a stopped hook forked), and removes the cgroups. Without a cgroup,
// the orphans of the hooks came back to the supervisor, their subreaper, and are killed by pid;
// another agent's supervisor started from inside is spared.
func (s *supervisor) uncontain() {
	if s.cgroup == nil {
		t := pids.Tree{Root: os.Getpid(), Walk: true, Nested: ctl.NestedSupervisor, GroupOnly: ctl.Test.GroupKillOnly}
		if members, err := t.Members(); err == nil && len(members) > 0 {
			ctl.Kill(members)
			for i := 0; i < 100 && len(members) > 0; i++ {
				time.Sleep(10 * time.Millisecond)
				s.reap()
				members, _ = t.Members()
			}
		}
		return
	}
	s.cgroup.close()
	if err := s.cgroup.End(ctl.SurvivorWait); err != nil {
		fmt.Fprintf(os.Stderr, "agt supervise %s: %v\n", s.spec.Name, err)
	}
}
