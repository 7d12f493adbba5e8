package main

// Script commands about processes: alive or gone, signals, descriptors, memory, zombies.

import (
	"agt/pids"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

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
	sigs := map[string]syscall.Signal{"KILL": syscall.SIGKILL, "TERM": syscall.SIGTERM, "SEGV": syscall.SIGSEGV, "INT": syscall.SIGINT,
		"STOP": syscall.SIGSTOP, "CONT": syscall.SIGCONT}
	sig, ok := sigs[args[0]]
	if !ok {
		ts.Fatalf("unknown signal %q", args[0])
	}
	for _, pid := range readPIDs(ts, args[1]) {
		ts.Check(syscall.Kill(pid, sig))
	}
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
// binary takes ten times the memory). It is built in plainDir, which TestMain removes.
var plainAgt = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "agt-plain-")
	if err != nil {
		return "", err
	}
	plainDir = dir
	bin := filepath.Join(dir, "agt")
	cmd := exec.Command("go", "build", "-tags", "urfave_cli_no_docs", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build agt: %v\n%s", err, out)
	}
	return bin, nil
})

var plainDir string

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
