package supervisor

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"agt/spawn/ctl"
)

// The server end of agt attach (see ctl.FrameKeys): the terminal's output to each attached
// client, and its keys and sizes to the terminal.

// attachQueue and attachQueueBytes bound the output waiting for one client, in chunks and in
// bytes: a client that falls that far behind is let go rather than holding up the agent or the
// others, or the supervisor's memory (R36). maxAttached bounds the clients attached at once.
const (
	attachQueue      = 1024
	attachQueueBytes = 4 << 20
	maxAttached      = 16
)

// ttyClient is one attached client.
type ttyClient struct {
	c      *os.File
	out    chan []byte
	queued atomic.Int64 // bytes in out
	done   chan struct{}
	once   sync.Once
}

// send queues a chunk for the client; one that cannot keep up is let go.
func (c *ttyClient) send(p []byte) {
	if c.queued.Add(int64(len(p))) > attachQueueBytes {
		c.close()
		return
	}
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
			c.queued.Add(-int64(len(p)))
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
func (tt *terminalTalk) attach(c *os.File, req ctl.Request, answer func(ctl.Reply)) {
	s, t := tt.s, tt.term
	c.SetDeadline(time.Time{})
	cl := &ttyClient{c: c, out: make(chan []byte, attachQueue), done: make(chan struct{})}
	t.mu.Lock()
	if t.ended {
		t.mu.Unlock()
		answer(ctl.Reply{Error: fmt.Sprintf("%s has ended", s.spec.Name)})
		return
	}
	if len(t.clients) >= maxAttached {
		t.mu.Unlock()
		answer(ctl.Reply{Error: fmt.Sprintf("%d clients are attached to %s already; detach one first", maxAttached, s.spec.Name)})
		return
	}
	t.mu.Unlock()
	answer(ctl.Reply{})
	t.mu.Lock()
	replay := t.replayLocked()
	cl.queued.Add(int64(len(replay)))
	cl.out <- replay
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
		case ctl.FrameKeys:
			t.input(buf[:n]) // nothing runs between two generations: the keys go nowhere
		case ctl.FrameSize:
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
