package fakeagent

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"agt/internal/testprog/selfexec"
)

func TestMain(m *testing.M) {
	selfexec.Main(m, Main)
}

func agent(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := selfexec.Command(args...)
	cmd.Dir = t.TempDir()
	return cmd
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

func write(t *testing.T, path, s string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReplayThenExit(t *testing.T) {
	stream := write(t, filepath.Join(t.TempDir(), "s.jsonl"), "{\"a\":1}\n{\"b\":2}\nno newline")
	cmd := agent(t, "-say", "hello", "-replay", stream, "-exit", "3")
	out, err := cmd.Output()
	if code := exitCode(err); code != 3 {
		t.Fatalf("exit code %d (%v), want 3", code, err)
	}
	if want := "hello\n{\"a\":1}\n{\"b\":2}\nno newline"; string(out) != want {
		t.Fatalf("stdout %q, want %q", out, want)
	}
}

func TestReadyHoldThen(t *testing.T) {
	dir := t.TempDir()
	ready, hold := filepath.Join(dir, "ready"), filepath.Join(dir, "hold")
	then := write(t, filepath.Join(dir, "then"), "after the hold\n")
	cmd := agent(t, "-ready", ready, "-hold", hold, "-then", then)
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFile(t, ready)
	b, _ := os.ReadFile(ready)
	if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid != cmd.Process.Pid {
		t.Errorf("ready file holds %q, want the pid %d", b, cmd.Process.Pid)
	}
	write(t, hold, "")
	out, _ := io.ReadAll(stdout)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if string(out) != "after the hold\n" {
		t.Fatalf("stdout %q", out)
	}
}

func TestLifetime(t *testing.T) {
	cmd := agent(t, "-sleep", "-lifetime", "50ms")
	if code := exitCode(cmd.Run()); code != 125 {
		t.Fatalf("exit code %d, want 125 once the lifetime is over", code)
	}
}

func TestIgnoreTerm(t *testing.T) {
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	cmd := agent(t, "-ignore-term", "-ready", ready, "-sleep", "-lifetime", "10s")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	waitFile(t, ready)
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		t.Fatalf("ended on SIGTERM: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	cmd.Process.Kill()
	<-done
}

func TestForkSetsid(t *testing.T) {
	pidsFile := filepath.Join(t.TempDir(), "pids")
	cmd := agent(t, "-fork", "2", "-setsid", "-pids", pidsFile, "-lifetime", "10s")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(pidsFile)
	if err != nil {
		t.Fatal(err)
	}
	pids := strings.Fields(string(b))
	if len(pids) != 2 {
		t.Fatalf("pids file holds %q, want 2 pids", b)
	}
	for _, p := range pids {
		pid, _ := strconv.Atoi(p)
		defer syscall.Kill(pid, syscall.SIGKILL)
		// A grandchild that called setsid leads a session of its own.
		sid, err := unix.Getsid(pid)
		if err != nil {
			t.Fatalf("grandchild %d is gone: %v", pid, err)
		}
		if sid != pid {
			t.Errorf("grandchild %d is in session %d, not its own", pid, sid)
		}
	}
}

// A scripted conversation: a user message starts turn 1, #answer waits for the permission
// answer and plays the allow file.
func TestConverse(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "turn1.jsonl"), "{\"type\":\"control_request\",\"request_id\":\"r1\"}\n#answer\n{\"type\":\"result\"}\n")
	write(t, filepath.Join(dir, "turn1.allow.jsonl"), "{\"type\":\"allowed\"}\n")
	cmd := agent(t, "-converse", dir)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(stdout)
	next := func() string {
		line, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		return strings.TrimSpace(line)
	}
	io.WriteString(stdin, `{"type":"user","message":{"content":"go"}}`+"\n")
	if got := next(); !strings.Contains(got, `"request_id":"r1"`) {
		t.Fatalf("first line %q, want the permission request", got)
	}
	io.WriteString(stdin, `{"type":"control_response","response":{"behavior":"allow"}}`+"\n")
	if got := next(); got != `{"type":"allowed"}` {
		t.Fatalf("after allow: %q", got)
	}
	if got := next(); got != `{"type":"result"}` {
		t.Fatalf("end of turn: %q", got)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	in, _ := os.ReadFile(filepath.Join(dir, "in.jsonl"))
	if n := strings.Count(string(in), "\n"); n != 2 {
		t.Errorf("in.jsonl holds %d lines, want the 2 sent:\n%s", n, in)
	}
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
