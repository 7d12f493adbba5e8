package main

// TestRealAgents runs the scripts in testdata/real with the real agent CLIs (Claude Code, Codex,
// opencode, Gemini CLI) under agt, each pointed at the loopback mock model of package mockmodel.
// Where it can (root), it runs them in a network namespace of their own that has only
// loopback: the test binary runs itself again inside it.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/tidwall/gjson"
	"golang.org/x/sys/unix"

	"agt/internal/testprog/mockmodel"
)

// realCLIs are the programs the scripts run, and the npm packages that provide them.
var realCLIs = []struct{ bin, pkg string }{
	{"claude", "@anthropic-ai/claude-code"},
	{"codex", "@openai/codex"},
	{"opencode", "opencode-ai"},
	{"gemini", "@google/gemini-cli"},
	{"claude-agent-acp", "@agentclientprotocol/claude-agent-acp"},
}

// realNetnsEnv tells the test binary how it runs: "inside" a network namespace that its parent
// made for it, or "off" to run without one.
const realNetnsEnv = "AGT_REAL_NETNS"

// realAtOnce is how many scripts, each running a real CLI, run at once. A real CLI is a Node
// program that takes seconds of CPU to start: more than two at once on a small machine starve
// each other past any timeout.
const realAtOnce = 2

// realPollLimit bounds the waits of a real-agent script: a CLI's start alone can take a minute
// on a loaded machine.
const realPollLimit = 5 * time.Minute

// realRunEnv marks every process of one run of the real-agent tests, for the final sweep.
const realRunEnv = "AGT_REAL_RUN"

// realCLIsEnv names the directory of the real CLIs. The test runs only when it is set (.ci/run
// sets it): a newcomer's go test ./... never starts them, installed or not.
const realCLIsEnv = "AGT_REAL_CLIS"

// findRealCLIs returns the CLIs found neither on PATH nor in dir.
func findRealCLIs(dir string) (missing []string) {
	for _, c := range realCLIs {
		if _, err := exec.LookPath(c.bin); err == nil {
			continue
		}
		if fi, err := os.Stat(filepath.Join(dir, c.bin)); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			continue
		}
		missing = append(missing, c.bin)
	}
	return missing
}

func TestRealAgents(t *testing.T) {
	if testing.Short() {
		t.Skip("real agents: skipped in -short mode")
	}
	// Beside TestScripts: both spend most of their time waiting on agents.
	t.Parallel()
	var pkgs []string
	for _, c := range realCLIs {
		pkgs = append(pkgs, c.pkg)
	}
	install := fmt.Sprintf("npm install --prefix DIR --no-audit --no-fund %s, then %s=DIR/node_modules/.bin (.ci/run does both)",
		strings.Join(pkgs, " "), realCLIsEnv)
	dir := os.Getenv(realCLIsEnv)
	if dir == "" {
		t.Skipf("real agents: run only when asked, with %s naming the directory of the CLIs: %s", realCLIsEnv, install)
	}
	// Asked for: every CLI must be there.
	if missing := findRealCLIs(dir); len(missing) > 0 {
		t.Fatalf("real agent CLIs not found on PATH or in %s=%s: %s; install them: %s",
			realCLIsEnv, dir, strings.Join(missing, ", "), install)
	}
	slots := make(chan struct{}, realAtOnce)

	switch os.Getenv(realNetnsEnv) {
	case "inside":
		if err := loopbackUp(); err != nil {
			t.Fatalf("bring loopback up in the network namespace: %v", err)
		}
		ifs, _ := net.Interfaces()
		var names []string
		for _, i := range ifs {
			names = append(names, i.Name)
		}
		t.Logf("in a network namespace with interfaces %v", names)
	case "off":
		t.Logf("running without network isolation: %s=off", realNetnsEnv)
	default:
		why := runInNetns(t)
		if why == "" {
			return // the child ran the scripts
		}
		t.Logf("running without network isolation: %s", why)
	}

	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "real"),
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup: func(env *testscript.Env) error {
			// A slot first: the script's bounds count from when its CLI can run.
			slots <- struct{}{}
			env.Defer(func() { <-slots })
			env.Values[pollLimitKey{}] = realPollLimit
			marker := fmt.Sprintf("%s-%d-%d", filepath.Base(env.WorkDir), os.Getpid(), time.Now().UnixNano())
			env.Setenv(testMarker, marker)
			if run := os.Getenv(realRunEnv); run != "" {
				env.Setenv(realRunEnv, run) // for the parent's sweep, should this process die
			}
			env.Setenv("PATH", dir+string(os.PathListSeparator)+env.Getenv("PATH"))
			env.Setenv("AGT_RUN_DIR", filepath.Join(env.WorkDir, "run"))
			env.Setenv("AGT_WORKSPACE_MODE", "none")
			env.Setenv("AGT_RESTART", "never")
			env.Setenv("NO_COLOR", "1")
			env.Setenv("XDG_CONFIG_HOME", filepath.Join(env.WorkDir, ".config"))
			env.Setenv("GORACE", "atexit_sleep_ms=0")
			env.Values[mockKey{}] = &mockSlot{}
			env.Defer(func() {
				if t, ok := env.T().(interface{ Failed() bool }); ok && t.Failed() {
					logAgents(env)
				}
				// Stop the agents first, so no client is left talking to a closed mock.
				killMarked(testMarker + "=" + marker)
				endCgroups(filepath.Join(env.WorkDir, "run"))
				if s := env.Values[mockKey{}].(*mockSlot); s.m != nil {
					s.m.Close()
				}
			})
			return nil
		},
		Cmds: realCmds,
	})
}

