package state

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// Every file of an agent's directory is opened through openFD: never through a symbolic link
// (a link planted there must neither lead a write elsewhere nor create its target), never
// waiting on a FIFO (O_NONBLOCK makes the open itself return), and only when it is a regular
// file. Records are replaced by rename (replaceFile), which never follows a link either.

var (
	errSymlink    = errors.New("is a symbolic link, which agt never follows; remove it")
	errNotRegular = errors.New("is not a regular file (a FIFO or a device?); remove it")
)

// openFD opens path with flag (O_NOFOLLOW, O_NONBLOCK and O_CLOEXEC added) and checks that it
// is a regular file. The error is an *os.PathError
// that wraps the errno, so errors.Is(err, fs.ErrNotExist) still tells a missing file.
func openFD(path string, flag int, perm uint32) (int, error) {
	var fd int
	var err error
	for {
		fd, err = unix.Open(path, flag|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, perm)
		if err != unix.EINTR {
			break
		}
	}
	switch {
	case err == unix.ELOOP:
		return -1, &os.PathError{Op: "open", Path: path, Err: errSymlink}
	case err == unix.ENXIO:
		// A FIFO opened for writing with no reader.
		return -1, &os.PathError{Op: "open", Path: path, Err: errNotRegular}
	case err != nil:
		return -1, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return -1, &os.PathError{Op: "open", Path: path, Err: errNotRegular}
	}
	// O_NONBLOCK stays: on a regular file it changes nothing (reads and writes of a regular
	// file never return EAGAIN).
	return fd, nil
}

// OpenFile opens a file of the run directory as openFD does: never through a symbolic link,
// never waiting on a FIFO, only a regular file; flag and perm as for os.OpenFile. Writers of
// raw logs (stdout.log, supervisor.log) open them with it.
func OpenFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	fd, err := openFD(path, flag, uint32(perm.Perm()))
	if err != nil {
		return nil, err
	}
	// Blocking again, so that os.NewFile does not try the poller, which regular files refuse.
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}
