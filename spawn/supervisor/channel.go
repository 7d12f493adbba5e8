package supervisor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"agt/spawn/ctl"
	"agt/state"
)

// The server end of the control channel (see package ctl). Accepting goes through the
// runtime's poller, so an idle channel costs no wakeup and no thread.
//
// Its bounds (R36): whatever its clients send, the supervisor serves at most maxConns
// connections at once, and holds at most requestBudget bytes of their requests: a client past
// either waits (its connect or its writes block in the kernel, where the bytes stay), and one
// still waiting at its deadline is cut off, as is a request longer than maxRequest. Each
// cut-off is an error event (ten a second at most: the next says how many more there were);
// the agent runs on, and so does the channel.
const (
	maxRequest    = 16 << 20 // a request line: a message to the agent
	maxConns      = 64
	requestBudget = 24 << 20
	readChunk     = 64 << 10 // the unit of the budget and of a read
)

// largeRequest is the size of request whose memory is given back to the system once read.
const largeRequest = 1 << 20

// giveBack returns the memory the supervisor no longer uses to the system at once (a flood
// is over), once every few seconds at most: the soft memory limit alone keeps it, up to the
// limit, for the next flood.
func giveBack() {
	gaveMu.Lock()
	defer gaveMu.Unlock()
	if time.Since(gave) < 5*time.Second {
		return
	}
	gave = time.Now()
	go debug.FreeOSMemory()
}

var (
	gaveMu sync.Mutex
	gave   time.Time
)

// channel is the control channel's share of the supervisor.
type channel struct {
	path    string
	ln      *os.File
	conns   chan struct{}  // a token per connection served
	budget  chan struct{}  // a token per readChunk of request bytes held
	waiters sync.WaitGroup // connections waiting for their queued message's delivery
	large   atomic.Bool    // a large request was read since the budget was last all free

	cutMu    sync.Mutex
	lastCut  time.Time // when the second of the reports counted in cutsNow began
	cutsNow  int
	cutSince int // refusals not reported
}

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
	s.ch = &channel{path: path, ln: ln, conns: make(chan struct{}, maxConns), budget: make(chan struct{}, requestBudget/readChunk)}
	go s.serve(raw)
	return nil
}

// unlisten closes the control channel and removes its socket: an ended agent leaves none.
func (s *supervisor) unlisten() {
	if s.ch != nil {
		unix.Unlink(s.ch.path)
		s.ch.ln.Close()
	}
}

// answerWaiters gives the connections waiting on a queued message their answer (the
// conversation's end dropped the message), for a second at most.
func (s *supervisor) answerWaiters() {
	if s.ch == nil {
		return
	}
	done := make(chan struct{})
	go func() { s.ch.waiters.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Second):
	}
}

// serve accepts connections until the channel closes, each served on its own.
func (s *supervisor) serve(raw syscall.RawConn) {
	for {
		s.ch.conns <- struct{}{} // past maxConns, connections wait in the backlog
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
			<-s.ch.conns
			// Whatever it was (out of descriptors or memory, an aborted connection), the
			// channel stays: it is the only way send and approve reach the agent.
			if aerr != unix.EINTR && aerr != unix.ECONNABORTED {
				fmt.Fprintf(os.Stderr, "agt supervise: control channel: accept: %v\n", aerr)
				time.Sleep(100 * time.Millisecond) // do not spin
			}
			continue
		}
		p, perr := peerOf(nfd) // at once: the peer as it connected
		go s.serveOne(nfd, p, perr)
	}
}

// conn is one connection being served.
type conn struct {
	c      *os.File
	ch     *channel
	slot   bool // holds a token of ch.conns
	tokens int  // of ch.budget
}

// release gives back what the connection holds of the channel's bounds; the last of a large
// request's memory goes back to the system too.
func (k *conn) release() {
	for ; k.tokens > 0; k.tokens-- {
		<-k.ch.budget
	}
	if len(k.ch.budget) == 0 && k.ch.large.CompareAndSwap(true, false) {
		giveBack()
	}
	if k.slot {
		<-k.ch.conns
		k.slot = false
	}
}

// answer writes the reply r, within a second: past the read's deadline too (a client cut off
// is told why). What follows it on the connection (an attached terminal) has no deadline.
func (k *conn) answer(r ctl.Reply) {
	b, _ := json.Marshal(r)
	k.c.SetWriteDeadline(time.Now().Add(time.Second))
	k.c.Write(append(b, '\n'))
	k.c.SetWriteDeadline(time.Time{})
}

