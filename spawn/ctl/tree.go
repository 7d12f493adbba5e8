package ctl

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"agt/pids"
	"agt/state"
)

// ReasonSurvivors is the reason of an agent failed because part of its tree outlived SIGKILL.
const ReasonSurvivors = "survivors"

// CleanupGrace is how long what is left of an agent's tree gets between SIGTERM and SIGKILL
// when nobody asked for a grace: processes left behind by an agent that exited on its own, or
// the tree of a lost agent that a reap kills.
const CleanupGrace = time.Second

// SurvivorWait is how long processes get to die after SIGKILL before a sweep gives up on them.
const SurvivorWait = 5 * time.Second

// Kill sends SIGKILL to members (but to those Test.Unkillable names).
func Kill(members []pids.Identity) {
	if Test.Unkillable != nil {
		members = slices.DeleteFunc(slices.Clone(members), func(id pids.Identity) bool { return Test.Unkillable(id.PID) })
	}
	pids.SignalAll(members, syscall.SIGKILL)
}

// SurvivedSIGKILL says which processes outlived SIGKILL: up to ten, by pid.
func SurvivedSIGKILL(ids []pids.Identity) string {
	var b strings.Builder
	if len(ids) == 1 {
		b.WriteString("1 process survived SIGKILL: pid")
	} else {
		fmt.Fprintf(&b, "%d processes survived SIGKILL: pids", len(ids))
	}
	for i, id := range ids {
		if i == 10 {
			b.WriteString(" …")
			break
		}
		b.WriteString(" " + strconv.Itoa(id.PID))
	}
	return b.String()
}

// ProcessName is what supervisors call themselves, in top and ps -o comm.
const ProcessName = "agt-supervise"

// NestedSupervisor tells the supervisor of another agent, spawned from inside the one being
// swept, from the agent's own processes: a sweep spares it and what it runs (spawn_nested).
// Its name proves nothing (anything can call itself agt-supervise), and neither does its
// environment: it must run this very agt binary as `agt … supervise … NAME`, and be the
// process that the record NAME names in its supervisor.pid.
func NestedSupervisor(p pids.Proc) bool {
	if p.Comm != ProcessName {
		return false
	}
	proc := "/proc/" + strconv.Itoa(p.PID)
	exe, err := os.Stat(proc + "/exe")
	if err != nil {
		return false
	}
	self, err := os.Stat("/proc/self/exe")
	if err != nil || !os.SameFile(exe, self) {
		return false
	}
	b, err := state.ReadSmall(proc + "/cmdline")
	if err != nil {
		return false
	}
	argv := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
	if len(argv) < 4 || argv[1] != "--run-dir" || !slices.Contains(argv, "supervise") {
		return false
	}
	root, name := argv[2], argv[len(argv)-1]
	if state.ValidateName(name) != nil {
		return false
	}
	line, err := state.ReadSmall((&state.Dir{Root: root}).AgentFile(name, state.SupervisorPIDFile))
	if err != nil {
		return false
	}
	id, err := pids.Parse(string(line))
	return err == nil && id == p.Identity
}

// SupervisorEnv is the caller's environment without the agt identity of an agent the caller
// may itself be: what a supervisor, or a hook it runs, starts with. An agent spawned from
// inside another is not part of that agent's tree.
func SupervisorEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AGT_INSTANCE=") && !strings.HasPrefix(kv, "AGT_NAME=") {
			env = append(env, kv)
		}
	}
	return env
}

// CostText writes a cost as ps does, to the cent, or to the micro-dollar below a cent.
func CostText(c float64) string {
	if c < 0.01 {
		return strconv.FormatFloat(c, 'f', 6, 64)
	}
	return strconv.FormatFloat(c, 'f', 2, 64)
}
