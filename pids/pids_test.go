package pids

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// start starts cmd and, when the test ends, kills it (its whole group when it
// has its own session) and waits for it.
func start(t *testing.T, cmd *exec.Cmd) Identity {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		if cmd.SysProcAttr != nil && cmd.SysProcAttr.Setsid {
			unix.Kill(-pid, unix.SIGKILL)
		}
		cmd.Process.Kill()
		cmd.Wait()
	})
	id, err := Of(pid)
	if err != nil {
		t.Fatalf("identity of started process: %v", err)
	}
	return id
}

// waitFor polls cond every 10 ms for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// uniqueEnv returns an environment entry no other process carries.
func uniqueEnv() string {
	return fmt.Sprintf("AGT_PIDS_TEST=%d-%d", os.Getpid(), time.Now().UnixNano())
}

func sleeper() *exec.Cmd { return exec.Command("sleep", "60") }

// startWithEnv starts a sleep carrying kv in its environment. The environment
// is readable only once execve has set up the new stack, a moment after
// Start returns, so it waits for that.
func startWithEnv(t *testing.T, kv string) Identity {
	t.Helper()
	cmd := sleeper()
	cmd.Env = append(os.Environ(), kv)
	id := start(t, cmd)
	waitFor(t, "the environment of the new process", func() bool { return HasEnv(id.PID, kv) })
	return id
}

// exitSignal waits for cmd and returns the signal that killed it.
func exitSignal(t *testing.T, cmd *exec.Cmd) syscall.Signal {
	t.Helper()
	cmd.Wait()
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		t.Fatalf("process was not killed by a signal: %v", cmd.ProcessState)
	}
	return ws.Signal()
}

func TestStringParse(t *testing.T) {
	boot, err := BootID()
	if err != nil {
		t.Fatal(err)
	}
	id := Identity{PID: 1234, Start: 987654321, Boot: boot}
	s := id.String()
	if want := "1234 987654321 " + boot; s != want {
		t.Fatalf("String() = %q, want %q", s, want)
	}
	for _, in := range []string{s, s + "\n"} {
		got, err := Parse(in)
		if err != nil || got != id {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, id)
		}
	}
}

func TestParseBad(t *testing.T) {
	for _, in := range []string{
		"",
		"\n",
		"1234",
		"1234 5678",
		"1234 5678 ",
		"1234 5678 boot extra",
		"1234  5678 boot",
		" 1234 5678 boot",
		"1234 5678 boot\n\n",
		"1234 5678 boot\r\n",
		"x 5678 boot",
		"0 5678 boot",
		"-1 5678 boot",
		"1234 -5 boot",
		"1234 5.5 boot",
		"1234 5678 bo\x00ot",
	} {
		if id, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) = %v, want an error", in, id)
		}
	}
}

func TestParseStat(t *testing.T) {
	// A command name holding spaces and parentheses, then fields 3 to 52.
	fields := []string{"S", "7", "8", "9"}
	for n := 7; n <= 52; n++ {
		fields = append(fields, fmt.Sprint(n*100))
	}
	line := "42 (a) b (c)) " + strings.Join(fields, " ") + "\n"
	p, err := parseStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	want := Proc{State: 'S', PPID: 7, PGID: 8, SID: 9, Comm: "a) b (c)", Identity: Identity{Start: 2200}, CPU: 1400 + 1500 + 1600 + 1700}
	if p != want {
		t.Errorf("parseStat = %+v, want %+v", p, want)
	}
	for _, bad := range []string{"", "42 (x", "42 (x) S 1 2 3", "42 (x) S a 8 9 " + strings.Join(fields[4:], " ")} {
		if _, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("parseStat(%q) succeeded, want an error", bad)
		}
	}
}

func TestOfSelf(t *testing.T) {
	id, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	boot, _ := BootID()
	if id.PID != os.Getpid() || id.Start == 0 || id.Boot != boot {
		t.Errorf("Self() = %v; want pid %d, a start time, boot %s", id, os.Getpid(), boot)
	}
	if !id.Alive() {
		t.Errorf("%v is not alive", id)
	}
}

