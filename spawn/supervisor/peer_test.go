package supervisor

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"agt/pids"
	"agt/spawn/ctl"
	"agt/state"
)

// TestPeerHelper is the process at the other end of the connections of TestPeer: it connects
// to $AGT_TEST_PEER_SOCKET (named $AGT_TEST_PEER_COMM, when set) and exits once its stdin
// closes.
func TestPeerHelper(t *testing.T) {
	path := os.Getenv("AGT_TEST_PEER_SOCKET")
	if path == "" {
		t.Skip("run by TestPeer")
	}
	if comm := os.Getenv("AGT_TEST_PEER_COMM"); comm != "" {
		os.WriteFile("/proc/self/comm", []byte(comm), 0)
	}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err == nil {
		err = unix.Connect(fd, &unix.SockaddrUnix{Name: path})
	}
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, os.Stdin)
}

// peerConn starts a helper that connects to a socket of s's, and returns the peer as the
// accept named it, and the helper, whose stdin ends it.
func peerConn(t testing.TB, comm string) (peer, *exec.Cmd, io.Closer) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s")
	ln, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err == nil {
		err = unix.Bind(ln, &unix.SockaddrUnix{Name: path})
	}
	if err == nil {
		err = unix.Listen(ln, 1)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(ln)
	cmd := exec.Command(os.Args[0], "-test.run=^TestPeerHelper$")
	cmd.Env = append(os.Environ(), "AGT_TEST_PEER_SOCKET="+path, "AGT_TEST_PEER_COMM="+comm)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
	nfd, _, err := unix.Accept4(ln, unix.SOCK_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(nfd) })
	p, err := peerOf(nfd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.close)
	if p.pid != cmd.Process.Pid {
		t.Fatalf("peer pid %d, want the helper's %d", p.pid, cmd.Process.Pid)
	}
	return p, cmd, in
}

// TestPeer: the peer named at accept is refused a guarded request from inside this supervisor's
// tree (the test stands for the supervisor: the helper is its child), spared as one of its
// hooks, refused under a process that calls itself a supervisor, and refused once it has
// exited: a zombie not yet reaped, then reaped.
func TestPeer(t *testing.T) {
	s := newTestSupervisor(t, state.Spec{Name: "a"})
	p, cmd, in := peerConn(t, "")
	if !p.alive() {
		t.Fatal("the peer is not alive while it runs")
	}
	if why := s.refusal(p, ctl.OpApprove); !strings.Contains(why, "inside the process tree of a itself") {
		t.Fatalf("refusal %q, want it inside a's own tree", why)
	}
	s.hooks = &hooks{running: map[int]chan unix.WaitStatus{p.pid: nil}}
	if why := s.refusal(p, ctl.OpApprove); why != "" {
		t.Fatalf("a hook refused: %q", why)
	}
	s.hooks = nil
	in.Close()
	for deadline := time.Now().Add(bound); p.alive(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the peer is alive after it exited")
		}
	}
	if why := s.refusal(p, ctl.OpDeny); !strings.Contains(why, "refused agt deny: the process that connected (pid") {
		t.Fatalf("refusal of an exited peer %q", why)
	}
	cmd.Wait()
	if p.alive() {
		t.Fatal("the peer is alive once reaped")
	}

	p, _, _ = peerConn(t, ctl.ProcessName)
	if why := s.refusal(p, ctl.OpApprove); !strings.Contains(why, "inside the process tree of agent") {
		t.Fatalf("refusal %q, want it inside another agent's tree", why)
	}
	if s.guarded(ctl.OpSend) || s.guarded(ctl.OpInterrupt) || !s.guarded(ctl.OpDeny) {
		t.Fatal("guarded: a message to a conversation, or an interrupt; or not a deny")
	}
	s.spec.TTY = true
	if !s.guarded(ctl.OpSend) || !s.guarded(ctl.OpKeys) || !s.guarded(ctl.OpAttach) {
		t.Fatal("typing into a terminal is not guarded")
	}
}

// BenchmarkRefusal is the price of the check of a guarded request (approve, deny, keys): the
// peer's pidfd looked at twice and its ancestors walked up to the supervisor.
func BenchmarkRefusal(b *testing.B) {
	s := newTestSupervisor(b, state.Spec{Name: "a"})
	p, _, _ := peerConn(b, "")
	for b.Loop() {
		if s.refusal(p, ctl.OpApprove) == "" {
			b.Fatal("not refused")
		}
	}
}

// BenchmarkAgentAboveOutside is the walk for a peer outside every agent (a person's agt
// approve): from the test's parent up to the first process, every step read.
func BenchmarkAgentAboveOutside(b *testing.B) {
	s := newTestSupervisor(b, state.Spec{Name: "a"})
	steps := 0
	for pid := os.Getppid(); pid > 0; steps++ {
		p, err := pids.ReadProc(pid)
		if err != nil {
			break
		}
		pid = p.PPID
	}
	b.Logf("%d ancestors", steps)
	for b.Loop() {
		if why := s.agentAbove(os.Getppid()); why != "" {
			b.Fatal(why)
		}
	}
}
