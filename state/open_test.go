package state

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// within runs fn and fails the test if it has not returned after a few seconds: a regression
// that blocks on a FIFO fails the test instead of hanging the suite (the blocked goroutine is
// left behind; the test binary ends anyway).
func within(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s still blocked after 5s", what)
	}
}

// TestRunDirLinksRefused: every file of an agent's directory that agt opens is refused when
// it is a symbolic link, with an error that says so, and the link's target is neither created
// nor written (R27, R28).
func TestRunDirLinksRefused(t *testing.T) {
	a := newAgent(t, "x")
	outside := t.TempDir()
	link := func(file string) string {
		t.Helper()
		target := filepath.Join(outside, file)
		os.Remove(a.Path(file))
		if err := os.Symlink(target, a.Path(file)); err != nil {
			t.Fatal(err)
		}
		return target
	}
	refused := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("%s through a link: %v, want an error that names the link", what, err)
		}
	}
	for _, tc := range []struct {
		file string
		open func() error
	}{
		{EventsFile, func() error { _, _, err := OpenLog(a.Path(EventsFile)); return err }},
		{EventsFile, func() error { _, _, err := ReadLog(a.Path(EventsFile), nil); return err }},
		{EventsFile, func() error {
			_, err := ReadLogBack(a.Path(EventsFile), func([]byte) bool { return true })
			return err
		}},
		{EventsFile, func() error {
			_, err := LastLine(a.Path(EventsFile), 0, func([]byte) bool { return true })
			return err
		}},
		{EventsFile, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return FollowLogFrom(ctx, a.Path(EventsFile), nil, func([]byte) error { return nil },
				nil, func() bool { return true })
		}},
		{LockFile, func() error { _, err := a.Lock(); return err }},
		{SpecFile, func() error { _, err := a.ReadSpec(); return err }},
		{AgentPIDFile, func() error { _, err := a.ReadPID(AgentPIDFile); return err }},
		{StdoutLog, func() error {
			f, err := OpenFile(a.Path(StdoutLog), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
			if err == nil {
				f.Close()
			}
			return err
		}},
	} {
		target := link(tc.file)
		refused(tc.file, tc.open())
		if _, err := os.Lstat(target); err == nil {
			t.Errorf("%s: opening the link created its target", tc.file)
		}
	}
	// A link to a file that exists: read as missing or refused, never read through.
	secret := filepath.Join(outside, "secret")
	os.WriteFile(secret, []byte("down\n"), 0o600)
	for _, file := range []string{WantFile, LockFile} {
		os.Remove(a.Path(file))
		os.Symlink(secret, a.Path(file))
	}
	if a.Want() != "up" {
		t.Error("Want read through a link")
	}
	if a.Supervised() {
		t.Error("Supervised through a link")
	}
	// Writers replace a link by rename; the target stays as it was.
	if err := a.SetWant("up"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(secret); string(b) != "down\n" {
		t.Errorf("SetWant wrote through a link: the target holds %q", b)
	}
}

// TestRunDirFIFOs: a FIFO in place of the lock file or the event log never blocks a reader or
// a locker: each fails at once, saying the file is not a regular one (R28).
func TestRunDirFIFOs(t *testing.T) {
	a := newAgent(t, "x")
	for _, file := range []string{LockFile, EventsFile} {
		if err := unix.Mkfifo(a.Path(file), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	notRegular := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("%s on a FIFO: %v, want a not-a-regular-file error", what, err)
		}
	}
	within(t, "Supervised", func() {
		if a.Supervised() {
			t.Error("a FIFO lock counts as supervised")
		}
	})
	within(t, "Lock", func() { _, err := a.Lock(); notRegular("Lock", err) })
	within(t, "WaitFree", func() { notRegular("WaitFree", a.WaitFree(context.Background())) })
	path := a.Path(EventsFile)
	within(t, "ReadLog", func() { _, _, err := ReadLog(path, nil); notRegular("ReadLog", err) })
	within(t, "ReadLogBack", func() {
		_, err := ReadLogBack(path, func([]byte) bool { return true })
		notRegular("ReadLogBack", err)
	})
	within(t, "LastLine", func() {
		_, err := LastLine(path, 0, func([]byte) bool { return true })
		notRegular("LastLine", err)
	})
	within(t, "OpenLog", func() { _, _, err := OpenLog(path); notRegular("OpenLog", err) })
	within(t, "FollowLogFrom", func() {
		err := FollowLogFrom(context.Background(), path, nil, func([]byte) error { return nil }, nil, func() bool { return true })
		notRegular("FollowLogFrom", err)
	})
}

// TestRemoveStaleTemps: temp files of writers that are gone go, a live writer's stay, and so
// does everything else (R4: a killed supervisor leaves .status.json.tmp-* behind).
func TestRemoveStaleTemps(t *testing.T) {
	a := newAgent(t, "x")
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	gone := strconv.Itoa(dead.Process.Pid)
	me := strconv.Itoa(os.Getpid())
	if err := os.Mkdir(a.Path(PermissionsDir), 0o700); err != nil {
		t.Fatal(err)
	}
	files := map[string]bool{ // name: removed
		"." + StatusFile + ".tmp-" + gone + "-123":               true,
		filepath.Join(PermissionsDir, ".t1.json.tmp-"+gone+"-9"): true,
		"." + StatusFile + ".tmp-" + me + "-456":                 false, // a live writer's
		"." + WantFile + ".tmp-987654321":                        true,  // an old agt's, old
		"." + SpecFile + ".tmp-55":                               false, // an old agt's, fresh
		StatusFile:                                               false,
		"status.json.tmp-" + gone + "-1":                         false, // not hidden: not ours
		filepath.Join(PermissionsDir, "t2.json"):                 false,
	}
	for name := range files {
		if err := os.WriteFile(a.Path(name), []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * legacyTempAge)
	os.Chtimes(a.Path("."+WantFile+".tmp-987654321"), old, old)
	n, err := a.RemoveStaleTemps()
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for name, removed := range files {
		_, err := os.Stat(a.Path(name))
		if removed {
			want++
		}
		if removed != os.IsNotExist(err) {
			t.Errorf("%s: removed %v, want %v", name, os.IsNotExist(err), removed)
		}
	}
	if n != want {
		t.Errorf("RemoveStaleTemps = %d, want %d", n, want)
	}
	// A temp file that replaceFile writes carries the writer's pid.
	if err := a.SetWant("down"); err != nil {
		t.Fatal(err)
	}
	if n, err := a.RemoveStaleTemps(); n != 0 || err != nil {
		t.Errorf("RemoveStaleTemps with nothing stale = %d, %v", n, err)
	}
}

// TestReadPrompt: the prompt reads whole, and not through a link.
func TestReadPrompt(t *testing.T) {
	a := newAgent(t, "x")
	prompt := strings.Repeat("fix it ", 1<<18) // past the 1 MiB of status.json
	if err := WriteFileAtomic(a.Path(PromptFile), []byte(prompt)); err != nil {
		t.Fatal(err)
	}
	if b, err := a.ReadPrompt(); err != nil || string(b) != prompt {
		t.Errorf("ReadPrompt = %d bytes, %v; want %d bytes", len(b), err, len(prompt))
	}
	os.Remove(a.Path(PromptFile))
	os.Symlink(filepath.Join(t.TempDir(), "p"), a.Path(PromptFile))
	if _, err := a.ReadPrompt(); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("ReadPrompt through a link = %v", err)
	}
}