// realCmds are the commands of the real-agent scripts beside exec: docs/development.md says
// what each does.
var realCmds = map[string]func(*testscript.TestScript, bool, []string){
	"mockmodel": cmdMockModel,
	"mockopen":  cmdMockOpen,
	"realenv":   cmdRealEnv,
	"mocklog":   cmdMockLog,
	"waitend":   cmdWaitEnd,
	"distinct":  cmdDistinct,
	"waitglob":  cmdWaitGlob,
	"waitevent": cmdWaitEvent,
	"waitstate": cmdWaitState,
	"jsonl":     cmdJSONL,
	"signal":    cmdSignal,
	"gone":      cmdGone,
	"term":      cmdTerm,
}

// logAgents logs what a failed script leaves to read: each agent's status, the end of its
// events and of its stderr, and the mock's log.
func logAgents(env *testscript.Env) {
	tail := func(path string, n int) string {
		b, err := os.ReadFile(path)
		if err != nil {
			return err.Error()
		}
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		if len(lines) > n {
			lines = lines[len(lines)-n:]
		}
		return strings.Join(lines, "\n")
	}
	dirs, _ := filepath.Glob(filepath.Join(env.Getenv("AGT_RUN_DIR"), "agents", "*"))
	for _, d := range dirs {
		env.T().Log(fmt.Sprintf("agent %s: status.json:\n%s\nlast events:\n%s\nstderr.log:\n%s",
			filepath.Base(d), tail(filepath.Join(d, "status.json"), 60), tail(filepath.Join(d, "events.ndjson"), 40),
			tail(filepath.Join(d, "stderr.log"), 20)))
	}
	if s := env.Values[mockKey{}].(*mockSlot); s.m != nil {
		env.T().Log("mock model log:\n" + string(mockmodel.LogLines(s.m.Requests())))
	}
}

// runInNetns runs this test again in a child test binary inside a new network namespace,
// streaming its output to the log. It returns why it could not, or "" when the child ran.
func runInNetns(t *testing.T) string {
	if os.Geteuid() != 0 {
		return "not root (a network namespace needs CAP_SYS_ADMIN)"
	}
	exe, err := os.Executable()
	if err != nil {
		return "cannot find the test binary: " + err.Error()
	}
	run := "^TestRealAgents$"
	if f := flag.Lookup("test.run"); f != nil {
		if _, sub, ok := strings.Cut(f.Value.String(), "/"); ok {
			run += "/" + sub
		}
	}
	// realAtOnce bounds the scripts that run; a higher -test.parallel lets the rest wait for a
	// slot with their clocks not yet started.
	args := []string{"-test.run", run, "-test.count", "1", "-test.parallel", strconv.Itoa(realAtOnce)}
	if testing.Verbose() {
		args = append(args, "-test.v")
	}
	ctx := context.Background()
	if d, ok := t.Deadline(); ok {
		// The child times out first, so this test lives to sweep what it left.
		left := max(time.Until(d)-15*time.Second, 30*time.Second)
		args = append(args, "-test.timeout", left.String())
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-5*time.Second))
		defer cancel()
	}
	runID := fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano())
	defer killMarked(realRunEnv + "=" + runID)

	pr, pw, err := os.Pipe()
	if err != nil {
		return err.Error()
	}
	defer pr.Close()
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = append(os.Environ(), realNetnsEnv+"=inside", realRunEnv+"="+runID)
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL}
	// Pdeathsig fires when the thread that started the child ends: keep this one.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	err = cmd.Start()
	pw.Close()
	if err != nil {
		if errors.Is(err, syscall.EPERM) {
			return "cannot make a network namespace: " + err.Error()
		}
		return "cannot start the test binary in a network namespace: " + err.Error()
	}
	t.Logf("running the scripts in a network namespace of their own (pid %d)", cmd.Process.Pid)
	var skipped string
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Text()
			t.Log("netns: " + line)
			if s, ok := strings.CutPrefix(strings.TrimSpace(line), "--- SKIP: TestRealAgents "); ok && skipped == "" {
				skipped = s
			}
		}
	}()
	err = cmd.Wait()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		pr.Close() // a process the child left holds the pipe; the sweep below ends it
		<-done
	}
	switch {
	case err != nil:
		t.Errorf("the real-agent scripts failed in their network namespace: %v", err)
	case skipped != "":
		t.Skip("skipped in the network namespace " + skipped)
	}
	return ""
}

