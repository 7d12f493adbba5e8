package state

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// inotifies counts this process's inotify instances.
func inotifies(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if link, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.Contains(link, "inotify") {
			n++
		}
	}
	return n
}

// TestFollowLogWoken follows a log woken by the test alone: lines come after each wake, and
// the follower holds no inotify instance of its own (FollowLogFrom, for comparison, does).
func TestFollowLogWoken(t *testing.T) {
	path, w := newLog(t)
	if err := w.Write([]byte(event(1))); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	before := inotifies(t)
	wake := make(chan struct{}, 1)
	lines := make(chan string, 10)
	drained := make(chan struct{}, 10)
	done := make(chan error, 1)
	go func() {
		done <- FollowLogWoken(ctx, path, nil, wake, func(line []byte) error {
			lines <- string(line)
			return nil
		}, nil, func() bool {
			drained <- struct{}{}
			return false
		})
	}()
	next := func(want string) {
		t.Helper()
		select {
		case got := <-lines:
			if got != want {
				t.Fatalf("got %q, want %q", got, want)
			}
		case <-ctx.Done():
			t.Fatalf("no line %q", want)
		}
	}
	next(event(1)) // the first drain needs no wake
	<-drained
	if n := inotifies(t); n != before {
		t.Errorf("FollowLogWoken holds %d inotify instances, want none of its own", n-before)
	}
	w.Write([]byte(event(2)))
	wake <- struct{}{}
	next(event(2))
	<-drained
	// No wake, no drain: the line waits for the next one.
	w.Write([]byte(event(3)))
	select {
	case got := <-lines:
		t.Fatalf("a line came without a wake: %q", got)
	case <-drained:
		t.Fatal("a drain ran without a wake")
	default:
	}
	wake <- struct{}{}
	next(event(3))
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("FollowLogWoken after cancel = %v", err)
	}
	if err := FollowLogWoken(context.Background(), path, nil, nil, nil, nil, nil); err == nil {
		t.Error("FollowLogWoken without a wake channel: no error")
	}

	// The comparison: FollowLogFrom makes an instance of its own.
	// It has ended, and given the instance back, before the test does: the next test counts
	// the instances too.
	ctx2, cancel2 := context.WithCancel(context.Background())
	started := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		FollowLogFrom(ctx2, path, nil, func([]byte) error { return nil }, nil, func() bool {
			select {
			case started <- struct{}{}:
			default:
			}
			return false
		})
	}()
	defer func() { cancel2(); <-ended }()
	<-started
	if n := inotifies(t); n != before+1 {
		t.Errorf("FollowLogFrom holds %d inotify instances, want 1", n-before)
	}
}

// TestServeURL: the URL of a running agt serve, none once its lock is free, and one agt serve
// per run directory.
func TestServeURL(t *testing.T) {
	d, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a, err := d.Create("x")
	if err != nil {
		t.Fatal(err)
	}
	if u := ServeURL(a); u != "" {
		t.Errorf("ServeURL with no agt serve = %q", u)
	}
	unlock, err := d.LockServe()
	if err != nil {
		t.Fatal(err)
	}
	p, _ := d.ServePath(ServeURLFile)
	if err := WriteFileAtomic(p, []byte("http://127.0.0.1:7480/\n")); err != nil {
		t.Fatal(err)
	}
	if u := ServeURL(a); u != "http://127.0.0.1:7480/" {
		t.Errorf("ServeURL = %q", u)
	}
	if _, err := d.LockServe(); !errors.Is(err, ErrServing) {
		t.Errorf("a second LockServe = %v, want ErrServing", err)
	}
	unlock()
	if u := ServeURL(a); u != "" {
		t.Errorf("ServeURL once agt serve let go = %q", u)
	}
	if fi, err := os.Stat(filepath.Join(d.Root, ServeDirName)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("serve directory: %v, %v", fi.Mode(), err)
	}
}
