package main

import (
	"fmt"
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
	marker := testMarker + "=" + ts.Getenv(testMarker)
	pid := 0
	poll(ts, "a process matching "+args[0]+" to watch with inotify", func() bool {
		procs, err := pids.Scan()
		ts.Check(err)
		for _, p := range procs {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.PID))
			cmd := strings.ReplaceAll(string(b), "\x00", " ")
			if err == nil && re.MatchString(cmd) && pids.HasEnv(p.PID, marker) && inotifyCount(p.PID) > 0 {
				pid = p.PID
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
