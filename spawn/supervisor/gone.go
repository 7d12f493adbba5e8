package supervisor

import (
	"os"
	"os/signal"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// watchGone returns a channel that closes when the agent's directory is removed or moved away
// (R10): a supervisor whose record is gone stops its agent instead of carrying on blind. It
// watches the parent directory (agents/) for entries deleted or renamed, and asks stillThere
// on each, so writes inside the agent's own directory never wake it. It uses dnotify, a
// signal (SIGIO) on a directory descriptor, not inotify: inotify instances are limited per
// user (128 by default), and a thousand supervisors holding one each would leave none to the
// user's editor (issue 16). It costs one descriptor (close-on-exec), no thread and no wakeup
// until an entry of agents/ goes. nil when the kernel has no dnotify.
func watchGone(dir string, stillThere func() bool) <-chan struct{} {
	fd, err := unix.Open(filepath.Dir(dir), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, unix.SIGIO)
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_NOTIFY, dnDelete|dnRename|dnMultishot); err != nil {
		signal.Stop(sigs)
		unix.Close(fd)
		return nil
	}
	gone := make(chan struct{})
	go func() {
		for range sigs {
			if !stillThere() {
				signal.Stop(sigs)
				unix.Close(fd)
				close(gone)
				return
			}
		}
	}()
	return gone
}

// dnotify's events (linux/fcntl.h): an entry deleted, an entry renamed, and keep notifying.
const (
	dnDelete    = 0x00000008
	dnRename    = 0x00000010
	dnMultishot = 0x80000000
)

// setProcessName sets the name that top and ps -o comm show (at most 15 bytes): that of the
// main thread, which /proc/self/comm names.
func setProcessName(name string) {
	os.WriteFile("/proc/self/comm", []byte(name), 0)
}
