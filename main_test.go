package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"agt/internal/testprog/fakeacp"
	"agt/internal/testprog/fakeagent"
	"agt/internal/testprog/fakejj"
	"agt/internal/testprog/hostile"
	"agt/internal/testprog/httpc"
	"agt/internal/testprog/stdiotap"
	"agt/internal/testprog/webhook"
	"agt/pids"
	"agt/spawn"
)

// testEpoch is when the clock of AGT_TEST_CLOCK starts.
var testEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// testMarker is set in the environment of everything a script starts, so the cleanup finds
// every process a script left behind, supervisors and setsid grandchildren included.
const testMarker = "AGT_TEST_SCRIPT"

func TestMain(m *testing.M) {
	testscript.Main(scriptsInParallel{m}, map[string]func(){
		"agt": func() {
			// Test-only hook: switch the tree sweeps off to prove the tree tests can fail.
			if os.Getenv("AGT_TEST_GROUP_KILL_ONLY") == "1" {
				spawn.TestHooks.GroupKillOnly = true
			}
			// Test-only hook: no cgroups, to prove what the sweeps by pid do alone.
			spawn.TestHooks.NoCgroup = os.Getenv("AGT_TEST_NO_CGROUP") == "1"
			if d, err := time.ParseDuration(os.Getenv("AGT_TEST_RAN_FOR")); err == nil {
				spawn.TestHooks.RanFor = d
			}
			if f := os.Getenv("AGT_TEST_UNKILLABLE"); f != "" {
				// The processes whose pids this file holds cannot be SIGKILLed.
				spawn.TestHooks.Unkillable = func(pid int) bool {
					b, _ := os.ReadFile(f)
					return slices.Contains(strings.Fields(string(b)), strconv.Itoa(pid))
				}
			}
			if d, err := time.ParseDuration(os.Getenv("AGT_TEST_CTL_TIMEOUT")); err == nil {
				spawn.TestHooks.Timeout = d // control exchanges that time out sooner
			}
			if d, err := time.ParseDuration(os.Getenv("AGT_TEST_SLOW_STATUS")); err == nil {
				spawn.TestHooks.SlowStatus = func() { time.Sleep(d) } // a slow fsync
			}
			if clock := os.Getenv("AGT_TEST_CLOCK"); clock != "" {
				// The supervisor's clock stands at 2026-01-01 00:00:00 UTC plus the duration
				// the file holds (0 while there is none): the script moves it.
				spawn.TestHooks.Clock = func() time.Time {
					b, _ := os.ReadFile(clock)
					d, _ := time.ParseDuration(strings.TrimSpace(string(b)))
					return testEpoch.Add(d)
				}
			}
			if full := os.Getenv("AGT_TEST_DISK_FULL"); full != "" {
				// The disk is full while this file exists.
				spawn.TestHooks.DiskFull = func() bool { _, err := os.Stat(full); return err == nil }
			}
			main()
		},
		"fakeagent": fakeagent.Main,
		"fakeacp":   fakeacp.Main,
		"jj":        fakejj.Main,
		"stdiotap":  stdiotap.Main,
		"webhook":   webhook.Main,
		"httpc":     httpc.Main,
		"hostile":   hostile.Main,
	})
}

// scriptsInParallel runs the tests with twice as many parallel tests as processors, unless
// -test.parallel says otherwise: a script spends much of its time waiting on the processes it
// started (an agent, a supervisor, a handshake), so two at a time on two cores left a quarter
// of the processor idle (go test -race ./... took 145 s here, 99 s with four at a time).
type scriptsInParallel struct{ m *testing.M }

func (p scriptsInParallel) Run() int {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", strconv.Itoa(2*runtime.GOMAXPROCS(0)))
	}
	code := p.m.Run()
	if plainDir != "" {
		os.RemoveAll(plainDir)
	}
	return code
}

// scriptCmds are the commands of the scripts beside exec: docs/development.md says what each
// does.
var scriptCmds = map[string]func(*testscript.TestScript, bool, []string){
	"waitfile":   cmdWaitFile,
	"waitevent":  cmdWaitEvent,
	"waitstate":  cmdWaitState,
	"jsonl":      cmdJSONL,
	"gone":       cmdGone,
	"alive":      cmdAlive,
	"signal":     cmdSignal,
	"validlog":   cmdValidLog,
	"maxrss":     cmdMaxRSS,
	"seqs":       cmdSeqs,
	"ptyclose":   cmdPtyClose,
	"tty":        cmdTTY,
	"fdcount":    cmdFDCount,
	"procs":      cmdProcs,
	"spread":     cmdSpread,
	"nozombies":  cmdNoZombies,
	"plainagt":   cmdPlainAgt,
	"term":       cmdTerm,
	"filesize":   cmdFileSize,
	"signalproc": cmdSignalProc,
	"termclean":  cmdTermClean,
	"inotifies":  cmdInotifies,
	"cgroupgone": cmdCgroupGone,
	"ctlconns":   cmdCtlConns,
	"ctlflood":   cmdCtlFlood,
}

