package state

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// The end lock tells readers that an agent's end is known though status.json cannot say so
// (R38): a full disk. A supervisor holds, beside its flock on supervisor.lock, an
// open-file-description write lock on the file's second byte from its start; it lets go of it
// when the disk refuses the end of its agent, known in memory, and keeps the flock while it
// writes the end again. A reader that finds the supervisor alive and the end lock free asks it
// for the status it holds (over the control channel). Neither lock takes disk space. Elsewhere
// the end lock goes with the flock, when the supervisor exits: waiting on it is waiting for
// the end, either way. On Linux, flock and fcntl locks never conflict: the two are independent.

// endByte is the byte of supervisor.lock that the end lock covers.
const endByte = 1

func endLock(typ int16) *unix.Flock_t {
	return &unix.Flock_t{Type: typ, Whence: 0, Start: endByte, Len: 1}
}

// HoldEnd takes the end lock: the agent's end is not known. It waits for readers, who hold
// it shared for a moment only.
func (l *Lock) HoldEnd() error {
	for {
		err := unix.FcntlFlock(uintptr(l.fd), unix.F_OFD_SETLKW, endLock(unix.F_WRLCK))
		if err != unix.EINTR {
			if err != nil {
				return fmt.Errorf("end lock of %s: %w", l.a.Name, err)
			}
			return nil
		}
	}
}

// EndKnown lets go of the end lock: the agent's end is known, the disk refuses it, and the
// supervisor answers with it over the control channel until status.json holds it.
func (l *Lock) EndKnown() {
	if l.fd >= 0 {
		unix.FcntlFlock(uintptr(l.fd), unix.F_OFD_SETLK, endLock(unix.F_UNLCK))
	}
}

// Liveness reports whether a supervisor holds the agent's lock, and whether it has let go of
// the end lock then: the end is known, but status.json does not hold it. It costs Supervised's
// system calls and one more.
func (a *Agent) Liveness() (supervised, endKnown bool) {
	fd, err := openFD(a.Path(LockFile), unix.O_RDONLY, 0)
	if err != nil {
		return false, false
	}
	defer unix.Close(fd)
	for {
		err = unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB)
		if err != unix.EINTR {
			break
		}
	}
	if err != unix.EWOULDBLOCK {
		return false, false
	}
	lk := endLock(unix.F_RDLCK)
	if unix.FcntlFlock(uintptr(fd), unix.F_OFD_GETLK, lk) != nil {
		return true, false
	}
	return true, lk.Type == unix.F_UNLCK
}

// WaitEndKnown blocks until the agent's end lock is free: its supervisor is gone, or it knows
// an end the disk refuses, or it never held the lock (one of an older agt, or a reap holding
// the flock: the caller reads the status to tell). It does not poll; like WaitFree, a cancelled wait leaves a
// goroutine blocked until the lock frees.
func (a *Agent) WaitEndKnown(ctx context.Context) error {
	fd, err := openFD(a.Path(LockFile), unix.O_RDONLY, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("wait for %s: %w", a.Name, err)
	}
	// Taken shared and let go of at once (the close), so that a new supervisor takes it
	// right after.
	return a.waitLocked(ctx, fd, func() error {
		return unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLKW, endLock(unix.F_RDLCK))
	})
}
