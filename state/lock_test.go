package state

import (
	"errors"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

func TestLock(t *testing.T) {
	a := newAgent(t, "x")
	if a.Supervised() {
		t.Error("Supervised before any lock file exists")
	}
	l, err := a.Lock()
	if err != nil {
		t.Fatal(err)
	}
	if !a.Supervised() {
		t.Error("Supervised = false while the lock is held")
	}
	if err := l.Check(); err != nil {
		t.Errorf("Check: %v", err)
	}
	_, err = a.Lock()
	if !errors.Is(err, ErrLocked) {
		t.Errorf("second Lock = %v, want ErrLocked", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if a.Supervised() {
		t.Error("Supervised = true after Close")
	}
	if fi, err := os.Stat(a.Path(LockFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("lock file: %v, %v", fi, err)
	}
	l2, err := a.Lock()
	if err != nil {
		t.Fatalf("Lock after Close: %v", err)
	}
	l2.Close()
}

func TestLockCloseOnExec(t *testing.T) {
	a := newAgent(t, "x")
	l, err := a.Lock()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	flags, err := unix.FcntlInt(uintptr(l.fd), unix.F_GETFD, 0)
	if err != nil {
		t.Fatal(err)
	}
	if flags&unix.FD_CLOEXEC == 0 {
		t.Error("lock descriptor lacks FD_CLOEXEC")
	}
}

func TestLockMissingAgent(t *testing.T) {
	a := newAgent(t, "x")
	if err := os.Remove(a.Dir); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Lock(); !errors.Is(err, ErrNoAgent) {
		t.Errorf("Lock of a removed agent = %v, want ErrNoAgent", err)
	}
}

func TestLockCheckSeesRemovedDir(t *testing.T) {
	d := newDir(t)
	a, err := d.Create("x")
	if err != nil {
		t.Fatal(err)
	}
	l, err := a.Lock()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := a.Remove(); err != nil {
		t.Fatal(err)
	}
	if err := l.Check(); err == nil {
		t.Error("Check passed after the directory was removed")
	}
	// A new agent of the same name is another directory: the old lock must not pass for it.
	b, err := d.Create("x")
	if err != nil {
		t.Fatal(err)
	}
	lb, err := b.Lock()
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Close()
	if err := l.Check(); err == nil {
		t.Error("Check passed after the directory was replaced")
	}
	if err := lb.Check(); err != nil {
		t.Errorf("Check of the new lock: %v", err)
	}
}

func BenchmarkSupervised(b *testing.B) {
	a := newAgent(b, "x")
	l, err := a.Lock()
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	for b.Loop() {
		if !a.Supervised() {
			b.Fatal("not supervised")
		}
	}
}
