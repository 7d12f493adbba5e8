package supervisor

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/tidwall/gjson"

	"agt/config"
	"agt/spawn/ctl"
	"agt/state"
	"agt/stream"
)

// testClock is the supervisor's clock in a test: it stands still until the test moves it.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

// useTestClock makes the supervisor's clock one of the test's, for the test's duration.
func useTestClock(t *testing.T) *testClock {
	c := &testClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	ctl.Test.Clock = c.Now
	t.Cleanup(func() { ctl.Test.Clock = nil })
	return c
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func terminalSpec() state.Spec {
	return state.Spec{Kind: "tui", Format: "text", TTY: true, Argv: []string{"tui"},
		IdleAfter: state.Duration(5 * time.Second), StaleAfter: state.Duration(10 * time.Minute),
		PermissionScreen: `Allow\? \[y/n\]`, InputScreen: `(?m)^>\s*$`}
}

// tick lets the supervisor see the time the clock says.
func tick(s *supervisor) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tickLocked(s.now()) {
		s.writeStatusLocked()
	}
}

// typed reads what the program on the terminal reads: a line, in the terminal's canonical mode.
func (a *testAgent) typed(r *bufio.Reader) string {
	a.t.Helper()
	a.tty.SetReadDeadline(time.Now().Add(bound))
	line, err := r.ReadString('\n')
	if err != nil {
		a.t.Fatalf("reading the terminal: %v (read %q)", err, line)
	}
	return line
}

// TestTerminalQuietSaysWhy: what the program shows becomes output events line by line; once it
// falls quiet for idle_after, its screen says why it waits, and its unfinished last line (the
// question) goes out first.
func TestTerminalQuietSaysWhy(t *testing.T) {
	clock := useTestClock(t)
	s := newTestSupervisor(t, terminalSpec())
	a := startAgent(t, s, false, nil)
	io.WriteString(a.tty, "working\nAllow? [y/n] ")
	waitEvent(t, s, stream.TypeOutput, func(ev gjson.Result) bool { return ev.Get("line").Str == "working" })
	waitState(t, s, stream.Running, "")

	clock.advance(4 * time.Second)
	tick(s)
	waitState(t, s, stream.Running, "")
	clock.advance(time.Second)
	tick(s)
	waitState(t, s, stream.Waiting, stream.ReasonPermission)
	waitEvent(t, s, stream.TypeOutput, func(ev gjson.Result) bool { return strings.HasPrefix(ev.Get("line").Str, "Allow? [y/n]") })
}

// TestTerminalScreenIsTall: on a terminal of 40 rows, the prompt patterns see 40 lines: an
// input box with 30 lines drawn under it (an animation) still says the agent waits for input.
func TestTerminalScreenIsTall(t *testing.T) {
	clock := useTestClock(t)
	spec := terminalSpec()
	spec.Rows, spec.Cols = 40, 120
	s := newTestSupervisor(t, spec)
	a := startAgent(t, s, false, nil)
	var screen strings.Builder
	screen.WriteString(">\n")
	for i := range 30 {
		fmt.Fprintf(&screen, "frame %d\n", i)
	}
	io.WriteString(a.tty, screen.String())
	waitEvent(t, s, stream.TypeOutput, func(ev gjson.Result) bool { return ev.Get("line").Str == "frame 29" })
	clock.advance(5 * time.Second)
	tick(s)
	waitState(t, s, stream.Waiting, stream.ReasonInput)
}

// TestTerminalTypesPrompt: a prompt the argv does not take is typed once the program first
// waits, and Enter pressed after it.
func TestTerminalTypesPrompt(t *testing.T) {
	clock := useTestClock(t)
	s := newTestSupervisor(t, terminalSpec())
	prompt := "fix the bug"
	a := startAgent(t, s, false, &prompt)
	r := bufio.NewReader(a.tty)
	io.WriteString(a.tty, "> ")
	waitFor(t, "the prompt on the screen", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.conv.(*terminalTalk).text.Screen() == ">"
	})
	clock.advance(5 * time.Second)
	tick(s)
	// The log, not the state now: the typed prompt's echo may already have moved it on.
	waitEvent(t, s, stream.TypeState, func(ev gjson.Result) bool {
		return ev.Get("to").Str == stream.Waiting && ev.Get("reason").Str == stream.ReasonInput
	})
	if line := a.typed(r); line != "fix the bug\n" {
		t.Fatalf("typed %q", line)
	}
}

