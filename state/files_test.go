package state

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestWriteFileAtomicConcurrentReader(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, StatusFile)
	if err := WriteFileAtomic(path, []byte(`{"n":0}`)); err != nil {
		t.Fatal(err)
	}
	writes := 1000
	if testing.Short() {
		writes = 100
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var reads int
	var readErr error
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			b, err := os.ReadFile(path)
			if err == nil {
				var v struct{ N int }
				err = json.Unmarshal(b, &v)
			}
			if err != nil {
				readErr = err
				return
			}
			reads++
		}
	})
	for i := 1; i <= writes; i++ {
		// Sizes vary, so a torn or mixed file would not parse.
		data, _ := json.Marshal(map[string]any{"n": i, "pad": strings.Repeat("x", i%50*100)})
		if err := WriteFileAtomic(path, data); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if readErr != nil {
		t.Fatalf("a reader saw an incomplete file: %v", readErr)
	}
	t.Logf("%d reads during %d writes", reads, writes)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only %s", len(entries), StatusFile)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode: %v, %v", fi, err)
	}
}

func TestWriteFileAtomicFailureLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	// Renaming a file over a directory fails after the temp file is written.
	target := filepath.Join(dir, "target")
	if err := os.Mkdir(target, 0o700); err != nil {
		t.Fatal(err)
	}
	err := WriteFileAtomic(target, []byte("x"))
	if err == nil || !strings.HasPrefix(err.Error(), "write "+target+": ") {
		t.Errorf("WriteFileAtomic over a directory = %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("directory holds %d entries after a failed write, want 1", len(entries))
	}
}

func TestDurationJSON(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{`"30s"`, 30 * time.Second, true},
		{`"1m30s"`, 90 * time.Second, true},
		{`"0s"`, 0, true},
		{`1000000000`, time.Second, true},
		{`1e9`, time.Second, true},
		{`null`, 7, true}, // left unchanged
		{`"30"`, 0, false},
		{`1.5`, 0, false},
		{`true`, 0, false},
	} {
		d := Duration(7)
		err := json.Unmarshal([]byte(tc.in), &d)
		if (err == nil) != tc.ok || tc.ok && time.Duration(d) != tc.want {
			t.Errorf("unmarshal %s = %v, %v; want %v, ok=%v", tc.in, time.Duration(d), err, tc.want, tc.ok)
		}
	}
	b, err := json.Marshal(Duration(90 * time.Second))
	if err != nil || string(b) != `"1m30s"` {
		t.Errorf("marshal = %s, %v", b, err)
	}
}

func TestSpecRoundTrip(t *testing.T) {
	a := newAgent(t, "x")
	in := &Spec{
		Name: "x", Kind: "claude", Argv: []string{"claude", "-p"}, Cwd: "/w",
		Env:         []string{"K=a,b"},
		StopTimeout: Duration(30 * time.Second), IdleAfter: Duration(5 * time.Second), StaleAfter: Duration(10 * time.Minute),
		Created: time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC),
	}
	if err := a.WriteSpec(in); err != nil {
		t.Fatal(err)
	}
	if in.V != SpecVersion {
		t.Errorf("WriteSpec left V = %d", in.V)
	}
	out, err := a.ReadSpec()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("ReadSpec = %+v, want %+v", out, in)
	}
	raw, _ := os.ReadFile(a.Path(SpecFile))
	if !strings.Contains(string(raw), `"stop_timeout": "30s"`) {
		t.Errorf("spec.json does not hold durations as strings:\n%s", raw)
	}
}

