package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/rogpeppe/go-internal/testscript"
	"github.com/tidwall/gjson"
	"github.com/urfave/cli/v2"

	"agt/commands"
	"agt/pids"
	"agt/spawn"
)

// testEpoch is when the clock of AGT_TEST_CLOCK starts.
var testEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// testMarker is set in the environment of everything a script starts, so the cleanup finds
// every process a script left behind, supervisors and setsid grandchildren included.
const testMarker = "AGT_TEST_SCRIPT"

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
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
		"fakeagent": fakeAgent,
		"fakeacp":   fakeACP,
		"jj":        fakeJJ,
		"stdiotap":  stdioTap,
		"webhook":   webhookSink,
		"httpc":     httpc,
	})
}

func TestScripts(t *testing.T) {
	t.Parallel() // beside TestRealAgents, which waits on real agents most of its time
	t.Cleanup(stopSSHHosts)
	t.Cleanup(stopSwarm)
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Condition:           scriptCondition,
		Setup: func(env *testscript.Env) error {
			marker := fmt.Sprintf("%s-%d-%d", filepath.Base(env.WorkDir), os.Getpid(), time.Now().UnixNano())
			env.Setenv(testMarker, marker)
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
			// The race detector sleeps a second at every exit by default.
			env.Setenv("GORACE", "atexit_sleep_ms=0")
			env.Defer(func() {
				killMarked(testMarker + "=" + marker)
				endCgroups(filepath.Join(env.WorkDir, "run"))
			})
			if err := setupSwarmScript(env); err != nil {
				return err
			}
			return setupHostScript(env, marker)
		},
		Cmds: map[string]func(*testscript.TestScript, bool, []string){
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
			"waitprocs":  cmdWaitProcs,
			"termclean":  cmdTermClean,
			"inotifies":  cmdInotifies,
			"cgroupgone": cmdCgroupGone,
		},
	})
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

// poll calls cond every 10 ms until it holds, failing the script after pollLimit.
func poll(ts *testscript.TestScript, what string, cond func() bool) {
	deadline := time.Now().Add(pollLimit)
	for !cond() {
		if time.Now().After(deadline) {
			ts.Fatalf("timed out after %s waiting for %s", pollLimit, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func noNegation(ts *testscript.TestScript, neg bool, name string) {
	if neg {
		ts.Fatalf("%s does not support negation", name)
	}
}

// waitfile FILE: wait until FILE exists.
// waitfile FILE [REGEXP]: wait until FILE exists, and holds a line matching REGEXP if given.
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	noNegation(ts, neg, "waitfile")
	if len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: waitfile FILE [REGEXP]")
	}
	path := ts.MkAbs(args[0])
	if len(args) == 1 {
		poll(ts, path, func() bool { _, err := os.Stat(path); return err == nil })
		return
	}
	re, err := regexp.Compile("(?m)" + args[1])
	ts.Check(err)
	poll(ts, path+" to match "+args[1], func() bool {
		b, err := os.ReadFile(path)
		return err == nil && re.Match(b)
	})
}

func eventsPath(ts *testscript.TestScript, name string) string {
	return filepath.Join(ts.Getenv("AGT_RUN_DIR"), "agents", name, "events.ndjson")
}

// waitevent [-count=N] NAME TYPE [PATH=VALUE | PATH~REGEXP]: wait until NAME's log holds N
// (default 1) events of TYPE (whose gjson PATH has VALUE, or matches REGEXP).
func cmdWaitEvent(ts *testscript.TestScript, neg bool, args []string) {
	noNegation(ts, neg, "waitevent")
	want := 1
	if len(args) > 0 && strings.HasPrefix(args[0], "-count=") {
		n, err := strconv.Atoi(strings.TrimPrefix(args[0], "-count="))
		if err != nil || n < 1 {
			ts.Fatalf("waitevent: bad %s", args[0])
		}
		want, args = n, args[1:]
	}
	if len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: waitevent [-count=N] NAME TYPE [PATH=VALUE | PATH~REGEXP]")
	}
	path := eventsPath(ts, args[0])
	match := func(line string) bool {
		if gjson.Get(line, "type").String() != args[1] {
			return false
		}
		if len(args) == 3 {
			if k, expr, ok := strings.Cut(args[2], "~"); ok && !strings.Contains(k, "=") {
				re := regexp.MustCompile(expr)
				return re.MatchString(gjson.Get(line, k).String())
			}
			k, v, _ := strings.Cut(args[2], "=")
			return gjson.Get(line, k).String() == v
		}
		return true
	}
	poll(ts, fmt.Sprintf("%d %s events of %s", want, args[1], args[0]), func() bool {
		b, _ := os.ReadFile(path)
		n := 0
		for _, line := range strings.Split(string(b), "\n") {
			if match(line) {
				n++
			}
		}
		return n >= want
	})
}

// waitstate NAME STATE: wait until status.json of NAME says STATE.
func cmdWaitState(ts *testscript.TestScript, neg bool, args []string) {
	noNegation(ts, neg, "waitstate")
	if len(args) != 2 {
		ts.Fatalf("usage: waitstate NAME STATE")
	}
	path := filepath.Join(ts.Getenv("AGT_RUN_DIR"), "agents", args[0], "status.json")
	poll(ts, args[0]+" in state "+args[1], func() bool {
		b, _ := os.ReadFile(path)
		return gjson.GetBytes(b, "state").String() == args[1]
	})
}

// jsonl FILE QUERY WANT: the gjson QUERY over the NDJSON in FILE (stdout, stderr or a file)
// gives WANT. `..` queries address the lines: '..#(type=="exit").code'.
func cmdJSONL(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: jsonl FILE QUERY WANT")
	}
	got := gjson.Get(ts.ReadFile(args[0]), args[1]).String()
	if (got == args[2]) == neg {
		ts.Fatalf("jsonl %s %s: got %q, want %s%q", args[0], args[1], got, map[bool]string{true: "not ", false: ""}[neg], args[2])
	}
}

