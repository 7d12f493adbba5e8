package spawn

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"agt/spawn/ctl"
	"agt/state"
	"agt/stream"
)

// The client end of the control channel (see package ctl): one request, one reply.

// ErrNotRunning says an agent has no live supervisor to take a command.
var ErrNotRunning = errors.New("not running")

// ErrNoAnswer says the request reached the supervisor but no answer came back: what it did is
// unknown (a message may have been delivered), never known to have failed.
var ErrNoAnswer = errors.New("no answer")

// Control sends req to a's supervisor and returns its reply. A refused request is an error
// holding the supervisor's reason.
func Control(ctx context.Context, a *state.Agent, req Request) (*Reply, error) {
	f, r, err := connect(ctx, a, req)
	if f != nil {
		f.Close()
	}
	return r, err
}

// SendQueued sends a message that may be queued (send --queue --wait) and returns once it is
// delivered: the reply's Seq is the last event before its turn, its own. A message dropped
// before its turn (the agent ended) is an error saying so.
func SendQueued(ctx context.Context, a *state.Agent, req Request) (*Reply, error) {
	req.Wait = true
	f, r, err := connect(ctx, a, req)
	if err != nil || !r.Queued {
		if f != nil {
			f.Close()
		}
		return r, err
	}
	defer f.Close()
	// No deadline now: the turns before it take what they take. Ctrl-C ends the wait.
	var none unix.Timeval
	unix.SetsockoptTimeval(int(f.Fd()), unix.SOL_SOCKET, unix.SO_RCVTIMEO, &none)
	stop := context.AfterFunc(ctx, func() { unix.Shutdown(int(f.Fd()), unix.SHUT_RDWR) })
	defer stop()
	b, err := bufio.NewReader(io.LimitReader(f, 1<<20)).ReadBytes('\n')
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, fmt.Errorf("%s's supervisor went away before the message queued for it was delivered: it was not", a.Name)
	}
	var then Reply
	if err := json.Unmarshal(b, &then); err != nil {
		return nil, fmt.Errorf("control %s: bad answer from its supervisor: %w", a.Name, err)
	}
	if then.Error != "" {
		return nil, errors.New(then.Error)
	}
	then.Queued = true
	return &then, nil
}

// connect sends req to a's supervisor and reads its reply, leaving the connection open (nil
// when the request failed to get an answer).
func connect(ctx context.Context, a *state.Agent, req Request) (*os.File, *Reply, error) {
	if !a.Supervised() {
		return nil, nil, notRunning(a)
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
	// The supervisor acts on the request only if it can answer by the deadline (see
	// ctl.AnswerBy); the answer is waited for a little longer.
	wait := ctl.ExchangeTime()
	deadline := time.Now().Add(wait)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	req.Deadline = deadline
	tv := unix.NsecToTimeval(time.Until(deadline.Add(wait / 5)).Nanoseconds())
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv)
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: a.Path(state.CtlSocket)}); err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ECONNREFUSED) {
			if !a.Supervised() {
				return nil, nil, notRunning(a) // it ended meanwhile: its socket goes first
			}
			return nil, nil, fmt.Errorf("%s has no control channel (%v); its supervisor may be from an older agt: run 'agt restart %s'", a.Name, err, a.Name)
		}
		return nil, nil, fmt.Errorf("control %s: %w", a.Name, timeoutSays(err))
	}
	line, err := json.Marshal(req)
	if err != nil {
		return nil, nil, err
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		// Not all of it went: the supervisor acts on whole lines only.
		return nil, nil, fmt.Errorf("control %s: write: %w", a.Name, timeoutSays(err))
	}
	var b []byte
	if req.Op == OpAttach || req.Wait {
		// The output (or a queued message's second reply) may follow the reply at once: read
		// no byte past it.
		b, err = readLineBytewise(f, 1<<20)
	} else {
		b, err = bufio.NewReader(io.LimitReader(f, 1<<20)).ReadBytes('\n')
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%w from %s's supervisor (%v): whether it carried out the %s is unknown; 'agt tail -n 20 %s' shows what it did",
			ErrNoAnswer, a.Name, timeoutSays(err), req.Op, a.Name)
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

func notRunning(a *state.Agent) error {
	if st := Observe(a); stream.IsFinal(st.State) {
		return fmt.Errorf("%s is %w: it ended (%s)", a.Name, ErrNotRunning, st.State)
	}
	return fmt.Errorf("%s is %w: its supervisor is gone or never started", a.Name, ErrNotRunning)
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
		return fmt.Errorf("timed out after %v; the supervisor may be wedged", ctl.ExchangeTime())
	}
	if err == io.EOF {
		return errors.New("it closed the connection")
	}
	return err
}