func (s *supervisor) serveOne(fd int, p peer, perr error) {
	k := &conn{c: os.NewFile(uintptr(fd), "ctl"), ch: s.ch, slot: true}
	defer func() {
		k.release()
		k.c.Close()
		p.close()
	}()
	accepted := time.Now()
	deadline := accepted.Add(ctl.ExchangeTime())
	k.c.SetDeadline(deadline)
	if perr != nil || int(p.uid) != os.Getuid() {
		k.answer(ctl.Reply{Error: "only the agent's owner may control it"})
		return
	}
	b, why := s.readRequest(k, deadline, p.pid)
	if why != "" {
		k.answer(ctl.Reply{Error: why})
		return
	}
	var req ctl.Request
	if err := json.Unmarshal(b, &req); err != nil {
		k.answer(ctl.Reply{Error: "bad request: " + err.Error()})
		return
	}
	b = nil
	if d := req.Deadline; d.IsZero() || d.After(deadline) {
		req.Deadline = deadline // an older client, or a clock gone wrong: ours holds
	}
	if s.guarded(req.Op) {
		if why := s.refusal(p, req.Op); why != "" {
			s.cutOff(why)
			k.answer(ctl.Reply{Error: why})
			return
		}
	}
	switch req.Op {
	case ctl.OpAttach:
		k.release() // a terminal has its own bound on attached clients
		s.conv.attach(k.c, req, k.answer)
		return
	case ctl.OpStatus:
		k.answer(s.statusReply())
		return
	}
	if req.Late() {
		// Its client gives up before an answer could reach it, and says the outcome is
		// unknown: it is known now, and the log says so.
		why := fmt.Sprintf("agt %s from pid %d came too late to be answered in time: not carried out", req.Op, p.pid)
		s.cutOff(why)
		k.answer(ctl.Reply{Error: why})
		return
	}
	reply := s.control(req)
	// What the request changed is in status.json (or failed to get there) when it returns,
	// unless the disk is so slow that the answer would come too late: the answer goes first.
	s.mu.Lock()
	s.syncStatusUntilLocked(req.AnswerBy())
	s.mu.Unlock()
	k.answer(reply)
	if reply.Then != nil {
		k.release()
		s.awaitDelivery(k, reply.Then)
	}
}

// readRequest reads one request line, holding a token of the budget for each readChunk of it;
// it returns the line, or why it was refused (the client cut off).
func (s *supervisor) readRequest(k *conn, deadline time.Time, pid int) ([]byte, string) {
	var b []byte
	for {
		if k.tokens*readChunk < len(b)+readChunk {
			t := time.NewTimer(time.Until(deadline))
			select {
			case k.ch.budget <- struct{}{}:
				t.Stop()
				k.tokens++
				if k.tokens == largeRequest/readChunk {
					k.ch.large.Store(true)
				}
			case <-t.C:
				why := fmt.Sprintf("control client pid %d cut off: its request waited past its deadline for room (the supervisor reads at most %d MiB of requests at once)", pid, requestBudget>>20)
				s.cutOff(why)
				return nil, why
			}
		}
		b = slices.Grow(b, readChunk)
		n, err := k.c.Read(b[len(b) : len(b)+readChunk])
		if i := bytes.IndexByte(b[len(b):len(b)+n], '\n'); i >= 0 {
			return b[:len(b)+i], ""
		}
		b = b[:len(b)+n]
		switch {
		case len(b) > maxRequest:
			why := fmt.Sprintf("control client pid %d cut off: a request is one JSON line of at most %d MiB, and it sent more", pid, maxRequest>>20)
			s.cutOff(why)
			return nil, why
		case err != nil && len(b) > 0 && errors.Is(err, os.ErrDeadlineExceeded):
			why := fmt.Sprintf("control client pid %d cut off: %d bytes and no end of line within %v", pid, len(b), ctl.ExchangeTime())
			s.cutOff(why)
			return nil, why
		case err != nil:
			return nil, fmt.Sprintf("a request is one JSON line of at most %d MiB", maxRequest>>20)
		}
	}
}

// cutOff records what a control client was refused or cut off for, as an error event: at most
// reportsPerSecond a second, the next after a pause saying how many more there were. A peer
// that floods the channel cannot flood the log.
func (s *supervisor) cutOff(why string) {
	ch := s.ch
	ch.cutMu.Lock()
	now := time.Now()
	if now.Sub(ch.lastCut) >= time.Second {
		ch.lastCut, ch.cutsNow = now, 0
	}
	if ch.cutsNow >= reportsPerSecond {
		ch.cutSince++
		ch.cutMu.Unlock()
		return
	}
	ch.cutsNow++
	if ch.cutSince > 0 {
		why += fmt.Sprintf(" (and %d more not reported)", ch.cutSince)
		ch.cutSince = 0
	}
	ch.cutMu.Unlock()
	s.emitError(why, false)
}

// reportsPerSecond bounds the error events of the control channel's refusals.
const reportsPerSecond = 10

// awaitDelivery keeps the connection of a message queued with Wait until its delivery, then
// sends the second reply; a client that leaves first ends the wait (the message stays queued).
func (s *supervisor) awaitDelivery(k *conn, then <-chan ctl.Reply) {
	s.ch.waiters.Add(1)
	defer s.ch.waiters.Done()
	k.c.SetDeadline(time.Time{})
	left := make(chan struct{})
	go func() {
		var b [1]byte
		k.c.Read(b[:]) // the client writes nothing more: this returns when it leaves
		close(left)
	}()
	select {
	case r := <-then:
		k.c.SetWriteDeadline(time.Now().Add(ctl.ExchangeTime()))
		k.answer(r)
	case <-left:
	}
}

// statusReply is the status as the supervisor holds it.
func (s *supervisor) statusReply() ctl.Reply {
	s.mu.Lock()
	st := s.status
	s.mu.Unlock()
	st.History = append([]state.Exit(nil), st.History...)
	return ctl.Reply{Status: &st}
}
