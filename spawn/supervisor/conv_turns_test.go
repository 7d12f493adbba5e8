package supervisor

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"agt/config"
	"agt/spawn/ctl"
	"agt/state"
	"agt/stream"
)

// turnsSpec is a conversation of turn processes, each a sleep that reads its prompt on stdin
// (as a file, which the test reads back from /proc); a resume says so in its argv.
func turnsSpec() state.Spec {
	return state.Spec{Kind: "codex", Format: "codex", Stdin: config.StdinPrompt, ConverseTurns: true,
		Argv:   []string{"sh", "-c", "exec sleep 60", "start"},
		Resume: []string{"sh", "-c", "exec sleep 60", "resume", "$AGT_SESSION_ID"}}
}

// stdinOf is what the process pid was given as its stdin.
func stdinOf(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/fd/0")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// betweenTurns runs nextTurn after a turn process that exited 0, with signals of the test's;
// its answer comes on the channel.
func betweenTurns(t *testing.T, s *supervisor) (chan *generation, chan error, chan os.Signal) {
	t.Helper()
	term := make(chan os.Signal, 1)
	sigs := signals{term: term, chld: make(chan os.Signal, 1)}
	gc, ec := make(chan *generation, 1), make(chan error, 1)
	var started *generation
	done := make(chan struct{})
	go func() {
		g, err := s.conv.nextTurn(sigs, &stream.Exit{})
		started = g
		close(done)
		gc <- g
		ec <- err
	}()
	t.Cleanup(func() {
		// The process nextTurn started goes, and its output is read to its end.
		waitClosed(t, "nextTurn to return", done)
		if started == nil {
			return
		}
		pid := int(gjson.GetBytes(started.spawned, "pid").Int())
		syscall.Kill(-pid, syscall.SIGKILL)
		var ws syscall.WaitStatus
		syscall.Wait4(pid, &ws, 0, nil)
		waitClosed(t, "the readers to finish", started.readers)
	})
	return gc, ec, term
}

// TestTurnsNextTurn: between two turn processes the conversation waits for input; a message
// starts the next process, which resumes the saved session with the message as its prompt.
func TestTurnsNextTurn(t *testing.T) {
	s := newTestSupervisor(t, turnsSpec())
	s.mu.Lock()
	s.status.SessionID, s.status.Resumable = "thread-1", true
	s.snap.State = stream.Running
	s.mu.Unlock()
	gc, ec, _ := betweenTurns(t, s)
	waitState(t, s, stream.Waiting, stream.ReasonInput)
	waitEvent(t, s, stream.TypeExit, nil)

	accepted(t, s.conv.send(ctl.Request{Op: ctl.OpSend, Text: "second turn"}))
	g, err := <-gc, <-ec
	if err != nil {
		t.Fatal(err)
	}
	spawned := gjson.ParseBytes(g.spawned)
	if argv := spawned.Get("argv").Array(); len(argv) != 5 || argv[3].Str != "resume" || argv[4].Str != "thread-1" {
		t.Fatalf("spawned %s, want the resume argv", g.spawned)
	}
	if got := stdinOf(t, int(spawned.Get("pid").Int())); got != "second turn" {
		t.Fatalf("the turn's process read %q", got)
	}
	waitState(t, s, stream.Running, "")
}

// TestTurnsUnsavedFirstTurn: when the first turn left no saved session (cut short before the
// model answered), the next turn starts afresh and is given the first prompt again before the
// message, which the log says.
func TestTurnsUnsavedFirstTurn(t *testing.T) {
	s := newTestSupervisor(t, turnsSpec())
	if err := state.WriteFileAtomic(s.a.Path(state.PromptFile), []byte("first task")); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.status.SessionID, s.status.Resumable = "thread-1", false
	s.snap.State = stream.Running
	s.mu.Unlock()
	gc, ec, _ := betweenTurns(t, s)
	waitState(t, s, stream.Waiting, stream.ReasonInput)

	accepted(t, s.conv.send(ctl.Request{Op: ctl.OpSend, Text: "second turn"}))
	g, err := <-gc, <-ec
	if err != nil {
		t.Fatal(err)
	}
	spawned := gjson.ParseBytes(g.spawned)
	if argv := spawned.Get("argv").Array(); len(argv) != 4 || argv[3].Str != "start" {
		t.Fatalf("spawned %s, want the start argv", g.spawned)
	}
	if got := stdinOf(t, int(spawned.Get("pid").Int())); got != "first task\n\nsecond turn" {
		t.Fatalf("the turn's process read %q", got)
	}
	ev := waitEvent(t, s, stream.TypeError, nil)
	if ev.Get("message").Str != "session thread-1 was never saved; the next turn starts afresh, given the first prompt again before the message" {
		t.Errorf("event %s", ev.Raw)
	}
}

// TestTurnsQueued: a message queued while a turn process runs starts the next one as soon as
// that one has exited, without waiting for input.
func TestTurnsQueued(t *testing.T) {
	s := newTestSupervisor(t, turnsSpec())
	prompt := "first"
	a := startAgent(t, s, false, &prompt)
	if got := a.given(); got != "first" {
		t.Fatalf("the first process is given %q on stdin", got)
	}
	refused(t, s.conv.send(ctl.Request{Op: ctl.OpSend, Text: "now"}), "not waiting for input")
	r := s.conv.send(ctl.Request{Op: ctl.OpSend, Text: "queued", Queue: true})
	if !r.Queued {
		t.Fatalf("queue: %+v", r)
	}
	s.mu.Lock()
	if !s.conv.endedLocked(stream.Exit{}, stream.Failure{}) {
		t.Error("a clean exit of a turn process is no turn's end")
	}
	s.mu.Unlock()
	gc, ec, _ := betweenTurns(t, s)
	g, err := <-gc, <-ec
	if err != nil {
		t.Fatal(err)
	}
	if got := stdinOf(t, int(gjson.GetBytes(g.spawned, "pid").Int())); got != "queued" {
		t.Fatalf("the next process read %q", got)
	}
}

// TestTurnsStopBetween: a stop, or stop --after-turn, while no process runs ends the
// conversation: no next turn starts.
func TestTurnsStopBetween(t *testing.T) {
	for _, how := range []string{"SIGTERM", "after-turn"} {
		t.Run(how, func(t *testing.T) {
			s := newTestSupervisor(t, turnsSpec())
			_, ec, term := betweenTurns(t, s)
			waitState(t, s, stream.Waiting, stream.ReasonInput)
			if how == "SIGTERM" {
				term <- syscall.SIGTERM
			} else {
				accepted(t, s.conv.endAfterTurn())
			}
			if err := <-ec; err != errStopped {
				t.Fatalf("nextTurn: %v, want errStopped", err)
			}
			if s.a.Want() != "down" {
				t.Error("want is not down")
			}
		})
	}
}

// TestTurnsInterrupt: an interrupt is SIGINT to the turn's process group, then SIGTERM after
// a grace when it takes no notice; its end is the turn's, not a failure. Before the process
// runs there is nothing to interrupt.
func TestTurnsInterrupt(t *testing.T) {
	s := newTestSupervisor(t, turnsSpec())
	timers := &fakeTimers{}
	s.after = timers.after
	prompt := "first"
	a := startAgentAs(t, s, false, &prompt, `trap "" INT; exec sleep 60`)
	waitFor(t, "the trap to be set", func() bool { // and sleep to run, which keeps it
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(a.proc.Process.Pid) + "/cmdline")
		return strings.HasPrefix(string(b), "sleep")
	})
	accepted(t, s.conv.interrupt())
	if ds := timers.fire(); len(ds) != 1 || ds[0] != interruptGrace {
		t.Fatalf("timers %v", ds)
	}
	done := make(chan error, 1)
	go func() { done <- a.proc.Wait() }()
	select {
	case err := <-done:
		if ws, ok := a.proc.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGTERM {
			t.Fatalf("the turn's process ended with %v, want SIGTERM", err)
		}
	case <-time.After(bound):
		t.Fatal("the turn's process outlived the interrupt")
	}
	s.mu.Lock()
	turnEnded := s.conv.endedLocked(stream.Exit{Code: -1, Signal: "SIGTERM"}, stream.Failure{})
	s.alive = false
	s.mu.Unlock()
	if !turnEnded {
		t.Error("an interrupted turn process ended the conversation")
	}
	refused(t, s.conv.interrupt(), "is starting its turn; try again")
}

// TestTurnsAsksNothing: a process per turn asks no permission, and a failed one ends the
// conversation.
func TestTurnsAsksNothing(t *testing.T) {
	s := newTestSupervisor(t, turnsSpec())
	s.mu.Lock()
	s.snap.State = stream.Running
	ended := s.conv.endedLocked(stream.Exit{Code: 1}, stream.Failure{})
	refusedByAgent := s.conv.endedLocked(stream.Exit{}, stream.Failure{Class: stream.ClassAuth})
	s.mu.Unlock()
	if ended {
		t.Error("a failed turn process counts as a turn's end")
	}
	if refusedByAgent {
		t.Error("a turn process that exited 0 with a failure counts as a turn's end")
	}
	refused(t, s.conv.answer(ctl.Request{Op: ctl.OpApprove}), "asks no permission")
}
