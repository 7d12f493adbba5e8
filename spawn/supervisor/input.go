package supervisor

import (
	"fmt"
	"os"
	"sync"
)

// maxInput bounds what waits to be written to an agent's stdin (R36): a message of the largest
// size and the answers around it. An agent that does not read its input holds that much of the
// supervisor's memory at most; what would go past it is refused, never queued.
const maxInput = 32 << 20

// inputWriter writes lines to the agent's stdin, in order and whole, from a goroutine of its
// own: the lines are made under mu, and an agent that reads slowly must never hold mu up.
type inputWriter struct {
	mu      sync.Mutex
	lines   [][]byte
	queued  int  // bytes in lines, and in the write under way
	closing bool // close stdin once the lines queued are written
	done    bool // the writer has ended (the agent's stdin closed): lines go nowhere
	wake    chan struct{}
	w       *os.File
	// refused counts the lines refused since the agent last took a line; the first refusal
	// of such a spell is the one the caller reports, and took, when set, hears of its end.
	refused int
	took    func(refused int)
}

// newInputWriter writes to w; took, when not nil, is called (from the writer's goroutine, no
// lock held) when the agent takes a line after lines for it were refused, with their count.
func newInputWriter(w *os.File, took func(refused int)) *inputWriter {
	lw := &inputWriter{w: w, wake: make(chan struct{}, 1), took: took}
	go lw.loop()
	return lw
}

// errInputFull says the agent has not read what waits for it: nothing more is queued.
type errInputFull struct{ queued int }

func (e errInputFull) Error() string {
	return fmt.Sprintf("it has not read its input: %d MiB wait to be written to it; not sent", (e.queued+1<<20-1)>>20)
}

// room reports, as send would, whether n more bytes may be queued.
func (lw *inputWriter) room(n int) error {
	if lw == nil {
		return nil
	}
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.queued+n > maxInput {
		return errInputFull{lw.queued}
	}
	return nil
}

// send queues lines for the agent: all of them, or none when they would go past maxInput
// (errInputFull). first is set on the first refusal after the agent last took a line.
func (lw *inputWriter) send(lines ...[]byte) (first bool, err error) {
	if lw == nil || len(lines) == 0 {
		return false, nil
	}
	n := 0
	for _, l := range lines {
		n += len(l)
	}
	lw.mu.Lock()
	if lw.done {
		lw.mu.Unlock()
		return false, nil // the agent is gone: its end follows
	}
	if lw.queued+n > maxInput {
		lw.refused += len(lines)
		first, err = lw.refused == len(lines), errInputFull{lw.queued}
		lw.mu.Unlock()
		return first, err
	}
	lw.lines = append(lw.lines, lines...)
	lw.queued += n
	lw.mu.Unlock()
	lw.kick()
	return false, nil
}

// closeAfter closes the agent's stdin once what is queued is written: the end of its input.
func (lw *inputWriter) closeAfter() {
	if lw == nil {
		return
	}
	lw.mu.Lock()
	lw.closing = true
	lw.mu.Unlock()
	lw.kick()
}

func (lw *inputWriter) kick() {
	select {
	case lw.wake <- struct{}{}:
	default:
	}
}

func (lw *inputWriter) loop() {
	defer func() {
		lw.w.Close()
		lw.mu.Lock()
		lw.done, lw.lines, lw.queued = true, nil, 0
		lw.mu.Unlock()
	}()
	for {
		lw.mu.Lock()
		lines, closing := lw.lines, lw.closing
		lw.lines = nil
		lw.mu.Unlock()
		if len(lines) == 0 && closing {
			return
		}
		for _, l := range lines {
			// No deadline: the agent reads when it reads. It exiting ends the write (EPIPE).
			_, err := lw.w.Write(l)
			lw.mu.Lock()
			lw.queued -= len(l)
			refused := lw.refused
			lw.refused = 0
			lw.mu.Unlock()
			if err != nil {
				return
			}
			if refused > 0 && lw.took != nil {
				lw.took(refused)
			}
		}
		if len(lines) == 0 {
			<-lw.wake
		}
	}
}
