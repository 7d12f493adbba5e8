package state

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"sync"

	"github.com/tidwall/gjson"
	"golang.org/x/sys/unix"
)

// blockSize is the unit in which logs are read, forwards and backwards.
const blockSize = 64 << 10

// LogWriter appends lines to a log. It is the log's only writer: each line goes out in exactly
// one write(2) on a descriptor opened O_APPEND|O_CLOEXEC, so a line is never interleaved with
// another and a crash can tear only the last one. It is safe for concurrent use.
type LogWriter struct {
	path string
	mu   sync.Mutex
	fd   int
	torn bool  // the file ends inside a line after a short write
	size int64 // bytes in the file
	keep int   // rotated files Rotate keeps
}

// RotatedSuffix names the newest rotated log: events.ndjson.1. Older ones are .2, .3, …
const RotatedSuffix = ".1"

// KeptRotations is how many rotated event logs Rotate keeps unless told otherwise
// (KeepRotations): events.ndjson.1, the newest, to events.ndjson.3, so the events of the last
// three to four times log_max_size stay on disk, for readers and for followers that fell behind.
const KeptRotations = 3

// RotatedPath returns the path of the k-th rotated log of path, 1 being the newest.
func RotatedPath(path string, k int) string {
	return path + "." + strconv.Itoa(k)
}

// maxRotations bounds how many rotated files readers look for.
const maxRotations = 1000

// OpenLog opens (creating, 0600) the log at path for appending. It first ends a torn tail, left
// by a writer that died mid-line, with a newline, so the next line starts fresh. lastSeq is the
// "seq" of the last complete line that is a JSON object with a numeric seq, 0 when there is none.
func OpenLog(path string) (w *LogWriter, lastSeq int64, err error) {
	fd, err := openFD(path, unix.O_RDWR|unix.O_APPEND|unix.O_CREAT, 0o600)
	if err != nil {
		return nil, 0, err // it says open and the path
	}
	w = &LogWriter{path: path, fd: fd, keep: KeptRotations}
	defer func() {
		if err != nil {
			unix.Close(fd)
			err = fmt.Errorf("open log %s: %w", path, err)
		}
	}()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, 0, err
	}
	size := st.Size
	if size > 0 {
		last := make([]byte, 1)
		if err := preadFull(fd, last, size-1); err != nil {
			return nil, 0, err
		}
		if last[0] != '\n' {
			if err := w.write([]byte{'\n'}); err != nil {
				return nil, 0, fmt.Errorf("repair torn tail: %w", err)
			}
			size++
		}
	}
	lastSeq, err = scanLastSeq(fd, size)
	if err != nil {
		return nil, 0, err
	}
	w.size = size
	if lastSeq == 0 {
		// Just rotated: the sequence goes on from the previous file.
		if rfd, err := openFD(path+RotatedSuffix, unix.O_RDONLY, 0); err == nil {
			var rst unix.Stat_t
			if unix.Fstat(rfd, &rst) == nil {
				lastSeq, _ = scanLastSeq(rfd, rst.Size)
			}
			unix.Close(rfd)
		}
	}
	return w, lastSeq, nil
}

// Size returns the bytes in the log file.
func (w *LogWriter) Size() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.size
}

// KeepRotations sets how many rotated files Rotate keeps (at least 1; KeptRotations unless set).
func (w *LogWriter) KeepRotations(n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.keep = min(max(n, 1), maxRotations)
}

// Rotate shifts the rotated logs one up (.1 to .2, …, dropping the oldest beyond the number
// kept), renames the log to its RotatedSuffix name and starts a new, empty file at its path.
// Followers drain the old file before they switch, and read the files rotated in between
// (FollowLogFrom).
func (w *LogWriter) Rotate() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd < 0 {
		return fmt.Errorf("rotate %s: log is closed", w.path)
	}
	for k := w.keep; k >= 2; k-- {
		if err := os.Rename(RotatedPath(w.path, k-1), RotatedPath(w.path, k)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("rotate %s: %w", w.path, err)
		}
	}
	if err := os.Rename(w.path, w.path+RotatedSuffix); err != nil {
		return fmt.Errorf("rotate %s: %w", w.path, err)
	}
	fd, err := openFD(w.path, unix.O_RDWR|unix.O_APPEND|unix.O_CREAT, 0o600)
	if err != nil {
		return fmt.Errorf("rotate: %w", err)
	}
	unix.Close(w.fd)
	w.fd, w.size, w.torn = fd, 0, false
	return nil
}