// loopbackUp brings up the loopback interface of this process's network namespace.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// mockKey finds a script's mockSlot in its values.
type mockKey struct{}

// mockSlot holds the mock model of one script, once mockmodel started it.
type mockSlot struct{ m *mockmodel.Model }

func scriptMock(ts *testscript.TestScript) *mockmodel.Model {
	s := ts.Value(mockKey{}).(*mockSlot)
	if s.m == nil {
		ts.Fatalf("no mock model: run mockmodel first")
	}
	return s.m
}

// mockmodel [-tick D] [-hold]: start the mock model for this script and set MOCK_URL and
// MOCK_PORT. It logs each request to $WORK/mock.log as well. It stops when the script ends.
// With -hold, slow answers hold back their last chunk until mockopen.
func cmdMockModel(ts *testscript.TestScript, neg bool, args []string) {
	noNegation(ts, neg, "mockmodel")
	tick, hold := 500*time.Millisecond, false
	for len(args) > 0 {
		switch {
		case args[0] == "-hold":
			hold, args = true, args[1:]
		case args[0] == "-tick" && len(args) > 1:
			d, err := time.ParseDuration(args[1])
			ts.Check(err)
			tick, args = d, args[2:]
		default:
			ts.Fatalf("usage: mockmodel [-tick DURATION] [-hold]")
		}
	}
	s := ts.Value(mockKey{}).(*mockSlot)
	if s.m != nil {
		ts.Fatalf("mockmodel: already started")
	}
	s.m = mockmodel.New(ts.MkAbs("mock.log"), ts.Logf)
	s.m.Tick = tick
	if hold {
		s.m.Hold()
	}
	ts.Setenv("MOCK_URL", s.m.URL())
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(s.m.URL(), "http://"))
	ts.Setenv("MOCK_PORT", port)
}

// mockopen: let the slow answers that mockmodel -hold held back end.
func cmdMockOpen(ts *testscript.TestScript, neg bool, args []string) {
	noNegation(ts, neg, "mockopen")
	if len(args) != 0 {
		ts.Fatalf("usage: mockopen")
	}
	scriptMock(ts).Open()
}

