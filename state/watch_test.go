package state

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// inotifyInstances counts this process's inotify instances, as the kernel sees them.
func inotifyInstances(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && l == "anon_inode:inotify" {
			n++
		}
	}
	return n
}

// TestFollowManyLogsOneInstance: following the logs of many agents at once takes one inotify
// instance of the user's few, and gives it back after the last (one tail -f over 250 agents
// once held 117 of 128).
func TestFollowManyLogsOneInstance(t *testing.T) {
	before := inotifyInstances(t)
	const agents = 50
	var fs []*follower
	var paths []string
	for i := 0; i < agents; i++ {
		dir := filepath.Join(t.TempDir(), fmt.Sprintf("a%d", i))
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, EventsFile)
		appendTo(t, path, event(1))
		f := follow(t, path, nil)
		f.drained(t)
		fs, paths = append(fs, f), append(paths, path)
	}
	if n := inotifyInstances(t) - before; n != 1 {
		t.Errorf("following %d logs holds %d inotify instances, want 1", agents, n)
	}
	// Each still wakes for its own log.
	for i, f := range fs {
		appendTo(t, paths[i], event(2))
		f.next(t, false)
		if got := f.take(t); len(got) != 2 {
			t.Errorf("follower %d read %q", i, got)
		}
	}
	for _, f := range fs {
		f.answer <- true
		if err := <-f.result; err != nil {
			t.Fatal(err)
		}
	}
	if n := inotifyInstances(t) - before; n != 0 {
		t.Errorf("after the last follower, %d inotify instances are held", n)
	}
}

// TestWatchDirWakesItsOwn: a change in one directory wakes its followers, not another's.
func TestWatchDirWakesItsOwn(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	chA, stopA, err := watchDir(a)
	if err != nil || chA == nil {
		t.Fatalf("watchDir: %v", err)
	}
	defer stopA()
	chB, stopB, err := watchDir(b)
	if err != nil {
		t.Fatal(err)
	}
	defer stopB()
	appendTo(t, filepath.Join(a, "x"), "x")
	select {
	case <-chA:
	case <-time.After(10 * time.Second):
		t.Fatal("no wake for a change in its directory")
	}
	select {
	case <-chB:
		t.Error("a change in another directory woke it")
	default:
	}
	if _, _, err := watchDir(filepath.Join(a, "missing")); err == nil {
		t.Error("watchDir of a missing directory succeeded")
	}
}
