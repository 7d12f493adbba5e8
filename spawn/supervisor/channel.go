package supervisor

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"agt/pids"
	"agt/spawn/ctl"
	"agt/state"
)

// The server end of the control channel (see package ctl). Accepting goes through the
// runtime's poller, so an idle channel costs no wakeup and no thread.

// maxRequest bounds a request line (a message to the agent).
const maxRequest = 16 << 20

// listen opens the agent's control channel and serves it until the process exits.
func (s *supervisor) listen() error {
	path := s.a.Path(state.CtlSocket)
	// We hold the lock: a socket left here was a dead supervisor's.
	if err := unix.Unlink(path); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("control channel %s: %w", path, err)
	}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return fmt.Errorf("control channel: %w", err)
	}
	old := unix.Umask(0o177) // the socket is born 0600
	err = unix.Bind(fd, &unix.SockaddrUnix{Name: path})
	unix.Umask(old)
	if err == nil {
		err = unix.Listen(fd, 16)
	}
	if err != nil {
		unix.Close(fd)
		return fmt.Errorf("control channel %s: %w", path, err)
	}
	ln := os.NewFile(uintptr(fd), path) // non-blocking: accepts wait in the runtime's poller
	raw, err := ln.SyscallConn()
	if err != nil {
		ln.Close()
		return fmt.Errorf("control channel: %w", err)
	}
	go s.serve(raw)
	return nil
}

// serve accepts connections for ever, each served on its own.
func (s *supervisor) serve(raw syscall.RawConn) {
	for {
		var nfd int
		var aerr error
		err := raw.Read(func(fd uintptr) bool {
			nfd, _, aerr = unix.Accept4(int(fd), unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
			return aerr != unix.EAGAIN
		})
		if err != nil {
			return
		}
		if aerr != nil {
			// Whatever it was (out of descriptors or memory, an aborted connection), the
			// channel stays: it is the only way send and approve reach the agent.
			if aerr != unix.EINTR && aerr != unix.ECONNABORTED {
				fmt.Fprintf(os.Stderr, "agt supervise: control channel: accept: %v\n", aerr)
				time.Sleep(100 * time.Millisecond) // do not spin
			}
			continue
		}
		go s.serveOne(nfd)
	}
}

// fromOwnTree reports whether pid runs below this supervisor: the agent, what it started, an
// agent it spawned. A permission the agent asked for is the person's (or the policy's) to
// answer, never the agent's own. The supervisor's hooks are not of the tree: a hook may answer.
func (s *supervisor) fromOwnTree(pid int) bool {
	members, err := pids.Tree{Root: os.Getpid(), Walk: true, Spared: s.hooks.pids}.Members()
	if err != nil {
		return true // cannot tell: refuse
	}
	return slices.ContainsFunc(members, func(id pids.Identity) bool { return id.PID == pid })
}

func (s *supervisor) serveOne(fd int) {
	c := os.NewFile(uintptr(fd), "ctl")
	defer c.Close()
	c.SetDeadline(time.Now().Add(ctl.Timeout))
	answer := func(r ctl.Reply) {
		b, _ := json.Marshal(r)
		c.Write(append(b, '\n'))
	}
	peer, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil || int(peer.Uid) != os.Getuid() {
		answer(ctl.Reply{Error: "only the agent's owner may control it"})
		return
	}
	b, err := bufio.NewReader(io.LimitReader(c, maxRequest)).ReadBytes('\n')
	if err != nil {
		answer(ctl.Reply{Error: "a request is one JSON line of at most 16 MiB"})
		return
	}
	var req ctl.Request
	if err := json.Unmarshal(b, &req); err != nil {
		answer(ctl.Reply{Error: "bad request: " + err.Error()})
		return
	}
	if req.Op == ctl.OpAttach {
		s.conv.attach(c, req, answer)
		return
	}
	if (req.Op == ctl.OpApprove || req.Op == ctl.OpDeny) && s.fromOwnTree(int(peer.Pid)) {
		answer(ctl.Reply{Error: "an agent cannot answer its own permission requests: run agt " + req.Op + " from outside its process tree"})
		return
	}
	reply := s.control(req)
	// What the request changed is in status.json (or failed to get there) when it returns.
	s.mu.Lock()
	s.syncStatusLocked(false)
	s.mu.Unlock()
	answer(reply)
}