// realenv [-retries] KIND: give the script a fresh $HOME holding KIND's configuration, and the
// variables that point KIND (claude, codex, opencode or gemini) at the mock model. The
// client's own retries of failed requests are off, unless -retries.
func cmdRealEnv(ts *testscript.TestScript, neg bool, args []string) {
	noNegation(ts, neg, "realenv")
	retries := false
	if len(args) > 0 && args[0] == "-retries" {
		retries, args = true, args[1:]
	}
	if len(args) != 1 {
		ts.Fatalf("usage: realenv [-retries] claude|claude-acp|codex|opencode|gemini")
	}
	url := scriptMock(ts).URL()
	home := ts.MkAbs("home")
	ts.Check(os.MkdirAll(home, 0o700))
	write := func(rel, content string) {
		p := filepath.Join(home, rel)
		ts.Check(os.MkdirAll(filepath.Dir(p), 0o700))
		ts.Check(os.WriteFile(p, []byte(content), 0o600))
	}
	set := func(kv ...string) {
		for i := 0; i+1 < len(kv); i += 2 {
			ts.Setenv(kv[i], kv[i+1])
		}
	}
	set("HOME", home, "TERM", "dumb")
	switch args[0] {
	case "claude", "claude-acp": // the ACP adapter runs Claude Code, which reads the same
		set("ANTHROPIC_BASE_URL", url, "ANTHROPIC_API_KEY", "test-key",
			"DISABLE_TELEMETRY", "1", "DISABLE_AUTOUPDATER", "1", "DISABLE_ERROR_REPORTING", "1",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
		if os.Geteuid() == 0 {
			set("IS_SANDBOX", "1") // lets root use --dangerously-skip-permissions
		}
		if !retries {
			set("CLAUDE_CODE_MAX_RETRIES", "0")
		}
	case "codex":
		write(".codex/config.toml", codexMockConfig(url, retries))
		set("CODEX_HOME", filepath.Join(home, ".codex"), "MOCK_API_KEY", "test-key")
	case "opencode":
		cfg, _ := json.Marshal(map[string]any{"autoupdate": false, "share": "disabled",
			"model": "anthropic/claude-sonnet-4-5",
			"provider": map[string]any{"anthropic": map[string]any{"options": map[string]any{
				"baseURL": url + "/v1", "apiKey": "test-key"}}}})
		write(".config/opencode/opencode.json", string(cfg))
		set("XDG_CONFIG_HOME", filepath.Join(home, ".config"), "XDG_DATA_HOME", filepath.Join(home, ".local", "share"),
			"XDG_CACHE_HOME", filepath.Join(home, ".cache"), "XDG_STATE_HOME", filepath.Join(home, ".local", "state"),
			"OPENCODE_DISABLE_AUTOUPDATE", "1", "OPENCODE_DISABLE_MODELS_FETCH", "1",
			"ANTHROPIC_API_KEY", "", "ANTHROPIC_BASE_URL", "")
	case "gemini":
		// With GOOGLE_GEMINI_BASE_URL set, Gemini CLI 0.61 picks the "gateway" auth type, which
		// it then refuses ("Invalid auth method selected"); the API key type must be chosen.
		attempts := ""
		if !retries {
			// One attempt of the main request; the model router (without --model) still
			// tries five times.
			attempts = `, "maxAttempts": 1`
		}
		write(".gemini/settings.json", `{"security": {"auth": {"selectedType": "gemini-api-key"}},
 "privacy": {"usageStatisticsEnabled": false},
 "general": {"disableAutoUpdate": true, "disableUpdateNag": true`+attempts+`}}
`)
		set("GEMINI_API_KEY", "test-key", "GOOGLE_GEMINI_BASE_URL", url)
	default:
		ts.Fatalf("realenv: unknown kind %q", args[0])
	}
	// agt waits as long for an ACP agent's handshake as for anything else here: a CLI's start
	// alone can take a minute on a loaded machine.
	cfg := filepath.Join(ts.Getenv("XDG_CONFIG_HOME"), "agt", "config.toml")
	ts.Check(os.MkdirAll(filepath.Dir(cfg), 0o700))
	ts.Check(os.WriteFile(cfg, []byte(fmt.Sprintf("connect_timeout = %q\n", realPollLimit)), 0o600))
}

// codexMockConfig is Codex's config.toml pointing it at the mock model at url; its own retries
// of failed requests are off unless retries.
func codexMockConfig(url string, retries bool) string {
	cfg := fmt.Sprintf(`model = "gpt-5.5"
model_provider = "mock"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.mock]
name = "Mock"
base_url = "%s/v1"
wire_api = "responses"
env_key = "MOCK_API_KEY"
`, url)
	if !retries {
		cfg += "request_max_retries = 0\nstream_max_retries = 0\n"
	}
	return cfg
}

// mocklog: print the mock's request log as JSON lines, for stdout and jsonl to check.
// mocklog count N [FILTER...]: exactly N logged requests match every FILTER.
// mocklog wait [-count=N] [FILTER...]: wait until N (default 1) requests match.
// A FILTER is PATH=VALUE, PATH!=VALUE or PATH>=NUMBER, PATH a gjson path in a record (api,
// model, scenario, users, last_user, tool_result, tool_error, tool_output, main, status, answer,
// sent).
func cmdMockLog(ts *testscript.TestScript, neg bool, args []string) {
	noNegation(ts, neg, "mocklog")
	m := scriptMock(ts)
	if len(args) == 0 {
		ts.Stdout().Write(mockmodel.LogLines(m.Requests()))
		return
	}
	count := func(filters []string) int {
		n := 0
		for _, r := range m.Requests() {
			b, _ := json.Marshal(r)
			if mockMatch(ts, b, filters) {
				n++
			}
		}
		return n
	}
	switch args[0] {
	case "count":
		if len(args) < 2 {
			ts.Fatalf("usage: mocklog count N [FILTER...]")
		}
		want, err := strconv.Atoi(args[1])
		ts.Check(err)
		if got := count(args[2:]); got != want {
			for _, r := range m.Requests() {
				b, _ := json.Marshal(r)
				ts.Logf("mock: %s", b)
			}
			ts.Fatalf("%d requests match %v, want %d", got, args[2:], want)
		}
	case "wait":
		want, filters := 1, args[1:]
		if len(filters) > 0 && strings.HasPrefix(filters[0], "-count=") {
			n, err := strconv.Atoi(strings.TrimPrefix(filters[0], "-count="))
			ts.Check(err)
			want, filters = n, filters[1:]
		}
		poll(ts, fmt.Sprintf("%d mock requests matching %v", want, filters), func() bool { return count(filters) >= want })
	default:
		ts.Fatalf("usage: mocklog [count N | wait [-count=N]] [FILTER...]")
	}
}

// mockMatch reports whether the JSON record rec passes every filter: PATH=VALUE, PATH!=VALUE,
// or PATH>=NUMBER.
func mockMatch(ts *testscript.TestScript, rec []byte, filters []string) bool {
	for _, f := range filters {
		if k, v, ok := strings.Cut(f, ">="); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				ts.Fatalf("mocklog: bad filter %q: want a number after >=", f)
			}
			if gjson.GetBytes(rec, k).Float() < n {
				return false
			}
			continue
		}
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			ts.Fatalf("mocklog: bad filter %q: want PATH=VALUE, PATH!=VALUE or PATH>=NUMBER", f)
		}
		k, not := strings.CutSuffix(k, "!")
		if (gjson.GetBytes(rec, k).String() == v) == not {
			return false
		}
	}
	return true
}

