package main

// TestRealCodexAppServer drives the real codex app-server with stream.CodexServer against the
// loopback mock model: a write it asks approval for and agt accepts, a second turn, a write agt
// declines. With AGT_UPDATE_CAPTURES=1 it writes the transcript to
// stream/testdata/codexserver/, where stream's golden test and fuzz target read it.

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"agt/internal/testprog/mockmodel"
	"agt/stream"
)

func TestRealCodexAppServer(t *testing.T) {
	if testing.Short() {
		t.Skip("real agents: skipped in -short mode")
	}
	// As TestRealAgents: only when asked, and then the codex asked for.
	clis := os.Getenv(realCLIsEnv)
	if clis == "" {
		t.Skipf("real agents: run only when asked, with %s naming the directory of the CLIs", realCLIsEnv)
	}
	codex := filepath.Join(clis, "codex")
	if _, err := os.Stat(codex); err != nil {
		t.Fatalf("codex not found in %s=%s: %v", realCLIsEnv, clis, err)
	}
	t.Parallel()
	dir := t.TempDir()
	home, work := filepath.Join(dir, "home"), filepath.Join(dir, "work")
	for _, d := range []string{filepath.Join(home, ".codex"), work} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	mock := mockmodel.New(filepath.Join(dir, "mock.log"), t.Logf)
	defer mock.Close()
	if err := os.WriteFile(filepath.Join(home, ".codex", "config.toml"), []byte(codexMockConfig(mock.URL(), false)), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(codex, "app-server")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "HOME="+home, "CODEX_HOME="+filepath.Join(home, ".codex"), "MOCK_API_KEY=test-key", "TERM=dumb")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}()
	lines := make(chan []byte, 64)
	go func() {
		defer close(lines)
		r := bufio.NewReaderSize(stdout, 1<<20)
		for {
			l, err := r.ReadBytes('\n')
			if len(l) > 0 {
				lines <- bytes.TrimSuffix(l, []byte("\n"))
			}
			if err != nil {
				return
			}
		}
	}()

	var transcript bytes.Buffer
	var mu sync.Mutex
	c := stream.NewCodexServer("agt", "test")
	c.Sandbox = "danger-full-access" // its sandbox helpers are refused under a temporary HOME
	flush := func() {
		for _, l := range c.Lines() {
			mu.Lock()
			transcript.WriteString(">>> " + string(l))
			mu.Unlock()
			if _, err := io.Copy(stdin, bytes.NewReader(l)); err != nil {
				t.Fatalf("write to codex app-server: %v", err)
			}
		}
	}
	var events []stream.Event
	// turn runs one prompt to its result, answering each approval with allow.
	turn := func(prompt string, allow bool) []stream.Event {
		t.Helper()
		c.Prompt(prompt)
		flush()
		n := len(events)
		deadline := time.After(90 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("codex app-server ended; its stderr:\n%s", stderr.String())
				}
				transcript.WriteString("<<< " + string(l) + "\n")
				k := len(events)
				events = c.Decode(events, l)
				for _, e := range events[k:] {
					if e.Type == stream.TypePermission {
						if _, err := c.Answer(e.ID, allow, false); err != nil {
							t.Fatal(err)
						}
					}
				}
				flush()
				for _, e := range events[k:] {
					if e.Type == stream.TypeResult {
						return events[n:]
					}
				}
			case <-deadline:
				t.Fatalf("no result for %q within 90s; events so far:\n%s\nstderr:\n%s", prompt, eventLines(events), stderr.String())
			}
		}
	}
	c.Connect(work, "", "")
	first := turn("please write", true)
	second := turn("please echo", true)
	third := turn("please write", false)
	stdin.Close()
	for l := range lines {
		transcript.WriteString("<<< " + string(l) + "\n")
	}

	check := func(what string, evs []stream.Event, want func(stream.Event) bool) {
		t.Helper()
		for _, e := range evs {
			if want(e) {
				return
			}
		}
		t.Errorf("%s: not among\n%s", what, eventLines(evs))
	}
	check("the session", events, func(e stream.Event) bool { return e.Type == stream.TypeSession && e.SessionID != "" })
	check("an approval asked for the write", first, func(e stream.Event) bool {
		return e.Type == stream.TypePermission && e.Tool == "Bash" && strings.Contains(string(e.Input), "mkdir agt-write-1")
	})
	check("the write's result", first, func(e stream.Event) bool { return e.Type == stream.TypeToolResult && e.OK })
	check("the first turn's result", first, func(e stream.Event) bool { return e.Type == stream.TypeResult && e.OK })
	check("the echo", second, func(e stream.Event) bool {
		return e.Type == stream.TypeResult && e.OK && strings.Contains(e.Text, "turn 2")
	})
	check("the declined write", third, func(e stream.Event) bool { return e.Type == stream.TypeToolResult && !e.OK })
	if _, err := os.Stat(filepath.Join(work, "agt-write-1", "x")); err != nil {
		t.Errorf("the approved write did not happen: %v", err)
	}
	if _, err := os.Stat(filepath.Join(work, "agt-write-3")); err == nil {
		t.Error("the declined write happened")
	}
	if os.Getenv("AGT_UPDATE_CAPTURES") == "1" {
		out := filepath.Join("stream", "testdata", "codexserver", "write_approve_echo_decline.txt")
		b := bytes.ReplaceAll(transcript.Bytes(), []byte(dir), []byte("/home/dev"))
		if err := os.WriteFile(out, b, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", out)
	}
}

func eventLines(evs []stream.Event) string {
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "%s\n", e.AppendJSON(nil))
	}
	return b.String()
}
