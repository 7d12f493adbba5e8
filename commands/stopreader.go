package commands

import (
	"errors"

	"golang.org/x/sys/unix"
)

// stopReader reads a terminal that another process reads after this one (the shell, once agt
// attach ends), and can be stopped: after stop, read takes no more bytes from it, and a read
// that waits returns errStopped. What is typed then stays in the terminal for the next reader.
type stopReader struct {
	fd           int
	stopR, stopW int // a pipe: written to stop the reader
}

var errStopped = errors.New("stopped")

func newStopReader(fd int) (*stopReader, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, err
	}
	return &stopReader{fd: fd, stopR: p[0], stopW: p[1]}, nil
}

// read waits until fd has bytes to read, then reads them; errStopped once stop was called.
func (r *stopReader) read(buf []byte) (int, error) {
	fds := []unix.PollFd{{Fd: int32(r.stopR), Events: unix.POLLIN}, {Fd: int32(r.fd), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, -1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		if fds[0].Revents != 0 {
			return 0, errStopped // the stop wins over bytes that wait
		}
		if fds[1].Revents != 0 {
			n, err := unix.Read(r.fd, buf)
			if err == unix.EINTR || err == unix.EAGAIN {
				continue
			}
			if n <= 0 && err == nil {
				return 0, errors.New("end of input")
			}
			return max(n, 0), err
		}
	}
}

// stop makes read return errStopped, now and from then on.
func (r *stopReader) stop() { unix.Write(r.stopW, []byte{0}) }

// close frees the pipe, once no read runs.
func (r *stopReader) close() {
	unix.Close(r.stopR)
	unix.Close(r.stopW)
}
