package state

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// WaitFree blocks until nobody holds the agent's supervisor lock, that is until its supervisor
// has written the final status and exited, or ctx ends. It does not poll: a shared flock blocks
// in the kernel and is let go of at once, so a new supervisor can take the lock right after.
func (a *Agent) WaitFree(ctx context.Context) error {
	fd, err := openFD(a.Path(LockFile), unix.O_RDONLY, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("wait for %s: %w", a.Name, err)
	}
	if unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB) == nil {
		unix.Close(fd)
		return nil
	}
	return a.waitLocked(ctx, fd, func() error { return unix.Flock(fd, unix.LOCK_SH) })
}

// waitLocked waits until lock, a blocking lock on fd, is taken (EINTR tried again), then closes
// fd, which lets go of it. Closing fd from the other side does not interrupt the lock: on
// cancel the goroutine stays blocked until the lock frees, then closes the descriptor.
func (a *Agent) waitLocked(ctx context.Context, fd int, lock func() error) error {
	done := make(chan error, 1)
	go func() {
		var err error
		for {
			if err = lock(); err != unix.EINTR {
				break
			}
		}
		unix.Close(fd)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("wait for %s: %w", a.Name, err)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