// readPIDs reads one pid per line (or "PID START BOOT" lines) from FILE.
func readPIDs(ts *testscript.TestScript, file string) []int {
	var out []int
	for _, line := range strings.Split(strings.TrimSpace(ts.ReadFile(file)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		pid, err := strconv.Atoi(f[0])
		if err != nil || pid <= 0 {
			ts.Fatalf("%s: bad pid %q", file, line)
		}
		out = append(out, pid)
	}
	if len(out) == 0 {
		ts.Fatalf("%s holds no pid", file)
	}
	return out
}

// living reports whether pid names a process that is not a zombie, or a zombie leader whose
// other threads have not all exited yet.
func living(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) || (b[i+2] != 'Z' && b[i+2] != 'X') {
		return true
	}
	// A zombie leader whose other threads are still exiting (one finishing a large write,
	// say) still holds its files, and so its locks.
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	return err == nil && len(tasks) > 1
}

// gone FILE: wait until no pid listed in FILE is alive.
func cmdGone(ts *testscript.TestScript, neg bool, args []string) {
	noNegation(ts, neg, "gone")
	if len(args) != 1 {
		ts.Fatalf("usage: gone PIDFILE")
	}
	for _, pid := range readPIDs(ts, args[0]) {
		poll(ts, fmt.Sprintf("pid %d to be gone", pid), func() bool { return !living(pid) })
	}
}

// alive FILE: every pid listed in FILE is alive now.
func cmdAlive(ts *testscript.TestScript, neg bool, args []string) {
	noNegation(ts, neg, "alive")
	if len(args) != 1 {
		ts.Fatalf("usage: alive PIDFILE")
	}
	for _, pid := range readPIDs(ts, args[0]) {
		if !living(pid) {
			ts.Fatalf("pid %d from %s is not alive", pid, args[0])
		}
	}
}

// signal SIG FILE: send SIG (KILL, TERM, SEGV…) to every pid listed in FILE.
func cmdSignal(ts *testscript.TestScript, neg bool, args []string) {
	noNegation(ts, neg, "signal")
	if len(args) != 2 {
		ts.Fatalf("usage: signal SIG PIDFILE")
	}
	sigs := map[string]syscall.Signal{"KILL": syscall.SIGKILL, "TERM": syscall.SIGTERM, "SEGV": syscall.SIGSEGV, "INT": syscall.SIGINT}
	sig, ok := sigs[args[0]]
	if !ok {
		ts.Fatalf("unknown signal %q", args[0])
	}
	for _, pid := range readPIDs(ts, args[1]) {
		ts.Check(syscall.Kill(pid, sig))
	}
}

