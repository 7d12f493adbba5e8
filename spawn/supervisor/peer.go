package supervisor

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"agt/pids"
	"agt/spawn/ctl"
	"agt/state"
)

// Who may answer (R33). A permission request is the person's, or the policy's, to answer: never
// an agent's, its own or another's. So approve and deny, and everything that types into a
// terminal agent (keys, send and attach to a --tty agent: keys can answer whatever the program
// on it asks, be it its own permission prompt or a shell that runs agt approve), are taken only
// from a peer outside every agent's process tree. Which process that is, the kernel says at
// accept: its credentials and a pidfd for it, which cannot be handed on with the connection. A
// process that inherits the socket, or is sent it, is not the peer; once the peer has exited,
// the connection answers nothing of the kind.
//
// What no check here can stop: an agent of the same user that writes into another agent's
// terminal or the run directory by other means (its pty through /proc, ptrace, spec.json). The
// sandbox (--sandbox) is the wall for that.

// peer is the process at the other end of a control connection, as it was at accept.
type peer struct {
	pid   int
	uid   uint32
	pidfd int    // the peer itself; -1 on a kernel without pidfds (start names it then)
	start uint64 // its start time, clock ticks since boot
}

// peerOf names the peer of the connection fd, at once after accept: SO_PEERCRED, and a pidfd
// from SO_PEERPIDFD (Linux 6.5), else from pidfd_open of its pid, checked against its start
// time before and after, so that the pidfd is of the process that start time names.
func peerOf(fd int) (peer, error) {
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return peer{}, err
	}
	p := peer{pid: int(cred.Pid), uid: cred.Uid, pidfd: -1}
	before, err := pids.Of(p.pid)
	if err != nil {
		return p, nil // gone already: alive says so
	}
	p.start = before.Start
	if pfd, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_PEERPIDFD); err == nil {
		p.pidfd = pfd // close-on-exec, as every pidfd the kernel makes
	} else if pfd, err := unix.PidfdOpen(p.pid, 0); err == nil {
		p.pidfd = pfd
	}
	if after, err := pids.Of(p.pid); err != nil || after != before {
		p.start = 0 // it exited meanwhile, its pid maybe reused: never the peer's
	}
	return p, nil
}

// alive reports whether the peer still runs: not exited (a zombie has), its pid not reused.
func (p peer) alive() bool {
	if p.start == 0 {
		return false
	}
	if p.pidfd >= 0 {
		fds := []unix.PollFd{{Fd: int32(p.pidfd), Events: unix.POLLIN}}
		for {
			n, err := unix.Poll(fds, 0)
			if err == unix.EINTR {
				continue
			}
			return err == nil && n == 0 // a pidfd reads ready once its process has exited
		}
	}
	id, err := pids.Of(p.pid)
	return err == nil && id.Start == p.start
}

func (p peer) close() {
	if p.pidfd >= 0 {
		unix.Close(p.pidfd)
	}
}

// guarded reports whether the request op must come from outside every agent: it answers a
// permission request, or types into the agent's terminal.
func (s *supervisor) guarded(op string) bool {
	switch op {
	case ctl.OpApprove, ctl.OpDeny:
		return true
	case ctl.OpKeys, ctl.OpAttach, ctl.OpSend:
		return s.spec.TTY
	}
	return false
}

// refusal says, in one line, why the guarded request op is refused to peer p; "" when p may
// make it. The peer is looked at while it is known alive before and after, so what was read of
// its pid was read of it.
func (s *supervisor) refusal(p peer, op string) string {
	what, why := "agt "+op, "an agent never answers permission requests, its own or another's"
	switch {
	case op == ctl.OpKeys:
		what = "agt send --keys"
	case op == ctl.OpDeny || op == ctl.OpApprove:
	default:
		why = "keys typed into a terminal can answer whatever its program asks"
	}
	if !p.alive() {
		return fmt.Sprintf("refused %s: the process that connected (pid %d) has exited, and a connection handed on answers nothing; run %s from outside every agent", what, p.pid, what)
	}
	inside := s.agentAbove(p.pid)
	if inside == "" && p.alive() {
		return ""
	}
	if inside == "" {
		inside = "a process that exited while it was looked at"
	}
	return fmt.Sprintf("refused %s from pid %d, %s: %s; run it from outside every agent", what, p.pid, inside, why)
}

// maxAncestors bounds the walk up from a peer: process trees are never this deep.
const maxAncestors = 4096

// agentAbove says which agent's process tree pid runs in ("inside the process tree of agent
// x"), "" when none. It follows the parent links up from pid: every process of an agent's tree
// descends from its supervisor, the child subreaper that adopts what lost its parent, however
// it forked or called setsid; and an agent's processes carry its AGT_INSTANCE, which still
// names the orphans of a supervisor killed -9 (a process may clear it: the parent links it
// cannot). The hooks of this supervisor are not of its agent's tree: a hook may answer.
func (s *supervisor) agentAbove(pid int) string {
	self := os.Getpid()
	child := 0 // the process below pid on the way up
	marked := ""
	for range maxAncestors {
		if pid == self {
			for _, h := range s.hooks.pids() {
				if h == child {
					return marked
				}
			}
			return "inside the process tree of " + s.spec.Name + " itself"
		}
		p, err := pids.ReadProc(pid)
		if err != nil {
			return marked // gone: the caller's alive says so
		}
		if p.Comm == ctl.ProcessName {
			return "inside the process tree of agent " + supervisedName(pid)
		}
		if _, ok := pids.Getenv(pid, "AGT_INSTANCE"); ok && marked == "" {
			marked = "which carries an agent's AGT_INSTANCE"
			if child != 0 {
				marked = "below pid " + strconv.Itoa(pid) + ", which carries an agent's AGT_INSTANCE"
			}
		}
		if p.PPID <= 0 {
			return marked
		}
		child, pid = pid, p.PPID
	}
	return "in a process tree too deep to follow"
}

// supervisedName is the name of the agent that the supervisor pid runs (the last word of its
// command line), or "(unknown)".
func supervisedName(pid int) string {
	b, err := state.ReadSmall("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return "(unknown)"
	}
	argv := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
	if name := argv[len(argv)-1]; state.ValidateName(name) == nil {
		return name
	}
	return "(unknown)"
}
