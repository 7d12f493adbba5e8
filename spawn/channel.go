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
)

// The client end of the control channel (see package ctl): one request, one reply.

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
	deadline := time.Now().Add(ctl.Timeout)
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
		return fmt.Errorf("timed out after %v; the supervisor may be wedged", ctl.Timeout)
	}
	return err
}
