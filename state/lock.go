package state

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// lockWait bounds how long Lock retries while someone else holds the lock: a reader's
// Supervised probe holds it shared for microseconds, a supervisor for its whole life.
const lockWait = 200 * time.Millisecond

// Lock is an exclusive flock on an agent's supervisor.lock. It is held until Close or until the
// process exits; the descriptor is close-on-exec, so the agent never inherits it.
type Lock struct {
	a  *Agent
	fd int
}

// Lock takes the agent's supervisor lock without blocking for long: when another process holds
// it for more than about 200 ms the error wraps ErrLocked.
func (a *Agent) Lock() (*Lock, error) {
	path := a.Path(LockFile)
	fd, err := openFD(path, unix.O_RDWR|unix.O_CREAT, 0o600)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, noAgent(a.Name)
		}
		return nil, fmt.Errorf("lock agent %s: %w", a.Name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), lockWait)
	err = flockWait(ctx, fd)
	cancel()
	if err != nil {
		unix.Close(fd)
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, &sentinelError{fmt.Sprintf("agent %q is locked by another process", a.Name), ErrLocked}
		}
		return nil, fmt.Errorf("lock agent %s: %w", a.Name, err)
	}
	l := &Lock{a: a, fd: fd}
	// The directory may have been removed (and even recreated) between open and flock: a lock
	// on a file no longer at its path guards nothing.
	if err := l.Check(); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return l, nil
}

// flockWait takes an exclusive flock on fd, trying again every 5 ms while another process holds
// it, until ctx ends (its error is returned then).
func flockWait(ctx context.Context, fd int) error {
	for {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		switch err {
		case nil:
			return nil
		case unix.EINTR:
			continue
		case unix.EWOULDBLOCK:
		default:
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Check reports an error when the locked file is no longer the one at the agent's lock path,
// because the agent's directory was removed or replaced. A supervisor calls it before trusting
// the directory again, and stops when it fails.
func (l *Lock) Check() error {
	if l.fd < 0 {
		return fmt.Errorf("lock of %s is closed", l.a.Name)
	}
	var held, onDisk unix.Stat_t
	if err := unix.Fstat(l.fd, &held); err != nil {
		return fmt.Errorf("check lock of %s: %w", l.a.Name, err)
	}
	err := unix.Stat(l.a.Path(LockFile), &onDisk)
	if errors.Is(err, unix.ENOENT) || err == nil && (held.Dev != onDisk.Dev || held.Ino != onDisk.Ino) {
		return fmt.Errorf("agent %s: directory %s was removed or replaced", l.a.Name, l.a.Dir)
	}
	if err != nil {
		return fmt.Errorf("check lock of %s: %w", l.a.Name, err)
	}
	return nil
}

// Close releases the lock. The lock file stays: unlinking it would let two processes lock two
// different files of the same name.
func (l *Lock) Close() error {
	if l.fd < 0 {
		return nil
	}
	err := unix.Close(l.fd)
	l.fd = -1
	if err != nil {
		return fmt.Errorf("unlock agent %s: %w", l.a.Name, err)
	}
	return nil
}

// Supervised reports whether some process holds the agent's supervisor lock, that is whether a
// supervisor is alive. It costs an open, an fstat, an flock and a close. A lock file that is a
// link or a FIFO is no supervisor's (one opens it only with O_NOFOLLOW and O_CREAT).
func (a *Agent) Supervised() bool {
	fd, err := openFD(a.Path(LockFile), unix.O_RDONLY, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	for {
		err = unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB)
		if err != unix.EINTR {
			break
		}
	}
	// On success the lock is free; closing fd releases our shared hold.
	return err == unix.EWOULDBLOCK
}
