package spawn

import (
	"agt/pids"
	"agt/state"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// watchGone returns a channel that closes when the agent's directory is removed or moved away
// (R10): a supervisor whose record is gone stops its agent instead of carrying on blind. It
// watches the parent directory (agents/) for entries deleted or moved out, and asks stillThere
// on each, so writes inside the agent's own directory never wake it. It costs one inotify
// descriptor (close-on-exec) and one blocked goroutine. nil when inotify is not available.
func watchGone(dir string, stillThere func() bool) <-chan struct{} {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		return nil
	}
	mask := uint32(unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF)
	if _, err := unix.InotifyAddWatch(fd, filepath.Dir(dir), mask); err != nil {
		unix.Close(fd)
		return nil
	}
	gone := make(chan struct{})
	go func() {
		defer unix.Close(fd)
		buf := make([]byte, 64<<10)
		for {
			n, err := unix.Read(fd, buf)
			if err == unix.EINTR {
				continue
			}
			if err != nil || n <= 0 || !stillThere() {
				close(gone)
				return
			}
		}
	}()
	return gone
}

// processName is what supervisors call themselves, in top and ps -o comm.
const processName = "agt-supervise"

// nestedSupervisor tells the supervisor of another agent, spawned from inside the one being
// swept, from the agent's own processes: a sweep spares it and what it runs (spawn_nested).
// Its name proves nothing (anything can call itself agt-supervise), and neither does its
// environment: it must run this very agt binary as `agt … supervise … NAME`, and be the
// process that the record NAME names in its supervisor.pid.
func nestedSupervisor(p pids.Proc) bool {
	if p.Comm != processName {
		return false
	}
	proc := "/proc/" + strconv.Itoa(p.PID)
	exe, err := os.Stat(proc + "/exe")
	if err != nil {
		return false
	}
	self, err := os.Stat("/proc/self/exe")
	if err != nil || !os.SameFile(exe, self) {
		return false
	}
	b, err := state.ReadSmall(proc + "/cmdline")
	if err != nil {
		return false
	}
	argv := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
	if len(argv) < 4 || argv[1] != "--run-dir" || !slices.Contains(argv, "supervise") {
		return false
	}
	root, name := argv[2], argv[len(argv)-1]
	if state.ValidateName(name) != nil {
		return false
	}
	line, err := state.ReadSmall((&state.Dir{Root: root}).AgentFile(name, state.SupervisorPIDFile))
	if err != nil {
		return false
	}
	id, err := pids.Parse(string(line))
	return err == nil && id == p.Identity
}

// setProcessName sets the name that top and ps -o comm show (at most 15 bytes): that of the
// main thread, which /proc/self/comm names.
func setProcessName(name string) {
	os.WriteFile("/proc/self/comm", []byte(name), 0)
}