// finalStates are the states an agent ends in.
var finalStates = []string{"exited", "failed", "stopped"}

// waitend NAME STATE: wait until NAME reaches a final state, which must be STATE.
func cmdWaitEnd(ts *testscript.TestScript, neg bool, args []string) {
	noNegation(ts, neg, "waitend")
	if len(args) != 2 {
		ts.Fatalf("usage: waitend NAME STATE")
	}
	path := filepath.Join(ts.Getenv("AGT_RUN_DIR"), "agents", args[0], "status.json")
	var b []byte
	poll(ts, args[0]+" to end", func() bool {
		b, _ = os.ReadFile(path)
		st := gjson.GetBytes(b, "state").String()
		for _, f := range finalStates {
			if st == f {
				return true
			}
		}
		return false
	})
	if st := gjson.GetBytes(b, "state").String(); st != args[1] {
		ts.Fatalf("%s ended %s, not %s; its status: %s", args[0], st, args[1], b)
	}
}

// distinct FILE PATH N: over the NDJSON lines of FILE, the gjson PATH takes exactly N distinct
// values besides the empty one.
func cmdDistinct(ts *testscript.TestScript, neg bool, args []string) {
	noNegation(ts, neg, "distinct")
	if len(args) != 3 {
		ts.Fatalf("usage: distinct FILE PATH N")
	}
	want, err := strconv.Atoi(args[2])
	ts.Check(err)
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(ts.ReadFile(args[0])), "\n") {
		if v := gjson.Get(line, args[1]).String(); v != "" {
			seen[v] = true
		}
	}
	if len(seen) != want {
		ts.Fatalf("%s: %d distinct values of %s, want %d", args[0], len(seen), args[1], want)
	}
}

// waitglob GLOB QUERY WANT: wait until a file matching GLOB gives WANT for the gjson QUERY,
// as jsonl has it. Scripts use it to wait until an agent has saved its session on disk.
func cmdWaitGlob(ts *testscript.TestScript, neg bool, args []string) {
	noNegation(ts, neg, "waitglob")
	if len(args) != 3 {
		ts.Fatalf("usage: waitglob GLOB QUERY WANT")
	}
	holds, err := jsonWant(args[2])
	ts.Check(err)
	pattern := ts.MkAbs(args[0])
	poll(ts, fmt.Sprintf("a file of %s where %s gives %s", pattern, args[1], args[2]), func() bool {
		files, _ := filepath.Glob(pattern)
		for _, f := range files {
			if b, err := os.ReadFile(f); err == nil && holds(gjson.GetBytes(b, args[1])) {
				return true
			}
		}
		return false
	})
}
