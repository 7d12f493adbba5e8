package supervisor

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/creack/pty"

	"agt/spawn/ctl"
	"agt/state"
	"agt/stream"
)

// A terminal agent (spawn --tty) runs on a pseudo-terminal the supervisor owns, so that its own
// full-screen interface can be attached to and left at will, as in tmux, with no server: the
// supervisor is the terminal's only reader. Every byte goes raw into tty.log (size-capped,
// rotated like the event log), into a window of recent output that an attaching client is
// shown first, and to every attached client; and, stripped of escape sequences, into output
// events. Its state comes from timing: running while bytes flow, waiting after idle_after of
// silence (the reason from its screen: input, permission, else quiet), stale after stale_after.

// recentMax is how much recent output an attaching client is shown before the live output:
// enough for a screen of a line-oriented program; a full-screen one redraws anyway (resize).
const recentMax = 64 << 10

// jiggleDelay is how long an attach keeps the terminal one column narrower, so that a
// full-screen program sees a real change of size and redraws all of its screen.
const jiggleDelay = 100 * time.Millisecond

// terminal is a terminal agent's side of the supervisor: the pty of the running generation,
// its size, the raw log, the recent output and the attached clients.
type terminal struct {
	mu         sync.Mutex // guards everything below but log
	ptmx       *os.File   // the master side while a generation runs, else nil
	rows, cols uint16     // the size every generation starts with; the last resize wins
	recent     []byte
	clients    map[*ttyClient]struct{}
	outputs    uint64        // chunks of output so far
	moved      chan struct{} // closed at the next chunk
	ended      bool
	writers    sync.WaitGroup // the clients' writers, which end shortly after end

	inMu sync.Mutex // serializes writes to the terminal (never held with mu)
	log  *cappedLog // written by the reader of the running generation, or by a start between two
}

func newTerminal(spec *state.Spec, a *state.Agent) *terminal {
	rows, cols := spec.Rows, spec.Cols
	if rows <= 0 || cols <= 0 || rows > 0xffff || cols > 0xffff {
		rows, cols = 24, 80
	}
	max := spec.LogMaxSize
	if max <= 0 {
		max = rawLogCap
	}
	return &terminal{
		rows: uint16(rows), cols: uint16(cols),
		clients: map[*ttyClient]struct{}{},
		moved:   make(chan struct{}),
		log:     openCapped(a.Path(state.TTYLog), max),
	}
}

// open makes the pty of a new generation: it returns the agent's side (for its stdin, stdout
// and stderr, closed by the caller once the agent started) and keeps ours. When the log holds
// an earlier generation's output, a separator line saying when and how it ended goes first.
func (t *terminal) open(lastExit string, now time.Time) (ptmx, tty *os.File, err error) {
	ptmx, tty, err = pty.Open()
	if err != nil {
		return nil, nil, fmt.Errorf("open a terminal: %w", err)
	}
	t.mu.Lock()
	rows, cols, earlier := t.rows, t.cols, len(t.recent) > 0
	t.mu.Unlock()
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: rows, Cols: cols}); err != nil {
		ptmx.Close()
		tty.Close()
		return nil, nil, fmt.Errorf("size the terminal: %w", err)
	}
	if earlier || t.log.size > 0 {
		sep := "\r\n── restarted at " + now.Format("15:04:05")
		if lastExit != "" {
			sep += " (" + lastExit + ")"
		}
		t.output([]byte(sep + " ──\r\n"))
	}
	t.mu.Lock()
	t.ptmx = ptmx
	t.mu.Unlock()
	return ptmx, tty, nil
}

// output takes a chunk the program wrote: into the log, the recent window and every client.
// Only the reader of the running generation calls it (or a start, between two), so the log
// has one writer, and is written outside the lock.
func (t *terminal) output(p []byte) {
	t.log.Write(p)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.recent = append(t.recent, p...)
	if n := len(t.recent); n > 2*recentMax {
		t.recent = append(t.recent[:0], t.recent[n-recentMax:]...)
	}
	for c := range t.clients {
		c.send(p)
	}
	t.outputs++
	close(t.moved)
	t.moved = make(chan struct{})
}