// validlog [-torn] FILE: the event log FILE ends in a newline, and its lines are valid JSON
// with a seq that strictly increases. With -torn, one torn event that a later writer closed
// (R21: the script killed the writer mid-event) is skipped and logged, as readers skip it; any
// other broken line fails.
func cmdValidLog(ts *testscript.TestScript, neg bool, args []string) {
	noNegation(ts, neg, "validlog")
	torn := 0 // torn events allowed: one, where the script killed a writer mid-event
	if len(args) == 2 && args[0] == "-torn" {
		torn, args = 1, args[1:]
	}
	if len(args) != 1 {
		ts.Fatalf("usage: validlog [-torn] FILE")
	}
	b, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	if len(b) > 0 && b[len(b)-1] != '\n' {
		ts.Fatalf("%s ends in a torn line", args[0])
	}
	var last int64
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 64<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Bytes()
		if !gjson.ValidBytes(line) {
			if !bytes.HasPrefix(line, []byte(`{"v":1,`)) {
				ts.Fatalf("%s:%d: not valid JSON: %.80q", args[0], n, line)
			}
			if torn--; torn < 0 {
				ts.Fatalf("%s:%d: torn event of %d bytes, where no writer was killed", args[0], n, len(line))
			}
			ts.Logf("%s:%d: torn event of %d bytes, closed by a later writer", args[0], n, len(line))
			continue
		}
		seq := gjson.GetBytes(line, "seq").Int()
		if seq <= last {
			ts.Fatalf("%s:%d: seq %d after %d", args[0], n, seq, last)
		}
		last = seq
	}
	ts.Check(sc.Err())
}

// maxrss PIDFILE MB: the peak resident size (VmHWM) of the process in PIDFILE is below MB.
func cmdMaxRSS(ts *testscript.TestScript, neg bool, args []string) {
	noNegation(ts, neg, "maxrss")
	if len(args) != 2 {
		ts.Fatalf("usage: maxrss PIDFILE MB")
	}
	limit, err := strconv.Atoi(args[1])
	ts.Check(err)
	pid := readPIDs(ts, args[0])[0]
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	ts.Check(err)
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.Atoi(f[1])
			ts.Logf("peak RSS of pid %d: %d KiB", pid, kb)
			if kb > limit<<10 {
				ts.Fatalf("peak RSS %d KiB over %d MiB", kb, limit)
			}
			return
		}
	}
	ts.Fatalf("no VmHWM for pid %d", pid)
}

// seqs FILE: the NDJSON events in FILE carry every seq from the first to the last exactly once,
// in order.
func cmdSeqs(ts *testscript.TestScript, neg bool, args []string) {
	noNegation(ts, neg, "seqs")
	if len(args) != 1 {
		ts.Fatalf("usage: seqs FILE")
	}
	var last int64
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(ts.ReadFile(args[0])), "\n") {
		seq := gjson.Get(line, "seq").Int()
		if last == 0 && seq != 1 {
			ts.Fatalf("%s: the first seq is %d, not 1", args[0], seq)
		}
		if last != 0 && seq != last+1 {
			ts.Fatalf("%s: seq %d after %d", args[0], seq, last)
		}
		last = seq
		n++
	}
	ts.Logf("%d events, seq up to %d", n, last)
}

// spread FILE PATH MIN MAX DISTINCT: over the NDJSON lines of FILE, the numbers at gjson PATH
// all lie in [MIN, MAX] and take at least DISTINCT different values.
func cmdSpread(ts *testscript.TestScript, neg bool, args []string) {
	noNegation(ts, neg, "spread")
	if len(args) != 5 {
		ts.Fatalf("usage: spread FILE PATH MIN MAX DISTINCT")
	}
	lo, err1 := strconv.ParseFloat(args[2], 64)
	hi, err2 := strconv.ParseFloat(args[3], 64)
	distinct, err3 := strconv.Atoi(args[4])
	if err1 != nil || err2 != nil || err3 != nil {
		ts.Fatalf("spread: bad numbers")
	}
	seen := map[float64]bool{}
	for _, line := range strings.Split(strings.TrimSpace(ts.ReadFile(args[0])), "\n") {
		v := gjson.Get(line, args[1]).Float()
		if v < lo || v > hi {
			ts.Fatalf("%s %s = %v, out of [%v, %v]", args[0], args[1], v, lo, hi)
		}
		seen[v] = true
	}
	ts.Logf("%d distinct values of %s", len(seen), args[1])
	if len(seen) < distinct {
		ts.Fatalf("only %d distinct values of %s, want at least %d", len(seen), args[1], distinct)
	}
}

