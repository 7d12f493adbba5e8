// Command floor is the baseline that bench/run.sh times `agt ps --json` against: the least a Go
// program can do to list agents, which is to read and JSON-decode every agents/*/status.json of
// a run directory and print one line per agent. It takes no lock and checks no process.
//
// Usage: floor RUNDIR
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// status holds the fields of status.json that a listing shows.
type status struct {
	Name     string    `json:"name"`
	Kind     string    `json:"kind"`
	State    string    `json:"state"`
	Reason   string    `json:"reason"`
	PID      int       `json:"pid"`
	Started  time.Time `json:"started"`
	Updated  time.Time `json:"updated"`
	Since    time.Time `json:"since"`
	Restarts int       `json:"restarts"`
	ExitCode *int      `json:"exit_code"`
	Dir      string    `json:"dir"`
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: floor RUNDIR")
		os.Exit(2)
	}
	agents := filepath.Join(os.Args[1], "agents")
	entries, err := os.ReadDir(agents)
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
	w := bufio.NewWriter(os.Stdout)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(agents, e.Name(), "status.json"))
		if err != nil {
			continue
		}
		var s status
		if err := json.Unmarshal(b, &s); err != nil {
			continue
		}
		fmt.Fprintln(w, s.Name, s.State, s.PID)
	}
	if err := w.Flush(); err != nil {
		os.Exit(1)
	}
}
