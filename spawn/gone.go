package spawn

import (
	"os"
	"path/filepath"

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

// processName is what supervisors call themselves, and how a sweep tells another agent's
// supervisor from the agent's own processes.
const processName = "agt-supervise"

// setProcessName sets the name that top and ps -o comm show (at most 15 bytes): that of the
// main thread, which /proc/self/comm names.
func setProcessName(name string) {
	os.WriteFile("/proc/self/comm", []byte(name), 0)
}
