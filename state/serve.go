package state

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// The files of agt serve live in the run directory's serve/ (0700): its token, its TLS pair when
// agt made one, the URL it serves, and a lock it holds for its life.
const (
	ServeDirName  = "serve"
	ServeToken    = "token"
	ServeCert     = "cert.pem"
	ServeKey      = "key.pem"
	ServeURLFile  = "url"
	ServeLockFile = "lock"
)

// ErrServing says another agt serve holds the run directory's serve lock.
var ErrServing = errors.New("another agt serve runs on this run directory")

// ServePath is the path of a file of agt serve; the directory is made (0700) when missing.
func (d *Dir) ServePath(file string) (string, error) {
	dir := filepath.Join(d.Root, ServeDirName)
	if err := ensureDir(dir); err != nil {
		return "", err
	}
	return filepath.Join(dir, file), nil
}

// LockServe takes the serve lock without waiting: one agt serve per run directory, so that
// the URL notifications carry is that of the one running. The returned function lets it go.
// When another holds it, the error wraps ErrServing.
func (d *Dir) LockServe() (func(), error) {
	path, err := d.ServePath(ServeLockFile)
	if err != nil {
		return nil, err
	}
	fd, err := openFD(path, unix.O_RDWR|unix.O_CREAT, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	for {
		err = unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		unix.Close(fd)
		if err == unix.EWOULDBLOCK {
			return nil, ErrServing
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { unix.Close(fd) }, nil
}

// ServeURL is the address of the page of the agt serve running on the run directory that
// holds agent a ("" when none runs): what a notification links to when [notify] link is not
// set. A URL left behind by an agt serve that was killed is not given: its lock is free.
func ServeURL(a *Agent) string {
	root := filepath.Dir(filepath.Dir(a.Dir))
	dir := filepath.Join(root, ServeDirName)
	fd, err := openFD(filepath.Join(dir, ServeLockFile), unix.O_RDONLY, 0)
	if err != nil {
		return ""
	}
	defer unix.Close(fd)
	for {
		err = unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB)
		if err != unix.EINTR {
			break
		}
	}
	if err != unix.EWOULDBLOCK {
		return "" // free: nobody serves
	}
	b, err := ReadSmall(filepath.Join(dir, ServeURLFile))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