func TestScanFindsSelf(t *testing.T) {
	procs, err := Scan()
	if err != nil {
		t.Fatal(err)
	}
	self, _ := Self()
	i := slices.IndexFunc(procs, func(p Proc) bool { return p.PID == self.PID })
	if i < 0 {
		t.Fatalf("Scan found %d processes, not this one", len(procs))
	}
	p := procs[i]
	if p.Identity != self || p.PPID != os.Getppid() || p.PGID != unix.Getpgrp() {
		t.Errorf("Scan: %+v; want %v, ppid %d, pgid %d", p, self, os.Getppid(), unix.Getpgrp())
	}
	if sid, _ := unix.Getsid(0); p.SID != sid {
		t.Errorf("Scan: sid %d, want %d", p.SID, sid)
	}
}

func TestZombieIsGone(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Wait() })
	pid := cmd.Process.Pid
	var zombie Proc
	waitFor(t, "a zombie", func() bool {
		p, err := readProc(pid)
		zombie = p
		return err == nil && p.State == 'Z'
	})

	if _, err := Of(pid); !errors.Is(err, ErrGone) {
		t.Errorf("Of(zombie) error = %v, want ErrGone", err)
	}
	if zombie.Alive() {
		t.Errorf("zombie %v is alive", zombie.Identity)
	}
	if err := Signal(zombie.Identity, syscall.SIGTERM); !errors.Is(err, ErrGone) {
		t.Errorf("Signal(zombie) = %v, want ErrGone", err)
	}
	ids, err := Tree{Root: os.Getpid()}.Members()
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(ids, func(id Identity) bool { return id.PID == pid }) {
		t.Errorf("zombie %d is a tree member", pid)
	}

	cmd.Wait()
	if _, err := Of(pid); !errors.Is(err, ErrGone) {
		t.Errorf("Of(reaped) error = %v, want ErrGone", err)
	}
}

// A recorded identity that does not match the live process exactly must
// never be signalled.
func TestSignalNeverWrongIdentity(t *testing.T) {
	cmd := sleeper()
	id := start(t, cmd)

	wrong := map[string]Identity{
		"later start":   {PID: id.PID, Start: id.Start + 1, Boot: id.Boot},
		"earlier start": {PID: id.PID, Start: id.Start - 1, Boot: id.Boot},
		"other boot":    {PID: id.PID, Start: id.Start, Boot: "00000000-0000-0000-0000-000000000000"},
		"no boot":       {PID: id.PID, Start: id.Start},
	}
	for name, w := range wrong {
		if err := Signal(w, syscall.SIGTERM); !errors.Is(err, ErrGone) {
			t.Errorf("%s: Signal = %v, want ErrGone", name, err)
		}
		if w.Alive() {
			t.Errorf("%s: %v is alive", name, w)
		}
	}
	// PIDs that kill(2) would read as "group" or "everything": signal 0 only.
	for _, pid := range []int{0, -1} {
		if err := Signal(Identity{PID: pid, Start: id.Start, Boot: id.Boot}, 0); !errors.Is(err, ErrGone) {
			t.Errorf("pid %d: Signal = %v, want ErrGone", pid, err)
		}
	}

	if !id.Alive() {
		t.Fatalf("%v died", id)
	}
	// A SIGTERM sent above would already have decided the exit signal.
	if err := Signal(id, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if sig := exitSignal(t, cmd); sig != syscall.SIGKILL {
		t.Errorf("process died of %v, want %v", sig, syscall.SIGKILL)
	}
}

func TestSignal(t *testing.T) {
	cmd := sleeper()
	id := start(t, cmd)
	if err := Signal(id, 0); err != nil {
		t.Errorf("Signal(%v, 0) = %v", id, err)
	}
	if err := Signal(id, syscall.SIGTERM); err != nil {
		t.Fatalf("Signal(%v, SIGTERM) = %v", id, err)
	}
	if sig := exitSignal(t, cmd); sig != syscall.SIGTERM {
		t.Errorf("process died of %v, want %v", sig, syscall.SIGTERM)
	}
	if err := Signal(id, syscall.SIGTERM); !errors.Is(err, ErrGone) {
		t.Errorf("Signal after exit = %v, want ErrGone", err)
	}
	if id.Alive() {
		t.Errorf("%v is alive after exit", id)
	}
}

func TestHasEnvExact(t *testing.T) {
	kv := uniqueEnv()
	id := startWithEnv(t, kv)
	key, value, _ := strings.Cut(kv, "=")
	for _, c := range []struct {
		kv   string
		want bool
	}{
		{kv, true},
		{kv[:len(kv)-1], false},
		{kv + "0", false},
		{kv[1:], false},
		{key, false},
		{key + "=", false},
		{value, false},
		{"", false},
	} {
		if got := HasEnv(id.PID, c.kv); got != c.want {
			t.Errorf("HasEnv(%q) = %v, want %v", c.kv, got, c.want)
		}
	}
	if HasEnv(0, kv) || HasEnv(-1, kv) {
		t.Error("HasEnv holds for a pid that is no process")
	}
}

// agentTree starts a shell in its own session that forks a sleep, both with
// kv in their environment, and returns the identities of the shell (the
// leader) and of the sleep.
func agentTree(t *testing.T, kv string) (*exec.Cmd, Identity, Identity) {
	t.Helper()
	cmd := exec.Command("sh", "-c", "sleep 60 & wait")
	cmd.Env = append(os.Environ(), kv)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	leader := start(t, cmd)
	var child Identity
	waitFor(t, "the shell's child", func() bool {
		procs, err := Scan()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range procs {
			// The forked shell execs sleep: wait until it carries kv.
			if p.PPID == leader.PID && HasEnv(p.PID, kv) && p.State != 'Z' {
				if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p.PID)); err == nil && string(b) == "sleep\n" {
					child = p.Identity
					return true
				}
			}
		}
		return false
	})
	return cmd, leader, child
}