// scanLastSeq returns the seq of the last event of a file of size bytes that ends in '\n', or 0.
func scanLastSeq(fd int, size int64) (int64, error) {
	line, err := lastLine(fd, size, 0, func(line []byte) bool {
		return isObject(line) && gjson.GetBytes(line, "seq").Type == gjson.Number
	})
	if line == nil {
		return 0, err
	}
	return gjson.GetBytes(line, "seq").Int(), nil
}

// LastLine returns the last line of the log at path (its '\n' left out) for which match is
// true, looking only at lines that start in its last limit bytes; nil when there is none.
// A partial last line is passed to match like the others.
func LastLine(path string, limit int64, match func(line []byte) bool) ([]byte, error) {
	fd, err := openFD(path, unix.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Size == 0 {
		return nil, err
	}
	line, err := lastLine(fd, st.Size, limit, match)
	return bytes.Clone(line), err
}

// lastLine reads backwards, a block at a time, from the end of a file of size bytes, and
// returns the last line for which match is true (valid until the next call), giving up on lines
// that start more than limit bytes before the end (0: no limit). A line longer than a block
// costs one more read once its start is found, not a copy per block.
func lastLine(fd int, size, limit int64, match func(line []byte) bool) ([]byte, error) {
	var blk []byte // cached file bytes [blkOff, blkOff+len(blk))
	var blkOff int64
	end := size + 1 // one past the '\n' ending the current line; the last may have none
	if last := make([]byte, 1); preadFull(fd, last, size-1) == nil && last[0] == '\n' {
		end = size
	}
	for end > 0 {
		// Find where the line ending at end-1 starts: one past the previous '\n', or 0.
		start := int64(0)
		for p := end - 1; p > 0; {
			if limit > 0 && p < size-limit {
				return nil, nil
			}
			if p <= blkOff || p > blkOff+int64(len(blk)) {
				blkOff = max(0, p-blockSize)
				if n := p - blkOff; int64(cap(blk)) >= n {
					blk = blk[:n]
				} else {
					blk = make([]byte, n)
				}
				if err := preadFull(fd, blk, blkOff); err != nil {
					return nil, err
				}
			}
			if i := bytes.LastIndexByte(blk[:p-blkOff], '\n'); i >= 0 {
				start = blkOff + int64(i) + 1
				break
			}
			p = blkOff
		}
		var line []byte
		if start >= blkOff && end-1 <= blkOff+int64(len(blk)) {
			line = blk[start-blkOff : end-1-blkOff]
		} else {
			line = make([]byte, end-1-start)
			if err := preadFull(fd, line, start); err != nil {
				return nil, err
			}
		}
		if match(line) {
			return line, nil
		}
		end = start
	}
	return nil, nil
}

func preadFull(fd int, b []byte, off int64) error {
	for len(b) > 0 {
		n, err := unix.Pread(fd, b, off)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return io.ErrUnexpectedEOF
		}
		b, off = b[n:], off+int64(n)
	}
	return nil
}

// Write appends line, which must end in '\n', in exactly one write(2). A short write is an
// error; the next Write then starts with a '\n' (in the same single write) to end the torn line.
func (w *LogWriter) Write(line []byte) error {
	if len(line) == 0 || line[len(line)-1] != '\n' {
		return fmt.Errorf("write %s: line does not end in a newline", w.path)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd < 0 {
		return fmt.Errorf("write %s: log is closed", w.path)
	}
	b := line
	if w.torn {
		b = make([]byte, 1+len(line))
		b[0] = '\n'
		copy(b[1:], line)
	}
	if err := w.write(b); err != nil {
		return fmt.Errorf("write %s: %w", w.path, err)
	}
	return nil
}

// write issues one write(2) of b and notes whether it left the file inside a line.
func (w *LogWriter) write(b []byte) error {
	var n int
	var err error
	for {
		n, err = unix.Write(w.fd, b)
		if err != unix.EINTR {
			break
		}
	}
	if n > 0 {
		w.torn = b[n-1] != '\n'
		w.size += int64(n)
	}
	if err != nil {
		return err
	}
	if n < len(b) {
		return fmt.Errorf("%w: %d of %d bytes", io.ErrShortWrite, n, len(b))
	}
	return nil
}

// Close closes the log.
func (w *LogWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd < 0 {
		return nil
	}
	err := unix.Close(w.fd)
	w.fd = -1
	if err != nil {
		return fmt.Errorf("close %s: %w", w.path, err)
	}
	return nil
}
