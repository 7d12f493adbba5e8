package main

import (
	"fmt"
	"iter"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"agt/pids"
)

// inotifies REGEXP MAX: a process of this script whose command line matches REGEXP comes to
// hold an inotify instance, and then, over a few looks, never more than MAX.
func cmdInotifies(ts *testscript.TestScript, neg bool, args []string) {
	noNegation(ts, neg, "inotifies")
	if len(args) != 2 {
		ts.Fatalf("usage: inotifies REGEXP MAX")
	}
	re, err := regexp.Compile(args[0])
	ts.Check(err)
	most, err := strconv.Atoi(args[1])
	ts.Check(err)
	pid := 0
	poll(ts, "a process matching "+args[0]+" to watch with inotify", func() bool {
		for p := range scriptProcs(ts, re) {
			if inotifyCount(p) > 0 {
				pid = p
				return true
			}
		}
		return false
	})
	for i := 0; i < 30; i++ {
		if n := inotifyCount(pid); n > most {
			ts.Fatalf("pid %d holds %d inotify instances, more than %d", pid, n, most)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// inotifyCount is how many inotify instances process pid holds.
func inotifyCount(pid int) int {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, _ := os.ReadDir(dir)
	n := 0
	for _, fd := range fds {
		if l, err := os.Readlink(dir + "/" + fd.Name()); err == nil && l == "anon_inode:inotify" {
			n++
		}
	}
	return n
}

// scriptProcs yields the live processes this script started (they carry its marker) whose
// command line, arguments joined by spaces, matches re: pid and command line.
func scriptProcs(ts *testscript.TestScript, re *regexp.Regexp) iter.Seq2[int, string] {
	procs, err := pids.Scan()
	ts.Check(err)
	marker := testMarker + "=" + ts.Getenv(testMarker)
	return func(yield func(int, string) bool) {
		for _, p := range procs {
			if p.State == 'Z' || p.State == 'X' || !pids.HasEnv(p.PID, marker) {
				continue
			}
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.PID))
			if cmd := strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " ")); err == nil && re.MatchString(cmd) && !yield(p.PID, cmd) {
				return
			}
		}
	}
}
