package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"agt/pids"
	"agt/sandbox"
)

// unprivilegedEnv marks the test binary that TestSandboxUnprivileged runs as an ordinary user.
const unprivilegedEnv = "AGT_TEST_UNPRIVILEGED"

// TestSandboxUnprivileged runs the sandbox scripts again as an ordinary user, where bubblewrap
// needs the kernel to allow unprivileged user namespaces. As root, it runs a copy of this test
// binary, with the scripts, as a uid of no account; as an ordinary user, TestScripts already
// runs them as one.
func TestSandboxUnprivileged(t *testing.T) {
	switch {
	case os.Getenv(unprivilegedEnv) != "":
		t.Skip("this is the unprivileged run")
	case os.Geteuid() != 0:
		t.Skip("not root: TestScripts runs the sandbox scripts as this ordinary user already")
	case testing.Short():
		t.Skip("skipped in -short mode")
	}
	t.Parallel() // beside TestScripts, on the other core
	if _, err := sandbox.FindBwrap(); err != nil {
		t.Skip(err)
	}
	uid := freeUID(t)
	cred := &syscall.Credential{Uid: uid, Gid: uid, Groups: []uint32{}}
	if err := sandbox.Probe(context.Background(), sandbox.NetOn, cred); err != nil {
		t.Skipf("uid %d cannot have a sandbox here, so the unprivileged run cannot happen: %v", uid, err)
	}

	// A directory the user owns, with a copy of this binary and the sandbox scripts.
	dir, err := os.MkdirTemp("", "agt-unprivileged-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	scripts, err := filepath.Glob(filepath.Join("testdata", "script", "sandbox_*.txtar"))
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no sandbox scripts: %v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	copyFile(t, exe, filepath.Join(dir, "agt.test"), 0o755)
	for _, s := range scripts {
		copyFile(t, s, filepath.Join(dir, s), 0o644)
	}
	os.MkdirAll(filepath.Join(dir, "home"), 0o700)
	if err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(uid), int(uid))
	}); err != nil {
		t.Fatal(err)
	}

	// Whatever happens, nothing of the user's is left running.
	t.Cleanup(func() { killUID(uid) })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(dir, "agt.test"), "-test.run", "^TestScripts$", "-test.v")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Join(dir, "home"), "GORACE=atexit_sleep_ms=0", unprivilegedEnv + "=1"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	out, err := cmd.CombinedOutput()
	t.Logf("the sandbox scripts as uid %d:\n%s", uid, out)
	if err != nil {
		t.Fatalf("the sandbox scripts failed as uid %d: %v", uid, err)
	}
	// Every script ran, none skipped: a run that skipped them all would prove nothing.
	if n := strings.Count(string(out), "--- PASS: TestScripts/sandbox_"); n != len(scripts) {
		t.Fatalf("%d of %d sandbox scripts passed as uid %d", n, len(scripts), uid)
	}
	if strings.Contains(string(out), "--- SKIP") {
		t.Fatalf("a sandbox script skipped as uid %d", uid)
	}
}

// freeUID returns a uid that no account has.
func freeUID(t *testing.T) uint32 {
	for id := 61000; id < 62000; id++ {
		if _, err := user.LookupId(strconv.Itoa(id)); err != nil {
			return uint32(id)
		}
	}
	t.Skip("no free uid in 61000-61999")
	return 0
}

// killUID SIGKILLs every process of uid, until none is left.
func killUID(uid uint32) {
	killWhere(func(p pids.Proc) bool {
		var st syscall.Stat_t
		return syscall.Stat(fmt.Sprintf("/proc/%d", p.PID), &st) == nil && st.Uid == uid
	})
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err == nil {
		err = os.MkdirAll(filepath.Dir(to), 0o755)
	}
	if err == nil {
		err = os.WriteFile(to, b, mode)
	}
	if err != nil {
		t.Fatal(err)
	}
}