func TestStatus(t *testing.T) {
	a := newAgent(t, "x")
	if _, err := a.ReadStatus(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadStatus of a missing file = %v", err)
	}
	code, cost := 3, 0.25
	in := &Status{
		Name: "x", Kind: "claude", State: "running", Since: time.Unix(100, 0).UTC(),
		PID: 42, Restarts: 2, ExitCode: &code, CostUSD: &cost,
		Usage: Usage{InputTokens: 1, OutputTokens: 2, CacheReadTokens: 3, CacheWriteTokens: 4}, LastSeq: 9, Dir: a.Dir,
	}
	writeStatus(t, a, in)
	if in.V != StatusVersion {
		t.Errorf("WriteStatus left V = %d", in.V)
	}
	out, err := a.ReadStatus()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("ReadStatus = %+v, want %+v", out, in)
	}
	if fi, err := os.Stat(a.Path(StatusFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("status.json mode: %v, %v", fi, err)
	}

	for _, bad := range []string{``, `{"v":1`, `not json`, `{"state":"running"}`, `{"v":2,"state":"running"}`} {
		if err := os.WriteFile(a.Path(StatusFile), []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if s, err := a.ReadStatus(); err == nil || !strings.HasPrefix(err.Error(), "read status of x: ") {
			t.Errorf("ReadStatus of %q = %+v, %v; want an error", bad, s, err)
		}
	}
}

func TestWant(t *testing.T) {
	a := newAgent(t, "x")
	if got := a.Want(); got != "up" {
		t.Errorf("Want with no file = %q", got)
	}
	for _, w := range []string{"down", "up", "down"} {
		if err := a.SetWant(w); err != nil {
			t.Fatal(err)
		}
		if got := a.Want(); got != w {
			t.Errorf("Want after SetWant(%s) = %q", w, got)
		}
	}
	if err := a.SetWant("sideways"); err == nil {
		t.Error("SetWant accepted sideways")
	}
	if err := os.WriteFile(a.Path(WantFile), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := a.Want(); got != "up" {
		t.Errorf("Want of garbage = %q", got)
	}
	// A stop's grace goes to stop_timeout before want; it counts only while want is down, and
	// want = up forgets it.
	for _, tc := range []struct {
		grace time.Duration
		want  time.Duration
		ok    bool
	}{{90 * time.Second, 90 * time.Second, true}, {0, 0, true}, {-1, 0, false}} {
		if err := a.SetWantDown(tc.grace); err != nil {
			t.Fatal(err)
		}
		if g, ok := a.StopGrace(); a.Want() != "down" || g != tc.want || ok != tc.ok {
			t.Errorf("after SetWantDown(%v): want %q, grace %v %v", tc.grace, a.Want(), g, ok)
		}
	}
	if err := a.SetWantDown(time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := a.SetWant("up"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(a.Path(StopTimeoutFile)); !os.IsNotExist(err) {
		t.Errorf("want = up left %s: %v", StopTimeoutFile, err)
	}
	if err := os.WriteFile(a.Path(StopTimeoutFile), []byte("soon\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := a.SetWant("down"); err != nil {
		t.Fatal(err)
	}
	if g, ok := a.StopGrace(); ok {
		t.Errorf("a grace that does not parse read as %v", g)
	}
}

func TestPID(t *testing.T) {
	a := newAgent(t, "x")
	if _, err := a.ReadPID(AgentPIDFile); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadPID of a missing file = %v", err)
	}
	const id = "123 456789 0f1e2d3c-aaaa-bbbb-cccc-000000000000"
	if err := a.WritePID(SupervisorPIDFile, id); err != nil {
		t.Fatal(err)
	}
	if got, err := a.ReadPID(SupervisorPIDFile); got != id || err != nil {
		t.Errorf("ReadPID = %q, %v", got, err)
	}
	if err := os.WriteFile(a.Path(AgentPIDFile), []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := a.ReadPID(AgentPIDFile); err == nil {
		t.Error("ReadPID of an empty file succeeded")
	}
}

func BenchmarkReadStatus(b *testing.B) {
	d := newDir(b)
	agents := make([]*Agent, 100)
	for i := range agents {
		a, err := d.Create("agent-" + string(rune('a'+i/26)) + string(rune('a'+i%26)))
		if err != nil {
			b.Fatal(err)
		}
		code := 0
		writeStatus(b, a, &Status{Name: a.Name, Kind: "claude", State: "running", PID: 1000 + i,
			ExitCode: &code, SessionID: "0f1e2d3c-aaaa-bbbb-cccc-000000000000", Model: "m", LastSeq: 1234, Dir: a.Dir})
		agents[i] = a
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, a := range agents {
			if _, err := a.ReadStatus(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// writeStatus writes a's status as its supervisor would: holding its lock, released after.
func writeStatus(t testing.TB, a *Agent, s *Status) {
	t.Helper()
	l, err := a.Lock()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.WriteStatus(s); err != nil {
		t.Fatal(err)
	}
}
