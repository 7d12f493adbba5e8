package state

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestHelperStatusWriter is not a test: TestStatusSurvivesKill runs the test binary with
// STATE_TEST_WRITER set, and this loop rewrites the status until it is killed.
func TestHelperStatusWriter(t *testing.T) {
	dir := os.Getenv("STATE_TEST_WRITER")
	if dir == "" {
		t.Skip("helper process for TestStatusSurvivesKill")
	}
	a := &Agent{Name: "w", Dir: dir}
	l, err := a.Lock()
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "started"), nil, 0o600)
	for i := 0; ; i++ {
		st := &Status{Name: "w", State: "running", LastSeq: int64(i), Reason: string(make([]byte, i%4096))}
		if err := l.WriteStatus(st); err != nil {
			t.Fatal(err)
		}
	}
}

// TestStatusSurvivesKill SIGKILLs a process in a tight status-write loop at random moments:
// status.json always parses (fault matrix row 10).
func TestStatusSurvivesKill(t *testing.T) {
	rounds := 20
	if testing.Short() {
		rounds = 5
	}
	for round := 0; round < rounds; round++ {
		dir := t.TempDir()
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperStatusWriter$")
		cmd.Env = append(os.Environ(), "STATE_TEST_WRITER="+dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		// Wait until the writer has written at least once, then kill it at a random moment.
		deadline := time.Now().Add(10 * time.Second)
		for {
			if _, err := os.Stat(filepath.Join(dir, StatusFile)); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("writer never wrote a status")
			}
			time.Sleep(time.Millisecond)
		}
		time.Sleep(time.Duration(rand.IntN(20_000)) * time.Microsecond) // the fault's timing, not a wait
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()

		b, err := os.ReadFile(filepath.Join(dir, StatusFile))
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		var st Status
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatalf("round %d: status.json does not parse after kill -9: %v\n%.200q", round, err, b)
		}
		a := &Agent{Name: "w", Dir: dir}
		if _, err := a.ReadStatus(); err != nil {
			t.Fatalf("round %d: ReadStatus after kill -9: %v", round, err)
		}
	}
}