// closed forgets the pty of a generation that ended.
func (t *terminal) closed(ptmx *os.File) {
	t.mu.Lock()
	if t.ptmx == ptmx {
		t.ptmx = nil
	}
	t.mu.Unlock()
	ptmx.Close()
}

// input writes keys to the program; an error when none runs, or when it does not read them
// within half the time of a control exchange: a program that reads nothing never holds a
// request up past its answer (R38), nor its keys in memory (R36).
func (t *terminal) input(p []byte) error {
	t.mu.Lock()
	f := t.ptmx
	t.mu.Unlock()
	if f == nil {
		return errNoProgram
	}
	t.inMu.Lock()
	defer t.inMu.Unlock()
	wait := ctl.ExchangeTime() / 2
	f.SetWriteDeadline(time.Now().Add(wait))
	defer f.SetWriteDeadline(time.Time{})
	n, err := f.Write(p)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("its program took %d of %d bytes typed, and no more within %v", n, len(p), wait)
	}
	return err
}

var errNoProgram = errors.New("no program runs on its terminal now")

// resize sets the terminal's size, for this generation and the next. With jiggle (an attach),
// a size that does not change is changed for a moment all the same, so that a full-screen
// program redraws its whole screen for the newcomer.
func (t *terminal) resize(rows, cols uint16, jiggle bool) {
	if rows == 0 || cols == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rows, t.cols = rows, cols
	if t.ptmx == nil {
		return
	}
	if cur, err := pty.GetsizeFull(t.ptmx); jiggle && err == nil && cur.Rows == rows && cur.Cols == cols && cols > 1 {
		pty.Setsize(t.ptmx, &pty.Winsize{Rows: rows, Cols: cols - 1})
		time.AfterFunc(jiggleDelay, func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			if t.ptmx != nil {
				pty.Setsize(t.ptmx, &pty.Winsize{Rows: t.rows, Cols: t.cols}) // the latest size
			}
		})
		return
	}
	pty.Setsize(t.ptmx, &pty.Winsize{Rows: rows, Cols: cols})
}

// mark returns the count of output chunks so far, for waitOutput.
func (t *terminal) mark() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.outputs
}

// waitOutput reports whether the program wrote anything after mark, waiting up to d for it.
func (t *terminal) waitOutput(mark uint64, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		t.mu.Lock()
		n, moved := t.outputs, t.moved
		t.mu.Unlock()
		if n > mark {
			return true
		}
		select {
		case <-moved:
		case <-timer.C:
			return false
		}
	}
}

// end lets every client go once it has been sent what is queued for it: the agent is over
// for good.
func (t *terminal) end() {
	t.mu.Lock()
	t.ended = true
	for c := range t.clients {
		c.close()
		delete(t.clients, c)
	}
	t.mu.Unlock()
	t.writers.Wait() // each gives up after a second
	t.log.Close()
}

// size is the terminal's size now: the last resize's.
func (t *terminal) size() (rows, cols uint16) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.rows, t.cols
}

// termEnv is env for a program on a terminal of type term: TERM set, and no COLUMNS or LINES
// inherited from elsewhere (the program asks the terminal for its size).
func termEnv(env []string, term string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "TERM=") && !strings.HasPrefix(kv, "COLUMNS=") && !strings.HasPrefix(kv, "LINES=") {
			out = append(out, kv)
		}
	}
	if term == "" {
		term = "xterm-256color"
	}
	return append(out, "TERM="+term)
}

// prompts are the screens of spec that tell why a quiet terminal agent waits, or that it works
// though its screen stands still. A pattern that no longer compiles (a hand-edited record) is
// left out.
func prompts(spec *state.Spec) []stream.Prompt {
	var out []stream.Prompt
	for _, p := range []struct {
		stream.Prompt
		expr string
	}{
		{stream.Prompt{Reason: stream.ReasonPermission}, spec.PermissionScreen},
		{stream.Prompt{Working: true}, spec.BusyScreen},
		{stream.Prompt{Reason: stream.ReasonInput}, spec.InputScreen},
	} {
		if re, err := regexp.Compile(p.expr); p.expr != "" && err == nil {
			p.Re = re
			out = append(out, p.Prompt)
		}
	}
	return out
}