// ptyclose PATTERN PROG ARGS...: run PROG on a new terminal as its controlling tty, wait until
// its output matches PATTERN, then close the terminal (the kernel hangs up on it), and wait
// for PROG to end.
func cmdPtyClose(ts *testscript.TestScript, neg bool, args []string) {
	noNegation(ts, neg, "ptyclose")
	if len(args) < 2 {
		ts.Fatalf("usage: ptyclose PATTERN PROG [ARGS...]")
	}
	re, err := regexp.Compile(args[0])
	ts.Check(err)
	cmd := scriptCommand(ts, args[1:])
	tty, err := pty.Start(cmd)
	ts.Check(err)
	var out bytes.Buffer
	buf := make([]byte, 4096)
	deadline := time.Now().Add(10 * time.Second)
	for !re.Match(out.Bytes()) {
		if time.Now().After(deadline) {
			tty.Close()
			cmd.Process.Kill()
			cmd.Wait()
			ts.Fatalf("no match for %q on the terminal; it showed:\n%s", args[0], out.String())
		}
		n, err := tty.Read(buf)
		out.Write(buf[:n])
		if err != nil {
			break
		}
	}
	ts.Logf("terminal showed:\n%s", out.String())
	tty.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		ts.Logf("%s ended: %v", args[1], err)
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		ts.Fatalf("%s still runs 10s after its terminal closed", args[1])
	}
}

// tty PROG ARGS...: run PROG with a new terminal as its stdin, stdout and stderr, and take what
// the terminal showed (line ends as \n) as its stdout, for stdout to check. It fails when PROG
// fails, unless negated.
func cmdTTY(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 {
		ts.Fatalf("usage: tty PROG [ARGS...]")
	}
	cmd := scriptCommand(ts, args)
	tty, err := pty.Start(cmd)
	ts.Check(err)
	done := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(tty) // EIO once PROG and all that shares the terminal are gone
		done <- b
	}()
	var out []byte
	select {
	case out = <-done:
	case <-time.After(pollLimit):
		cmd.Process.Kill()
		ts.Fatalf("%s still holds its terminal after %s", args[0], pollLimit)
	}
	tty.Close()
	err = cmd.Wait()
	fmt.Fprint(ts.Stdout(), strings.ReplaceAll(string(out), "\r\n", "\n"))
	if (err != nil) != neg {
		ts.Fatalf("%s on a terminal: %v", args[0], err)
	}
}

