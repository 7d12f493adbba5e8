package spawn

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"agt/state"
)

// Attaching goes over the control channel: the request {"op":"attach","rows":R,"cols":C} and
// its reply as for any request; then the connection stays open. The supervisor writes the
// program's output on it, raw, the recent output first; the client writes frames: a type byte,
// a two-byte big-endian length and the payload, 'k' for keys, 'w' for a window size (rows and
// columns, two bytes each). The client writes no frame before the reply, so nothing it sends
// is lost to the reader of the request line.

// Frame types of an attached client.
const (
	frameKeys = 'k'
	frameSize = 'w'
)

// attachQueue bounds the chunks of output waiting for one client: a client that falls that far
// behind is let go rather than holding up the agent or the others.
const attachQueue = 1024

// ttyClient is one attached client.
type ttyClient struct {
	c    *os.File
	out  chan []byte
	done chan struct{}
	once sync.Once
}

// send queues a chunk for the client; one that cannot keep up is let go.
func (c *ttyClient) send(p []byte) {
	select {
	case <-c.done:
	case c.out <- append([]byte(nil), p...):
	default:
		c.close()
	}
}

func (c *ttyClient) close() { c.once.Do(func() { close(c.done) }) }

// write copies the queue to the connection until the client is let go, then what is still
// queued (bounded by a deadline), and closes the connection.
func (c *ttyClient) write(wg *sync.WaitGroup) {
	defer wg.Done()
	defer c.c.Close()
	for {
		select {
		case p := <-c.out:
			if _, err := c.c.Write(p); err != nil {
				c.close()
				return
			}
		case <-c.done:
			c.c.SetWriteDeadline(time.Now().Add(time.Second))
			for {
				select {
				case p := <-c.out:
					if _, err := c.c.Write(p); err != nil {
						return
					}
				default:
					return
				}
			}
		}
	}
}

// attach serves one attached client until it leaves or the agent ends for good.
func (tt *terminalTalk) attach(c *os.File, req Request, answer func(Reply)) {
	s, t := tt.s, tt.term
	c.SetDeadline(time.Time{})
	cl := &ttyClient{c: c, out: make(chan []byte, attachQueue), done: make(chan struct{})}
	t.mu.Lock()
	if t.ended {
		t.mu.Unlock()
		answer(Reply{Error: fmt.Sprintf("%s has ended", s.spec.Name)})
		return
	}
	t.mu.Unlock()
	answer(Reply{})
	t.mu.Lock()
	cl.out <- t.replayLocked()
	t.clients[cl] = struct{}{}
	t.writers.Add(1)
	t.mu.Unlock()
	go cl.write(&t.writers)
	t.resize(req.Rows, req.Cols, true)
	var head [3]byte
	buf := make([]byte, 0xffff)
	for {
		if _, err := io.ReadFull(c, head[:]); err != nil {
			break
		}
		n := int(binary.BigEndian.Uint16(head[1:]))
		if _, err := io.ReadFull(c, buf[:n]); err != nil {
			break
		}
		switch head[0] {
		case frameKeys:
			t.input(buf[:n]) // nothing runs between two generations: the keys go nowhere
		case frameSize:
			if n == 4 {
				t.resize(binary.BigEndian.Uint16(buf[:2]), binary.BigEndian.Uint16(buf[2:4]), false)
			}
		}
	}
	t.mu.Lock()
	delete(t.clients, cl)
	t.mu.Unlock()
	cl.close()
}

// replayLocked is what an attaching client is shown first: the recent output, from the start
// of a line.
func (t *terminal) replayLocked() []byte {
	r := t.recent
	if len(r) > recentMax {
		r = r[len(r)-recentMax:]
		if i := bytes.IndexByte(r, '\n'); i >= 0 {
			r = r[i+1:]
		}
	}
	return append([]byte(nil), r...)
}

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
		if err := at.frame(frameKeys, p[:n]); err != nil {
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
	return at.frame(frameSize, b[:])
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