func members(t *testing.T, tr Tree) []Identity {
	t.Helper()
	ids, err := tr.Members()
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func TestTreeMembers(t *testing.T) {
	kv := uniqueEnv()
	_, leader, child := agentTree(t, kv)
	// Same environment, but in the test's own group and session.
	outsider := startWithEnv(t, kv)
	group := []Identity{leader, child}
	self := os.Getpid()
	stale := Identity{PID: leader.PID, Start: leader.Start + 1, Boot: leader.Boot}

	for _, c := range []struct {
		name    string
		tree    Tree
		want    []Identity // exactly these
		include []Identity // at least these
	}{
		{"env sweep", Tree{Env: kv}, []Identity{leader, child, outsider}, nil},
		{"descendants", Tree{Root: self}, nil, []Identity{leader, child, outsider}},
		{"walked descendants", Tree{Root: self, Walk: true}, nil, []Identity{leader, child, outsider}},
		{"walked, spared", Tree{Root: self, Walk: true, Spared: func() []int { return []int{leader.PID, outsider.PID} }}, nil, nil},
		{"group only", Tree{Leader: leader, Group: leader.PID, Root: self, Env: kv, GroupOnly: true}, group, nil},
		{"group with leader alive", Tree{Leader: leader, Group: leader.PID}, group, nil},
		{"reused leader, no evidence", Tree{Leader: stale, Group: leader.PID, GroupOnly: true}, nil, nil},
		{"reused leader, env", Tree{Leader: stale, Group: leader.PID, Env: kv, GroupOnly: true}, group, nil},
		{"reused leader, descendants", Tree{Leader: stale, Group: leader.PID, Root: self, GroupOnly: true}, group, nil},
		{"union", Tree{Leader: leader, Group: leader.PID, Root: self, Env: kv}, nil, []Identity{leader, child, outsider}},
	} {
		got := members(t, c.tree)
		if c.name == "walked, spared" {
			// Spared with all below them: the leader's child goes too.
			for _, id := range []Identity{leader, child, outsider} {
				if slices.Contains(got, id) {
					t.Errorf("%s: Members = %v, holds spared %v", c.name, got, id)
				}
			}
			continue
		}
		slices.SortFunc(c.want, func(a, b Identity) int { return a.PID - b.PID })
		if c.include == nil && !slices.Equal(got, c.want) {
			t.Errorf("%s: Members = %v, want %v", c.name, got, c.want)
		}
		for _, id := range c.include {
			if !slices.Contains(got, id) {
				t.Errorf("%s: Members = %v, missing %v", c.name, got, id)
			}
		}
		if slices.ContainsFunc(got, func(id Identity) bool { return id.PID == self }) {
			t.Errorf("%s: Members holds the calling process", c.name)
		}
	}
}

func TestTreeExcludesSelf(t *testing.T) {
	self, _ := Self()
	got := members(t, Tree{Leader: self, Group: unix.Getpgrp(), Root: os.Getppid()})
	if slices.ContainsFunc(got, func(id Identity) bool { return id.PID == self.PID }) {
		t.Errorf("Members = %v, holds the calling process", got)
	}
}

func TestTreeSignal(t *testing.T) {
	kv := uniqueEnv()
	cmd, leader, child := agentTree(t, kv)
	outsider := startWithEnv(t, kv)

	n, err := Tree{Leader: leader, Group: leader.PID, GroupOnly: true}.Signal(syscall.SIGKILL)
	if err != nil || n != 2 {
		t.Fatalf("Signal = %d, %v; want 2, nil", n, err)
	}
	if sig := exitSignal(t, cmd); sig != syscall.SIGKILL {
		t.Errorf("leader died of %v, want %v", sig, syscall.SIGKILL)
	}
	waitFor(t, "the leader's child to die", func() bool { return !child.Alive() })
	if !outsider.Alive() {
		t.Errorf("process outside the group was killed")
	}
	n, err = Tree{Leader: leader, Group: leader.PID, GroupOnly: true}.Signal(syscall.SIGKILL)
	if err != nil || n != 0 {
		t.Errorf("second Signal = %d, %v; want 0, nil", n, err)
	}
}

func BenchmarkScan(b *testing.B) {
	for b.Loop() {
		if _, err := Scan(); err != nil {
			b.Fatal(err)
		}
	}
}

// EPERM from a signal is an error, never evidence either way (R3): not ErrGone, which would
// let a caller write the process off, and not success, which would count it alive.
func TestSignalEPERMIsNoEvidence(t *testing.T) {
	self, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	err = sent(self, unix.EPERM)
	if err == nil || errors.Is(err, ErrGone) {
		t.Fatalf("sent(EPERM) = %v, want an error that is not ErrGone", err)
	}
	if !errors.Is(err, unix.EPERM) {
		t.Fatalf("sent(EPERM) = %v, want it to wrap EPERM", err)
	}
	if err := sent(self, unix.ESRCH); !errors.Is(err, ErrGone) {
		t.Fatalf("sent(ESRCH) = %v, want ErrGone", err)
	}
}

// A process whose parent exits while a walk reads the children links moves to the root's
// list, perhaps after the walk read it: the walk must not then call the tree empty while
// that process lives (the root here is a subreaper, as a supervisor is).
func TestTreeWalkSeesReparented(t *testing.T) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Skipf("cannot become a subreaper: %v", err)
	}
	defer unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	tree := Tree{Root: os.Getpid(), Walk: true}
	for try := 0; try < 20; try++ {
		cmd := exec.Command("sh", "-c", "sleep 30 & echo $!; exec sleep 0.02")
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var orphan int
		if _, err := fmt.Fscan(out, &orphan); err != nil {
			t.Fatal(err)
		}
		for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); {
			ids, err := tree.Members()
			if err != nil {
				t.Fatal(err)
			}
			if len(ids) == 0 && processAlive(orphan) {
				syscall.Kill(orphan, syscall.SIGKILL)
				t.Fatalf("try %d: the walk found no member while pid %d lives", try, orphan)
			}
		}
		syscall.Kill(orphan, syscall.SIGKILL)
		cmd.Wait()
		var ws syscall.WaitStatus
		syscall.Wait4(orphan, &ws, 0, nil) // adopted: ours to reap
	}
}

// processAlive reports whether pid runs and is no zombie.
func processAlive(pid int) bool {
	p, err := readProc(pid)
	return err == nil && !p.zombie()
}

// CPU counts a busy process's time on a processor, and refuses a process that is not the one
// the identity names.
func TestCPU(t *testing.T) {
	self, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	before, err := CPU(self)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if now, _ := CPU(self); now > before {
			break
		}
	}
	if now, _ := CPU(self); now <= before {
		t.Errorf("CPU stayed at %d ticks while the process spun", now)
	}
	other := self
	other.Start++
	if _, err := CPU(other); !errors.Is(err, ErrGone) {
		t.Errorf("CPU of another start: %v, want ErrGone", err)
	}
}
