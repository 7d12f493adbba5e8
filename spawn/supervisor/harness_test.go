package supervisor

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"agt/pids"
	"agt/spawn/ctl"
	"agt/state"
)

// The conversations are tested as the supervisor drives them, with a test in the agent's
// place: a supervisor of a record in a temporary run directory, whose start opens the real
// pipes (or terminal) of its conversation and hands the agent's ends to the test, which reads
// what agt writes to the agent and writes what the agent says. A process that stands for the
// agent (a sleep in a session of its own) is what signals reach. The clock and the timers of
// the supervisor are the test's.

// bound is how long a test waits for a condition: generous, for a loaded machine; a passing
// test does not wait for it.
const bound = 20 * time.Second

// newTestSupervisor is a supervisor of an agent recorded as spec, with no process of its own.
func newTestSupervisor(t testing.TB, spec state.Spec) *supervisor {
	t.Helper()
	d, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if spec.Name == "" {
		spec.Name = "a"
	}
	if spec.Cwd == "" {
		spec.Cwd = d.Root
	}
	a, err := d.Create(spec.Name)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.WriteSpec(&spec); err != nil {
		t.Fatal(err)
	}
	lock, err := a.Lock()
	if err != nil {
		t.Fatal(err)
	}
	log, last, err := state.OpenLog(a.Path(state.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	s := newSupervisor(d, a, &spec, lock, log, last, os.Getpid())
	s.after = func(time.Duration, func()) *time.Timer {
		t.Fatal("a timer nobody expected")
		return nil
	}
	t.Cleanup(func() {
		// Once the agents of the test are gone and read to the end: the status written,
		// nothing left to write.
		s.mu.Lock()
		s.syncStatusLocked(true)
		s.log.Close()
		s.mu.Unlock()
		lock.Close()
	})
	return s
}

// testAgent is the test in the agent's place, for one start.
type testAgent struct {
	t      *testing.T
	s      *supervisor
	stdin  *bufio.Reader // what agt writes to the agent (nil when its stdin is no pipe)
	inFile *os.File
	stdout *os.File // what the agent writes
	child0 *os.File // the agent's stdin, whatever it is
	stderr *os.File // what the agent writes on stderr
	tty    *os.File // the agent's terminal, for a terminal agent
	g      *generation
	begun  chan error    // what begin returned
	done   chan struct{} // closed once begin has returned
	proc   *exec.Cmd     // the process that stands for the agent
}

// startAgent starts the agent of s as a start would (plan, open, startedLocked, the record
// of the start, begin), with the test in its place. begin runs on: its answer is in begun.
func startAgent(t *testing.T, s *supervisor, resumed bool, prompt *string) *testAgent {
	t.Helper()
	return startAgentAs(t, s, resumed, prompt, "exec sleep 60")
}

// startAgentAs is startAgent with the process that stands for the agent running sh -c script.
func startAgentAs(t *testing.T, s *supervisor, resumed bool, prompt *string, script string) *testAgent {
	t.Helper()
	p := s.conv.plan(resumed, prompt)
	fds, err := s.conv.open(p, os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	proc := exec.Command("sh", "-c", script)
	proc.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := proc.Start(); err != nil {
		t.Fatal(err)
	}
	leader, err := pids.Of(proc.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	resume := ""
	if resumed {
		resume = s.status.SessionID
	}
	s.mu.Lock()
	s.conv.startedLocked(fds, p, resume)
	s.leader, s.instance = leader, "test"
	s.runningLocked(leader.PID, p.argv, p, s.now())
	s.mu.Unlock()
	a := &testAgent{t: t, s: s, begun: make(chan error, 1), done: make(chan struct{}), proc: proc,
		g: &generation{outR: fds.out, errR: fds.err, started: time.Now()}}
	if fds.ctty {
		a.tty = fds.child[0]
	} else {
		a.stdout, a.stderr, a.child0 = fds.child[1], fds.child[2], fds.child[0]
		if fds.in != nil {
			a.inFile = fds.child[0]
			a.stdin = bufio.NewReader(fds.child[0])
		}
	}
	t.Cleanup(func() {
		// The agent goes, and its output is read to its end.
		syscall.Kill(-proc.Process.Pid, syscall.SIGKILL)
		proc.Wait()
		for _, f := range fds.child {
			f.Close()
		}
		waitClosed(t, "begin to return", a.done)
		waitClosed(t, "the readers to finish", a.g.readers)
	})
	go func() {
		err := s.conv.begin(a.g, fds)
		a.begun <- err
		close(a.done)
	}()
	return a
}

// waitClosed waits for ch to close, within bound.
func waitClosed(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(bound):
		t.Errorf("timed out waiting for %s", what)
	}
}

// say writes lines to the agent's stdout.
func (a *testAgent) say(lines ...string) {
	a.t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(a.stdout, l+"\n"); err != nil {
			a.t.Fatal(err)
		}
	}
}

// sayErr writes lines to the agent's stderr.
func (a *testAgent) sayErr(lines ...string) {
	a.t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(a.stderr, l+"\n"); err != nil {
			a.t.Fatal(err)
		}
	}
}

// hangUp closes the agent's stdout and stderr: its output ends.
func (a *testAgent) hangUp() {
	a.stdout.Close()
	a.stderr.Close()
}

// heard reads the next line agt wrote to the agent's stdin.
func (a *testAgent) heard() string {
	a.t.Helper()
	a.inFile.SetReadDeadline(time.Now().Add(bound))
	line, err := a.stdin.ReadString('\n')
	if err != nil {
		a.t.Fatalf("reading the agent's stdin: %v (read %q)", err, line)
	}
	return line
}

// heardEOF fails unless agt closes the agent's stdin, with nothing more written.
func (a *testAgent) heardEOF() {
	a.t.Helper()
	a.inFile.SetReadDeadline(time.Now().Add(bound))
	if line, err := a.stdin.ReadString('\n'); err != io.EOF {
		a.t.Fatalf("stdin: read %q, %v; want the end of it", line, err)
	}
}

// heardNothing fails when agt wrote to the agent's stdin within a moment.
func (a *testAgent) heardNothing() {
	a.t.Helper()
	a.inFile.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if line, err := a.stdin.ReadString('\n'); err == nil || line != "" {
		a.t.Fatalf("agt wrote %q", line)
	}
}

// waitState waits until the supervisor has the agent in state (and reason, when not "").
func waitState(t *testing.T, s *supervisor, state, reason string) {
	t.Helper()
	waitFor(t, state+" "+reason, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.snap.State == state && (reason == "" || s.snap.Reason == reason)
	})
}

