package commands

import (
	"errors"
	"net"
	"net/http"
	"net/netip"

	"agt/pids"
	"agt/state"
)

// An agent must not answer its own permission requests (R33). Its supervisor refuses an
// approve from the agent's tree on the control channel, but agt serve is a deputy: it is
// outside every tree, so the supervisor cannot see who asked it. It looks itself, before an
// answer: a request from this machine comes through a socket whose owner the kernel knows,
// and an owner that runs below an agent's supervisor, or carries an agent's environment, is
// refused. The token alone would not do: an agent of the same user can read the run directory.

// maxAncestors bounds the walk up from a process to the first one.
const maxAncestors = 4096

// agentPeer names the agent whose process tree sent r ("" when none did: another machine,
// or a process of this one outside every agent). It errs, and the caller refuses, when it
// cannot tell: a local socket with no owner it can see.
func agentPeer(d *state.Dir, r *http.Request) (string, error) {
	la, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if la == nil {
		return "", errors.New("cannot tell where this request came from")
	}
	self, err1 := netip.ParseAddrPort(la.String())
	peer, err2 := netip.ParseAddrPort(r.RemoteAddr)
	if err1 != nil || err2 != nil {
		return "", errors.New("cannot tell where this request came from")
	}
	holders, local, err := pids.LocalPeer(self, peer)
	switch {
	case err != nil:
		return "", err
	case !local:
		return "", nil
	case len(holders) == 0:
		return "", errors.New("cannot tell which process sent this request (its socket has no owner agt can see): answer from a browser or script of your own")
	}
	sups := supervisors(d)
	for _, pid := range holders {
		if name := agentOf(pid, sups); name != "" {
			return name, nil
		}
	}
	return "", nil
}

// supervisors maps the pids of d's live supervisors to their agents.
func supervisors(d *state.Dir) map[int]string {
	sups := map[int]string{}
	agents, _ := d.Agents()
	for _, a := range agents {
		line, err := a.ReadPID(state.SupervisorPIDFile)
		if err != nil {
			continue
		}
		id, err := pids.Parse(line)
		if err == nil && id.Alive() {
			sups[id.PID] = a.Name
		}
	}
	return sups
}

// agentOf names the agent pid runs under: the first of it and its ancestors that is an
// agent's supervisor or carries an agent's environment (AGT_INSTANCE; AGT_NAME names it).
// The supervisor is a child subreaper, so what an agent starts and orphans (setsid, a double
// fork, env -i) still has it as an ancestor.
func agentOf(pid int, sups map[int]string) string {
	for i := 0; pid > 1 && i < maxAncestors; i++ {
		if name, ok := sups[pid]; ok {
			return name
		}
		if _, ok := pids.Getenv(pid, "AGT_INSTANCE"); ok {
			name, _ := pids.Getenv(pid, "AGT_NAME")
			if name == "" {
				name = "(unnamed)"
			}
			return name
		}
		pid = pids.Parent(pid)
	}
	return ""
}