// scriptCommand is PROG ARGS... as exec runs it in the script: found on the script's PATH, in
// $WORK, with the script's values of the variables agt and the harness read, and none of the
// AGT_ settings of the environment the tests run in.
func scriptCommand(ts *testscript.TestScript, args []string) *exec.Cmd {
	path, err := exec.LookPath(args[0])
	if err != nil {
		// testscript's own PATH, not the test process's.
		for _, dir := range filepath.SplitList(ts.Getenv("PATH")) {
			if p := filepath.Join(dir, args[0]); fileExists(p) {
				path, err = p, nil
				break
			}
		}
	}
	ts.Check(err)
	cmd := exec.Command(path, args[1:]...)
	cmd.Args[0] = args[0]
	cmd.Dir = ts.Getenv("WORK")
	// The test's own environment, without the agt settings of whoever runs the tests and
	// without what the script sets (or blanks).
	script := append([]string{"PATH", "HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "GORACE", testMarker,
		"AGT_AGENT", "AGT_MODEL", "AGT_BASE", "NO_COLOR"}, flagEnvVars()...)
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "AGT_") && !slices.Contains(script, k) {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	for _, k := range script {
		if v := ts.Getenv(k); v != "" {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	return cmd
}

// flagEnvVars are the environment variables that agt's flags read.
func flagEnvVars() []string {
	app := commands.New("test")
	var vars []string
	add := func(flags []cli.Flag) {
		for _, f := range flags {
			if e, ok := f.(interface{ GetEnvVars() []string }); ok {
				vars = append(vars, e.GetEnvVars()...)
			}
		}
	}
	add(app.Flags)
	for _, c := range app.Commands {
		add(c.Flags)
	}
	return vars
}

func fileExists(p string) bool { fi, err := os.Stat(p); return err == nil && !fi.IsDir() }

// fdcount PIDFILE save VAR | fdcount PIDFILE within VAR N: count the open descriptors of the
// process in PIDFILE; save the count in $VAR, or check it is at most $VAR+N. The count is the
// least of 100 looks over about half a second: a supervisor opens a few descriptors for a
// moment while it starts or sweeps a run, and a leak raises even the least.
func cmdFDCount(ts *testscript.TestScript, neg bool, args []string) {
	noNegation(ts, neg, "fdcount")
	if len(args) < 3 {
		ts.Fatalf("usage: fdcount PIDFILE save VAR | fdcount PIDFILE within VAR N")
	}
	pid := readPIDs(ts, args[0])[0]
	n := -1
	for i := 0; i < 100; i++ {
		entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		ts.Check(err)
		if n < 0 || len(entries) < n {
			n = len(entries)
		}
		time.Sleep(5 * time.Millisecond)
	}
	switch args[1] {
	case "save":
		ts.Setenv(args[2], strconv.Itoa(n))
		ts.Logf("pid %d has %d descriptors", pid, n)
	case "within":
		base, err1 := strconv.Atoi(ts.Getenv(args[2]))
		slack, err2 := strconv.Atoi(args[3])
		if err1 != nil || err2 != nil {
			ts.Fatalf("fdcount: bad numbers")
		}
		ts.Logf("pid %d has %d descriptors, %d before", pid, n, base)
		if n > base+slack {
			ts.Fatalf("pid %d has %d descriptors, more than %d+%d: a leak", pid, n, base, slack)
		}
	default:
		ts.Fatalf("fdcount: want save or within")
	}
}

// procs [-wait] N REGEXP: exactly N live processes started by this script have a command line
// (arguments joined by spaces) matching REGEXP; with -wait, wait until they do. A process in a
// sandbox knows its pid there alone, so scripts find it from outside by its command line.
func cmdProcs(ts *testscript.TestScript, neg bool, args []string) {
	noNegation(ts, neg, "procs")
	wait := len(args) > 0 && args[0] == "-wait"
	if wait {
		args = args[1:]
	}
	if len(args) != 2 {
		ts.Fatalf("usage: procs [-wait] N REGEXP")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	re, err := regexp.Compile(args[1])
	ts.Check(err)
	var found []string
	matching := func() bool {
		found = found[:0]
		for pid, cmd := range scriptProcs(ts, re) {
			found = append(found, fmt.Sprintf("%d %s", pid, cmd))
		}
		return len(found) == want
	}
	if wait {
		poll(ts, fmt.Sprintf("%d processes matching %s", want, args[1]), matching)
	} else if !matching() {
		ts.Fatalf("%d processes match %s, want %d:\n%s", len(found), args[1], want, strings.Join(found, "\n"))
	}
}

// nozombies PIDFILE: wait until the process in PIDFILE has no zombie children: it reaps what it
// adopted.
func cmdNoZombies(ts *testscript.TestScript, neg bool, args []string) {
	noNegation(ts, neg, "nozombies")
	if len(args) != 1 {
		ts.Fatalf("usage: nozombies PIDFILE")
	}
	for _, pid := range readPIDs(ts, args[0]) {
		poll(ts, fmt.Sprintf("the zombie children of %d to be reaped", pid), func() bool {
			procs, err := pids.Scan()
			ts.Check(err)
			for _, p := range procs {
				if p.PPID == pid && p.State == 'Z' {
					return false
				}
			}
			return true
		})
	}
}

// plainAgt is agt built without the race detector, once per test process: a script that runs
// hundreds of supervisors needs their real size (a supervisor of the race-instrumented test
// binary takes ten times the memory).
var plainAgt = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "agt-plain-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "agt")
	cmd := exec.Command("go", "build", "-tags", "urfave_cli_no_docs", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build agt: %v\n%s", err, out)
	}
	return bin, nil
})

// plainagt VAR: build agt without the race detector (once) and set VAR to its path.
func cmdPlainAgt(ts *testscript.TestScript, neg bool, args []string) {
	noNegation(ts, neg, "plainagt")
	if len(args) != 1 {
		ts.Fatalf("usage: plainagt VAR")
	}
	bin, err := plainAgt()
	ts.Check(err)
	ts.Setenv(args[0], bin)
}