func TestScripts(t *testing.T) {
	t.Parallel() // beside TestRealAgents, which waits on real agents most of its time
	t.Cleanup(sshHostsFixture.end)
	t.Cleanup(swarmFixture.end)
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Condition:           scriptCondition,
		Setup: func(env *testscript.Env) error {
			// Defers run last first: the cgroups go once markScript's have killed what they held.
			env.Defer(func() { endCgroups(filepath.Join(env.WorkDir, "run")) })
			marker := markScript(env)
			env.Setenv("AGT_RUN_DIR", filepath.Join(env.WorkDir, "run"))
			env.Setenv("NO_COLOR", "1")
			// Real captures of the agents' output, for fake agents to replay.
			fixtures, err := filepath.Abs(filepath.Join("stream", "testdata"))
			if err != nil {
				return err
			}
			env.Setenv("FIXTURES", fixtures)
			// The test binary, to copy as an agt binary of its own (binary_replaced).
			if exe, err := os.Executable(); err == nil {
				env.Setenv("TESTBIN", exe)
			}
			// Agents that fail stay failed unless a script asks for restarts (--restart), so
			// that each script sees one run unless restarts are what it tests.
			env.Setenv("AGT_RESTART", "never")
			// No user config from the machine running the tests.
			env.Setenv("XDG_CONFIG_HOME", filepath.Join(env.WorkDir, ".config"))
			// $WORK is too deep for a socket's path, so agt puts its ssh master sockets in
			// $XDG_RUNTIME_DIR: one of the script's own, gone with it.
			runtime, err := os.MkdirTemp("", "agt-xdg-")
			if err != nil {
				return err
			}
			env.Defer(func() { os.RemoveAll(runtime) })
			env.Setenv("XDG_RUNTIME_DIR", runtime)
			// The race detector sleeps a second at every exit by default.
			env.Setenv("GORACE", "atexit_sleep_ms=0")
			if err := setupSwarmScript(env); err != nil {
				return err
			}
			return setupHostScript(env, marker)
		},
		Cmds: scriptCmds,
	})
}

// markScript marks everything a script starts (testMarker in its environment), and has the
// script's end kill what of it is left. It returns the marker.
func markScript(env *testscript.Env) string {
	marker := fmt.Sprintf("%s-%d-%d", filepath.Base(env.WorkDir), os.Getpid(), time.Now().UnixNano())
	env.Setenv(testMarker, marker)
	env.Defer(func() { killMarked(testMarker + "=" + marker) })
	return marker
}

// killMarked SIGKILLs every process carrying kv in its environment, until none is left.
func killMarked(kv string) {
	killWhere(func(p pids.Proc) bool { return pids.HasEnv(p.PID, kv) })
}

// killWhere SIGKILLs every process (but this one) that match says is to go, until none is left.
func killWhere(match func(pids.Proc) bool) {
	for i := 0; i < 100; i++ {
		procs, err := pids.Scan()
		if err != nil {
			return
		}
		found := false
		for _, p := range procs {
			if p.PID != os.Getpid() && p.State != 'Z' && match(p) {
				syscall.Kill(p.PID, syscall.SIGKILL)
				found = true
			}
		}
		if !found {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// pollLimit bounds a wait on a condition. It only guards against a hang: on a loaded machine
// (the race detector, every script in parallel on two cores) fifty restarts can take ten
// seconds, and a slow machine must not fail a test.
const pollLimit = 60 * time.Second

// pollLimitKey holds, among a script's values, a longer bound than pollLimit for its waits.
type pollLimitKey struct{}

// limitOf is the bound of ts's waits.
func limitOf(ts *testscript.TestScript) time.Duration {
	if d, ok := ts.Value(pollLimitKey{}).(time.Duration); ok {
		return d
	}
	return pollLimit
}

// poll calls cond every 10 ms until it holds, failing the script after its limit.
func poll(ts *testscript.TestScript, what string, cond func() bool) {
	limit := limitOf(ts)
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			ts.Fatalf("timed out after %s waiting for %s", limit, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func noNegation(ts *testscript.TestScript, neg bool, name string) {
	if neg {
		ts.Fatalf("%s does not support negation", name)
	}
}
