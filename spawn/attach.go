package spawn

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"agt/spawn/ctl"
	"agt/state"
)

// Attachment is a client's connection to a terminal agent: Read returns what the program shows
// (the recent output first), until the agent ends for good (io.EOF).
type Attachment struct {
	f  *os.File
	mu sync.Mutex // one frame at a time
}

// Attach connects to the terminal of a's agent, sized rows x cols (the last client to size it
// wins).
func Attach(ctx context.Context, a *state.Agent, rows, cols uint16) (*Attachment, error) {
	f, _, err := connect(ctx, a, Request{Op: OpAttach, Rows: rows, Cols: cols})
	if err != nil {
		return nil, err
	}
	// The exchange is over: no more timeouts on a connection that idles as long as the agent.
	if raw, err := f.SyscallConn(); err == nil {
		raw.Control(func(fd uintptr) {
			var none unix.Timeval
			unix.SetsockoptTimeval(int(fd), unix.SOL_SOCKET, unix.SO_RCVTIMEO, &none)
			unix.SetsockoptTimeval(int(fd), unix.SOL_SOCKET, unix.SO_SNDTIMEO, &none)
		})
	}
	return &Attachment{f: f}, nil
}

func (at *Attachment) Read(p []byte) (int, error) {
	n, err := at.f.Read(p)
	if n == 0 && err == nil {
		err = io.EOF
	}
	return n, err
}

// Keys sends keystrokes to the program.
func (at *Attachment) Keys(p []byte) error {
	for len(p) > 0 {
		n := min(len(p), 0xffff)
		if err := at.frame(ctl.FrameKeys, p[:n]); err != nil {
			return err
		}
		p = p[n:]
	}
	return nil
}

// Resize sets the terminal's size.
func (at *Attachment) Resize(rows, cols uint16) error {
	var b [4]byte
	binary.BigEndian.PutUint16(b[:2], rows)
	binary.BigEndian.PutUint16(b[2:], cols)
	return at.frame(ctl.FrameSize, b[:])
}

func (at *Attachment) frame(typ byte, p []byte) error {
	b := make([]byte, 3, 3+len(p))
	b[0] = typ
	binary.BigEndian.PutUint16(b[1:], uint16(len(p)))
	at.mu.Lock()
	defer at.mu.Unlock()
	_, err := at.f.Write(append(b, p...))
	if errors.Is(err, unix.EPIPE) {
		err = io.EOF
	}
	return err
}

// Close leaves the agent running.
func (at *Attachment) Close() error { return at.f.Close() }
