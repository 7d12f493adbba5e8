package commands

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"testing"
	"time"

	"agt/spawn"
	"agt/state"
	"agt/stream"
)

// TestFastPs checks that the everyday forms of ps print what the CLI library's ps prints,
// and that everything else is left to the library.
func TestFastPs(t *testing.T) {
	root := filepath.Join(t.TempDir(), "run")
	d, err := state.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	code := 3
	withStatuses(t, d, map[string]state.Status{
		"done":  {State: "exited", ExitCode: &code, Dir: "/w"},
		"gone":  {State: "running", PID: 1, Dir: "/w"}, // no supervisor holds its lock: lost
		"crash": {State: "failed", Reason: "gave up after 5", Kind: "claude"},
	})
	if _, err := d.Create("fresh"); err != nil { // no status yet
		t.Fatal(err)
	}
	env := func(k string) string {
		if k == "AGT_RUN_DIR" {
			return root
		}
		return ""
	}
	for _, args := range [][]string{
		{"ps"}, {"ps", "-q"}, {"ps", "--json"}, {"ps", "--quiet", "--json"},
		{"ps", "--state", "lost"}, {"ps", "--state=exited,failed"}, {"ps", "--state", "unknown", "-q"},
		{"ps", "done", "crash"}, {"ps", "-q", "gone"}, {"--run-dir", root, "ps"}, {"--run-dir=" + root, "ps", "-q"},
		{"ps", "nosuch"}, {"--host", "local", "--run-dir", root, "ps", "--json"},
	} {
		argv := append([]string{"agt"}, args...)
		var fast bytes.Buffer
		handled, ferr := fastPs(argv, &fast, env)
		if !handled {
			t.Errorf("%q: not handled", args)
			continue
		}
		t.Setenv("AGT_RUN_DIR", root)
		var lib bytes.Buffer
		app := New("test")
		app.Writer, app.ErrWriter = &lib, io.Discard
		lerr := app.RunContext(context.Background(), argv)
		if fast.String() != lib.String() || fmt.Sprint(ferr) != fmt.Sprint(lerr) {
			t.Errorf("%q:\nfast %q, %v\nlib  %q, %v", args, fast.String(), ferr, lib.String(), lerr)
		}
	}
	for _, args := range [][]string{
		{"ps", "--format", "{{.Name}}"}, {"ps", "--help"}, {"ps", "-h"}, {"ps", "--state", "bogus"},
		{"ps", "--state"}, {"ps", "done", "-q"}, {"ps", "Bad/Name"}, {"ps", "--", "done"}, {"stop", "done"},
		{"--run-dir"}, {"--version"}, {}, {"--host", "box2", "ps"}, {"--host"}, {"ps", "box2:done"},
	} {
		var out bytes.Buffer
		if handled, _ := fastPs(append([]string{"agt"}, args...), &out, env); handled || out.Len() > 0 {
			t.Errorf("%q: handled by the fast path", args)
		}
	}
	t.Run("AGT_HOST", func(t *testing.T) {
		env := func(k string) string { return map[string]string{"AGT_RUN_DIR": root, "AGT_HOST": "box2"}[k] }
		if handled, _ := fastPs([]string{"agt", "ps"}, io.Discard, env); handled {
			t.Error("AGT_HOST=box2 handled by the fast path")
		}
		if handled, _ := fastPs([]string{"agt", "--host", "local", "ps"}, io.Discard, env); !handled {
			t.Error("--host local over AGT_HOST=box2 not handled by the fast path")
		}
	})
	t.Run("AGT_PS_FORMAT", func(t *testing.T) {
		env := func(k string) string { return map[string]string{"AGT_RUN_DIR": root, "AGT_PS_FORMAT": "{{.name}}"}[k] }
		if handled, _ := fastPs([]string{"agt", "ps"}, io.Discard, env); handled {
			t.Error("AGT_PS_FORMAT handled by the fast path")
		}
	})
}

// TestFastSuperviseArgs: the argv spawn writes takes the fast path, read right; nothing else
// does.
func TestFastSuperviseArgs(t *testing.T) {
	want := superviseArgs{root: "/r", name: "n", mode: spawn.StartResume, readyFD: 3, goFD: 4}
	if got, ok := parseSuperviseArgs(spawn.SupervisorArgs("/r", spawn.StartResume, "n")); !ok || got != want {
		t.Errorf("spawn's own argv: %+v, %v; want %+v", got, ok, want)
	}
	for _, args := range [][]string{
		{"agt", "supervise", "x"},
		{"agt", "--run-dir", "/r", "supervise", "--ready-fd", "3", "--go-fd", "4", "--mode", ""},
		{"agt", "--run-dir", "/r", "supervise", "--ready-fd", "x", "--go-fd", "4", "--mode", "", "n"},
		{"agt", "--run-dir", "/r", "supervise", "--go-fd", "3", "--ready-fd", "4", "--mode", "", "n"},
		{"agt", "--run-dir", "/r", "ps", "--ready-fd", "3", "--go-fd", "4", "--mode", "", "n"},
	} {
		if handled, _ := FastSupervise(args); handled {
			t.Errorf("%q: handled by the fast path", args)
		}
	}
}

// TestWhyErrorOnce: REASON adds a failure's error unless the reason holds it already, as a
// whole (exit code 1 is not in exit code 12).
func TestWhyErrorOnce(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct{ reason, err, want string }{
		{"gave up after 2 restarts (exit code 1)", "exit code 1", "gave up after 2 restarts (exit code 1)"},
		{"gave up after 2 restarts (exit code 12)", "exit code 1", "gave up after 2 restarts (exit code 12): exit code 1"},
		{"", "exit code 1", "exit code 1"},
	} {
		r := &psRow{Status: &state.Status{}}
		r.State, r.Reason, r.Error = stream.Failed, tc.reason, tc.err
		if got := r.why(now); got != tc.want {
			t.Errorf("why(%q, %q) = %q, want %q", tc.reason, tc.err, got, tc.want)
		}
	}
}

// withStatuses makes an agent of d for each name, with its status written as its supervisor
// would write it under its lock, then gone.
func withStatuses(t *testing.T, d *state.Dir, statuses map[string]state.Status) {
	t.Helper()
	for name, st := range statuses {
		a, err := d.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		l, err := a.Lock()
		if err != nil {
			t.Fatal(err)
		}
		err = l.WriteStatus(&st)
		l.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
}
