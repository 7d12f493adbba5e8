package commands

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"agt/termsafe"
)

// liveStatus is the one line a command that waits shows on a terminal, so that no wait is
// silent: after statusAfter, what it waits for and for how long, redrawn in place once a
// second on stderr, and erased when the wait ends. Piped (stderr not a terminal), it shows
// nothing at all. Output written meanwhile calls hide first, so the line never mixes with it.
type liveStatus struct {
	w     io.Writer
	fd    int
	what  func() string // what the command waits for now: "fix-auth: running (Bash go test)"
	start time.Time

	mu     sync.Mutex
	shown  bool
	detail string // the last line of output of what runs (a workspace set-up)
	stopC  chan struct{}
	doneC  chan struct{}
}

// statusAfter is how long a wait stays quiet before its status line shows.
const statusAfter = time.Second

// startStatus starts the status line of a wait on w (the command's stderr); nil, which does
// nothing, when w is not a terminal.
func startStatus(w io.Writer, what func() string) *liveStatus {
	f, ok := rawFile(w) // the line's \r and erase are agt's own; what it shows is escaped
	if !ok || !isTerminal(f) {
		return nil
	}
	s := &liveStatus{w: f, fd: int(f.Fd()), what: what, start: time.Now(), stopC: make(chan struct{}), doneC: make(chan struct{})}
	go s.run()
	return s
}

func (s *liveStatus) run() {
	defer close(s.doneC)
	t := time.NewTimer(statusAfter)
	defer t.Stop()
	for {
		select {
		case <-s.stopC:
			return
		case <-t.C:
		}
		s.draw()
		t.Reset(time.Second)
	}
}

// line is the status line: what, the elapsed time, and the last line of output, cut to the
// terminal's width.
func (s *liveStatus) line() string {
	text := "agt: " + termsafe.Line(s.what()) + " · " + humanDuration(time.Since(s.start).Truncate(time.Second))
	if s.detail != "" {
		text += " · " + s.detail
	}
	width := 80
	if ws, err := unix.IoctlGetWinsize(s.fd, unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
		width = int(ws.Col)
	}
	return fit(text, width-1)
}

func (s *liveStatus) draw() {
	s.mu.Lock()
	defer s.mu.Unlock()
	io.WriteString(s.w, "\r\x1b[2K"+s.line())
	s.shown = true
}

// hide erases the line, for output to be written; the next tick draws it again.
func (s *liveStatus) hide() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shown {
		io.WriteString(s.w, "\r\x1b[2K")
		s.shown = false
	}
}

// stop ends the status line and erases it.
func (s *liveStatus) stop() {
	if s == nil {
		return
	}
	close(s.stopC)
	<-s.doneC
	s.hide()
}

// Write takes the output of what runs meanwhile (a workspace set-up): its last line, made
// safe, is shown in the status line.
func (s *liveStatus) Write(p []byte) (int, error) {
	if s == nil {
		return len(p), nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	lines := bytes.Split(bytes.TrimRight(p, "\r\n"), []byte("\n"))
	if last := strings.TrimSpace(string(lines[len(lines)-1])); last != "" {
		if i := strings.LastIndexByte(last, '\r'); i >= 0 { // a progress bar redraws with \r
			last = last[i+1:]
		}
		s.detail = safeLine(last, 200)
	}
	return len(p), nil
}
