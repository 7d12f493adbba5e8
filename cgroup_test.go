package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"agt/pids"
)

// scriptCondition knows [cgroup]: this user can make a cgroup v2 here, so agents are contained;
// and [hosts]: the SSH hosts of the host_* scripts run.
func scriptCondition(cond string) (bool, error) {
	switch cond {
	case "cgroup":
		_, err := pids.CgroupBase()
		return err == nil, nil
	case "hosts":
		_, err := sshHostsFixture.get()
		return err == nil, nil
	case "swarm":
		_, err := swarmFixture.get()
		return err == nil, nil
	}
	return false, fmt.Errorf("unknown condition %q", cond)
}

// cgroupgone FILE: wait until the cgroup whose path FILE holds (an agent's record) is gone.
func cmdCgroupGone(ts *testscript.TestScript, neg bool, args []string) {
	noNegation(ts, neg, "cgroupgone")
	if len(args) != 1 {
		ts.Fatalf("usage: cgroupgone FILE")
	}
	path := strings.TrimSpace(ts.ReadFile(args[0]))
	if !strings.HasPrefix(filepath.Base(path), "agt-") {
		ts.Fatalf("%s names no cgroup of agt's: %q", args[0], path)
	}
	poll(ts, "cgroup "+path+" to be removed", func() bool {
		_, err := os.Stat(path)
		return os.IsNotExist(err)
	})
}

// endCgroups removes the cgroups the agents of a run directory left, once the script's
// processes are killed: a supervisor killed by the cleanup cannot.
func endCgroups(runDir string) {
	records, _ := filepath.Glob(filepath.Join(runDir, "agents", "*", "cgroup"))
	for _, r := range records {
		b, err := os.ReadFile(r)
		if err != nil {
			continue
		}
		if c, err := pids.OpenContainment(strings.TrimSpace(string(b))); err == nil {
			c.End(5 * time.Second)
		}
	}
}