// waitFor polls cond until it holds, within bound.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(bound); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// events returns the events of the log whose type is typ ("" for all).
func events(t *testing.T, s *supervisor, typ string) []gjson.Result {
	t.Helper()
	s.mu.Lock()
	s.flushLocked()
	s.mu.Unlock()
	b, err := os.ReadFile(s.a.Path(state.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	var out []gjson.Result
	for line := range bytes.Lines(b) {
		if r := gjson.ParseBytes(line); typ == "" || r.Get("type").Str == typ {
			out = append(out, r)
		}
	}
	return out
}

// waitEvent waits until the log holds an event of type typ for which match holds (nil: any),
// and returns it.
func waitEvent(t *testing.T, s *supervisor, typ string, match func(gjson.Result) bool) gjson.Result {
	t.Helper()
	var found gjson.Result
	waitFor(t, "a "+typ+" event", func() bool {
		for _, ev := range events(t, s, typ) {
			if match == nil || match(ev) {
				found = ev
				return true
			}
		}
		return false
	})
	return found
}

// refused fails unless r is a refusal that says want.
func refused(t *testing.T, r ctl.Reply, want string) {
	t.Helper()
	if r.Error == "" || !strings.Contains(r.Error, want) {
		t.Fatalf("reply %+v, want a refusal saying %q", r, want)
	}
}

// accepted fails unless r is no refusal.
func accepted(t *testing.T, r ctl.Reply) {
	t.Helper()
	if r.Error != "" {
		t.Fatalf("refused: %s", r.Error)
	}
}

// fakeTimers stands in for time.AfterFunc: a test fires what was set, when it says.
type fakeTimers struct {
	mu  sync.Mutex
	fns []func()
	ds  []time.Duration
}

func (f *fakeTimers) after(d time.Duration, fn func()) *time.Timer {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fns, f.ds = append(f.fns, fn), append(f.ds, d)
	return nil
}

// fire runs the timers set so far, and says after how long each was due.
func (f *fakeTimers) fire() []time.Duration {
	f.mu.Lock()
	fns, ds := f.fns, f.ds
	f.fns, f.ds = nil, nil
	f.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
	return ds
}

// pendingIDs are the ids of the permission requests the supervisor holds, sorted.
func (s *supervisor) pendingIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.perms))
	for id := range s.perms {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// given is all the agent's stdin holds, when it is a file (the prompt) or /dev/null.
func (a *testAgent) given() string {
	a.t.Helper()
	b, err := io.ReadAll(a.child0)
	if err != nil {
		a.t.Fatal(err)
	}
	return string(b)
}
