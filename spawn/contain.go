package spawn

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"agt/pids"
	"agt/state"
)

// TestOnlyNoCgroup switches containment off, so that tests prove what the sweeps by pid do alone
// and that the tests of containment can fail; users never set it.
var TestOnlyNoCgroup bool

// containment is the agent's cgroup (R37): where the user may make one, its process tree and
// its hooks run in it, and what a sweep by pid cannot find (a setsid env -i grandchild after
// the supervisor was killed) the cgroup still holds, for a stop, a reap and the supervisor's
// own end to kill. Without one, everything works by pid as before.
type containment struct {
	*pids.Containment
	agent, hooks *os.File // the cgroups' directories, to start processes in
}

// contain makes the agent's containment and records where it is, for a reap after our death.
func contain(a *state.Agent, name string) *containment {
	if TestOnlyNoCgroup || TestOnlyGroupKillOnly || TestOnlyUnkillable != nil {
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
	if ct.agent, err = c.Agent.Open(); err == nil {
		ct.hooks, err = c.Hooks.Open()
	}
	if err == nil {
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

// agentDir is the directory to start the agent in, nil without containment.
func (c *containment) agentDir() *os.File {
	if c == nil {
		return nil
	}
	return c.agent
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
	for _, f := range []*os.File{c.agent, c.hooks} {
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
		t := pids.Tree{Root: os.Getpid(), Walk: true, Nested: nestedSupervisor, GroupOnly: TestOnlyGroupKillOnly}
		if members, err := t.Members(); err == nil && len(members) > 0 {
			kill(members)
			for i := 0; i < 100 && len(members) > 0; i++ {
				time.Sleep(10 * time.Millisecond)
				s.reap()
				members, _ = t.Members()
			}
		}
		return
	}
	s.cgroup.close()
	if err := s.cgroup.End(survivorWait); err != nil {
		fmt.Fprintf(os.Stderr, "agt supervise %s: %v\n", s.spec.Name, err)
	}
}
