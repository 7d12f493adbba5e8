package spawn

import (
	"bufio"
	"context"
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
	"agt/state"
)

// The control channel is agents/NAME/ctl.sock, a unix stream socket the supervisor listens on
// for its whole life. A client connects, writes one Request as a JSON line and reads one Reply
// line; then the connection closes. Only the agent's owner can connect: the socket is 0600 in a
// 0700 directory, and the supervisor checks the peer's uid. Accepting goes through the runtime's
// poller, so an idle channel costs no wakeup and no thread.

// ctlTimeout bounds a whole exchange on the channel, at both ends: a wedged supervisor gives a
// clear error, never a hang.
const ctlTimeout = 5 * time.Second

// ctlMaxRequest bounds a request line (a message to the agent).
const ctlMaxRequest = 16 << 20

// Ops of the control channel.
const (
	OpSend      = "send"       // a user message: the next turn of the conversation
	OpApprove   = "approve"    // allow a pending permission request
	OpDeny      = "deny"       // deny one
	OpInterrupt = "interrupt"  // cancel the running turn
	OpAfterTurn = "after-turn" // end the conversation once the running turn is over
	OpKeys      = "keys"       // keystrokes into a terminal agent
	OpAttach    = "attach"     // stay connected to a terminal agent's screen (see Attach)
)

// Request is one command on the control channel.
type Request struct {
	Op      string `json:"op"`
	Text    string `json:"text,omitempty"`    // send: the message
	Queue   bool   `json:"queue,omitempty"`   // send: hold it until the running turn ends
	ID      string `json:"id,omitempty"`      // approve, deny: the request; "" for the only one
	Always  bool   `json:"always,omitempty"`  // approve: allow such requests for the session
	Message string `json:"message,omitempty"` // deny: what the agent is told instead
	Rows    uint16 `json:"rows,omitempty"`    // attach: the client's terminal size
	Cols    uint16 `json:"cols,omitempty"`
}

// Reply answers a Request: Error when it was refused.
type Reply struct {
	Error  string `json:"error,omitempty"`
	Seq    int64  `json:"seq,omitempty"`    // send: the last event before the turn it began
	ID     string `json:"id,omitempty"`     // approve, deny: the request answered
	Tool   string `json:"tool,omitempty"`   // approve, deny: its tool
	Queued bool   `json:"queued,omitempty"` // send --queue: held until the turn ends
}

// ErrNotRunning says an agent has no live supervisor to take a command.
var ErrNotRunning = errors.New("not running")

// Control sends req to a's supervisor and returns its reply. A refused request is an error
// holding the supervisor's reason.
func Control(ctx context.Context, a *state.Agent, req Request) (*Reply, error) {
	f, r, err := connect(ctx, a, req)
	if f != nil {
		f.Close()
	}
	return r, err
}

// connect sends req to a's supervisor and reads its reply, leaving the connection open (nil
// when the request failed to get an answer).
func connect(ctx context.Context, a *state.Agent, req Request) (*os.File, *Reply, error) {
	if !a.Supervised() {
		return nil, nil, fmt.Errorf("%s is %w: its supervisor is gone or never started", a.Name, ErrNotRunning)
	}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("control %s: %w", a.Name, err)
	}
	f := os.NewFile(uintptr(fd), "ctl.sock")
	keep := false
	defer func() {
		if !keep {
			f.Close()
		}
	}()
	deadline := time.Now().Add(ctlTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	tv := unix.NsecToTimeval(time.Until(deadline).Nanoseconds())
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv)
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: a.Path(state.CtlSocket)}); err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ECONNREFUSED) {
			return nil, nil, fmt.Errorf("%s has no control channel (%v); its supervisor may be from an older agt: run 'agt restart %s'", a.Name, err, a.Name)
		}
		return nil, nil, fmt.Errorf("control %s: %w", a.Name, err)
	}
	line, err := json.Marshal(req)
	if err != nil {
		return nil, nil, err
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		return nil, nil, fmt.Errorf("control %s: write: %w", a.Name, timeoutSays(err))
	}
	var b []byte
	if req.Op == OpAttach {
		// The output follows the reply at once: read no byte past it.
		b, err = readLineBytewise(f, 1<<20)
	} else {
		b, err = bufio.NewReader(io.LimitReader(f, 1<<20)).ReadBytes('\n')
	}
	if err != nil {
		return nil, nil, fmt.Errorf("control %s: no answer from its supervisor: %w", a.Name, timeoutSays(err))
	}
	var r Reply
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, nil, fmt.Errorf("control %s: bad answer from its supervisor: %w", a.Name, err)
	}
	if r.Error != "" {
		return nil, &r, errors.New(r.Error)
	}
	keep = true
	return f, &r, nil
}

// readLineBytewise reads one line of at most max bytes, one byte at a time, so that nothing
// after it is consumed.
func readLineBytewise(r io.Reader, max int) ([]byte, error) {
	var b []byte
	var c [1]byte
	for len(b) < max {
		if _, err := io.ReadFull(r, c[:]); err != nil {
			return nil, err
		}
		b = append(b, c[0])
		if c[0] == '\n' {
			return b, nil
		}
	}
	return nil, errors.New("reply too long")
}

func timeoutSays(err error) error {
	if errors.Is(err, syscall.EAGAIN) || errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("timed out after %v; the supervisor may be wedged", ctlTimeout)
	}
	return err
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
	c.SetDeadline(time.Now().Add(ctlTimeout))
	answer := func(r Reply) {
		b, _ := json.Marshal(r)
		c.Write(append(b, '\n'))
	}
	peer, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil || int(peer.Uid) != os.Getuid() {
		answer(Reply{Error: "only the agent's owner may control it"})
		return
	}
	b, err := bufio.NewReader(io.LimitReader(c, ctlMaxRequest)).ReadBytes('\n')
	if err != nil {
		answer(Reply{Error: "a request is one JSON line of at most 16 MiB"})
		return
	}
	var req Request
	if err := json.Unmarshal(b, &req); err != nil {
		answer(Reply{Error: "bad request: " + err.Error()})
		return
	}
	if req.Op == OpAttach {
		s.conv.attach(c, req, answer)
		return
	}
	if (req.Op == OpApprove || req.Op == OpDeny) && s.fromOwnTree(int(peer.Pid)) {
		answer(Reply{Error: "an agent cannot answer its own permission requests: run agt " + req.Op + " from outside its process tree"})
		return
	}
	reply := s.control(req)
	// What the request changed is in status.json (or failed to get there) when it returns.
	s.mu.Lock()
	s.syncStatusLocked(false)
	s.mu.Unlock()
	answer(reply)
}