// TestTerminalSendKeys: agt send types and presses Enter (a text of several lines as one
// bracketed paste); agt send --keys writes the keys as they are.
func TestTerminalSendKeys(t *testing.T) {
	useTestClock(t)
	s := newTestSupervisor(t, terminalSpec())
	a := startAgent(t, s, false, nil)
	r := bufio.NewReader(a.tty)
	accepted(t, s.conv.send(ctl.Request{Op: ctl.OpSend, Text: "hello"}))
	if line := a.typed(r); line != "hello\n" {
		t.Fatalf("send typed %q", line)
	}
	accepted(t, s.conv.send(ctl.Request{Op: ctl.OpSend, Text: "two\nlines"}))
	if line := a.typed(r); line != "\x1b[200~two\n" {
		t.Fatalf("a paste typed %q", line)
	}
	if line := a.typed(r); line != "lines\x1b[201~\n" {
		t.Fatalf("a paste typed %q", line)
	}
	accepted(t, s.conv.keys("y\r"))
	if line := a.typed(r); line != "y\n" {
		t.Fatalf("keys typed %q", line)
	}
	for _, r := range []ctl.Reply{s.conv.answer(ctl.Request{Op: ctl.OpApprove}), s.conv.interrupt(), s.conv.endAfterTurn()} {
		refused(t, r, "runs on a terminal: answer it there ('agt attach a')")
	}
}

// TestTerminalAttach: an attached client is shown the recent output, then the live output; its
// keys go to the program and its size to the terminal. Once the agent is over, a client is let
// go and a new one refused.
func TestTerminalAttach(t *testing.T) {
	useTestClock(t)
	s := newTestSupervisor(t, terminalSpec())
	a := startAgent(t, s, false, nil)
	r := bufio.NewReader(a.tty)
	io.WriteString(a.tty, "before\n")
	waitEvent(t, s, stream.TypeOutput, nil)

	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC|syscall.SOCK_NONBLOCK, 0) // as accepted: pollable
	if err != nil {
		t.Fatal(err)
	}
	server, client := os.NewFile(uintptr(fds[0]), "server"), os.NewFile(uintptr(fds[1]), "client")
	defer client.Close()
	replies := make(chan ctl.Reply, 1)
	served := make(chan struct{})
	go func() {
		s.conv.attach(server, ctl.Request{Op: ctl.OpAttach, Rows: 30, Cols: 100}, func(r ctl.Reply) { replies <- r })
		close(served)
	}()
	accepted(t, <-replies)
	shown := make(chan string, 16)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := client.Read(buf)
			if n > 0 {
				shown <- string(buf[:n])
			}
			if err != nil {
				close(shown)
				return
			}
		}
	}()
	var seen strings.Builder
	wantShown := func(s string) {
		t.Helper()
		deadline := time.After(bound)
		for !strings.Contains(seen.String(), s) {
			select {
			case p := <-shown:
				seen.WriteString(p)
			case <-deadline:
				t.Fatalf("the client was shown %q, not %q", seen.String(), s)
			}
		}
	}
	wantShown("before\r\n")
	io.WriteString(a.tty, "after\n")
	wantShown("after\r\n")

	frame := func(typ byte, p []byte) {
		b := []byte{typ, 0, 0}
		binary.BigEndian.PutUint16(b[1:], uint16(len(p)))
		client.Write(append(b, p...))
	}
	frame(ctl.FrameKeys, []byte("from the client\r"))
	if line := a.typed(r); line != "from the client\n" {
		t.Fatalf("keys typed %q", line)
	}
	size := make([]byte, 4)
	binary.BigEndian.PutUint16(size, 40)
	binary.BigEndian.PutUint16(size[2:], 120)
	frame(ctl.FrameSize, size)
	waitFor(t, "the terminal to be 40x120", func() bool {
		ws, err := pty.GetsizeFull(a.tty)
		return err == nil && ws.Rows == 40 && ws.Cols == 120
	})

	s.conv.end() // the agent is over for good
	waitClosed(t, "the client to be let go", served)
	s.conv.attach(server, ctl.Request{Op: ctl.OpAttach}, func(r ctl.Reply) { replies <- r })
	refused(t, <-replies, "a has ended")
}

