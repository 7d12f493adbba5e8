package state

import (
	"context"
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// SpawnLockFile is the run directory's lock that spawns hold while they count live agents and
// reserve a name, so that a cap on live agents holds under concurrent spawns.
const SpawnLockFile = "spawn.lock"

// LockSpawns takes the run directory's spawn lock, waiting for other spawns (each holds it for
// the few milliseconds a start takes) until ctx ends. The returned function lets it go.
func (d *Dir) LockSpawns(ctx context.Context) (func(), error) {
	path := filepath.Join(d.Root, SpawnLockFile)
	fd, err := openFD(path, unix.O_RDWR|unix.O_CREAT, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock spawns: %w", err)
	}
	if err := flockWait(ctx, fd); err != nil {
		unix.Close(fd)
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { unix.Close(fd) }, nil
}
