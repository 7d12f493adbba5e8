package state

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// SpawnLockFile is the run directory's lock that spawns hold while they count live agents and
// reserve a name, so that a cap on live agents holds under concurrent spawns.
const SpawnLockFile = "spawn.lock"

// LockSpawns takes the run directory's spawn lock, waiting for other spawns (each holds it for
// the few milliseconds a start takes) until ctx ends. The returned function lets it go.
func (d *Dir) LockSpawns(ctx context.Context) (func(), error) {
	path := filepath.Join(d.Root, SpawnLockFile)
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open spawn lock %s: %w", path, err)
	}
	for {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { unix.Close(fd) }, nil
		}
		if err != unix.EWOULDBLOCK && err != unix.EINTR {
			unix.Close(fd)
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			unix.Close(fd)
			return nil, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}
