package pids

import "strings"

// ReadProc returns process pid as /proc/PID/stat describes it, zombies included (see State);
// ErrGone when there is no such process.
func ReadProc(pid int) (Proc, error) { return readProc(pid) }

// EnvValue returns the value of the variable name in the environment of process pid, and
// whether it has one. A process whose environment the caller may not read has none.
func EnvValue(pid int, name string) (string, bool) {
	if pid <= 0 || name == "" || strings.Contains(name, "=") {
		return "", false
	}
	e := envEntry(pid, name+"=")
	if e == "" {
		return "", false
	}
	return e[len(name)+1:], true
}