// show writes b to the terminal agent's screen and waits until the supervisor has taken in all of
// it: a chunk taken in after the test clock moved on would be new work then.
func show(t *testing.T, s *supervisor, a *testAgent, b []byte) {
	t.Helper()
	c := s.conv.(*terminalTalk)
	s.mu.Lock()
	want := c.seen + uint64(len(b)) // at least: the terminal may add a CR to each LF
	s.mu.Unlock()
	a.tty.Write(b)
	waitFor(t, fmt.Sprintf("%d bytes to be read", len(b)), func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return c.seen >= want
	})
}

// TestTerminalClaudeScreens: the screens of Claude Code's TUI, as captured under agt (see
// config's TestClaudeScreens): its retry of a 401 is running (retrying), with a retry notice of
// the attempt it shows; the failure it then gives up on, once quiet at its prompt, is waiting
// (input) with the failure in an event and in the status; a spinner that turns for stall_after
// with nothing new is stale (stalled).
func TestTerminalClaudeScreens(t *testing.T) {
	capture := func(name string) []byte {
		b, err := os.ReadFile("../../stream/testdata/terminal/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	claude := config.Builtins()["claude"]
	spec := terminalSpec()
	spec.Rows, spec.Cols = 24, 80
	spec.StallAfter = state.Duration(time.Minute)
	spec.PermissionScreen, spec.InputScreen = claude.PermissionScreen, claude.InputScreen
	spec.BusyScreen, spec.RetryScreen, spec.ErrorScreen = claude.BusyScreen, claude.RetryScreen, claude.ErrorScreen

	clock := useTestClock(t)
	s := newTestSupervisor(t, spec)
	a := startAgent(t, s, false, nil)
	show(t, s, a, capture("claude_retry_401.tty"))
	ev := waitEvent(t, s, stream.TypeError, func(ev gjson.Result) bool { return ev.Get("attempt").Int() == 6 })
	if ev.Get("message").Str != "401 invalid x-api-key" || ev.Get("class").Str != stream.ClassAuth || ev.Get("fatal").Bool() {
		t.Errorf("retry notice %s", ev.Raw)
	}
	waitState(t, s, stream.Running, stream.ReasonRetrying)

	show(t, s, a, capture("claude_error_401.tty"))
	waitEvent(t, s, stream.TypeOutput, func(ev gjson.Result) bool { return strings.Contains(ev.Get("line").Str, "Fix external API key") })
	clock.advance(5 * time.Second)
	tick(s)
	waitState(t, s, stream.Waiting, stream.ReasonInput)
	ev = waitEvent(t, s, stream.TypeError, func(ev gjson.Result) bool { return ev.Get("attempt").Int() == 0 })
	if ev.Get("message").Str != "Invalid API key · Fix external API key" || ev.Get("class").Str != stream.ClassAuth {
		t.Errorf("failure %s", ev.Raw)
	}
	s.mu.Lock()
	if s.status.Error != "Invalid API key · Fix external API key" {
		t.Errorf("status error %q", s.status.Error)
	}
	s.mu.Unlock()

	// A request that hangs: new words, then only the spinner and its clock, for a minute.
	show(t, s, a, capture("claude_hang.tty"))
	waitState(t, s, stream.Running, "")
	for i := range 60 {
		clock.advance(time.Second)
		a.tty.Write([]byte("\x1b[19;1H✶ Hatching… (" + strconv.Itoa(21+i) + "s)"))
		waitFor(t, "the tick's activity", func() bool {
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.snap.Activity.Equal(clock.Now())
		})
		tick(s)
	}
	waitState(t, s, stream.Stale, stream.ReasonStalled)

	// A permission box, whose dot blinks for ever: waiting (permission) after idle_after, the
	// blinks no sign of life. Answered, the box goes: running, then waiting (input).
	show(t, s, a, capture("claude_permission.tty"))
	waitState(t, s, stream.Running, "")
	for i := range 6 {
		clock.advance(time.Second)
		dot := []string{" ", "●"}[i%2]
		a.tty.Write([]byte("\x1b[6;1H" + dot))
		waitFor(t, "the blink to be read", func() bool {
			s.mu.Lock()
			defer s.mu.Unlock()
			row := strings.Split(s.conv.(*terminalTalk).watch.text, "\n")[5]
			return strings.HasPrefix(row, dot) || dot == " " && !strings.HasPrefix(row, "●")
		})
		tick(s)
	}
	waitState(t, s, stream.Waiting, stream.ReasonPermission)
	show(t, s, a, capture("claude_permission_answered.tty"))
	waitState(t, s, stream.Running, "")
	clock.advance(5 * time.Second)
	tick(s)
	waitState(t, s, stream.Waiting, stream.ReasonInput)
}
