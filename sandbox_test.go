package main

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"agt/pids"
)

// waitprocs N REGEXP: wait until exactly N live processes started by this script have a
// command line matching REGEXP. A process in a sandbox knows its pid in the sandbox alone, so
// scripts find it from outside by its command line.
func cmdWaitProcs(ts *testscript.TestScript, neg bool, args []string) {
	noNegation(ts, neg, "waitprocs")
	if len(args) != 2 {
		ts.Fatalf("usage: waitprocs N REGEXP")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	re, err := regexp.Compile(args[1])
	ts.Check(err)
	marker := testMarker + "=" + ts.Getenv(testMarker)
	var found []string
	poll(ts, fmt.Sprintf("%d processes matching %s", want, args[1]), func() bool {
		procs, err := pids.Scan()
		ts.Check(err)
		found = found[:0]
		for _, p := range procs {
			if p.State == 'Z' || p.State == 'X' || !pids.HasEnv(p.PID, marker) {
				continue
			}
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.PID))
			if cmd := strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " ")); err == nil && re.MatchString(cmd) {
				found = append(found, fmt.Sprintf("%d %s", p.PID, cmd))
			}
		}
		return len(found) == want
	})
	ts.Logf("%d processes match %s: %s", len(found), args[1], strings.Join(found, "; "))
}
