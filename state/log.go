package state

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
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

// isObject reports whether line (without its '\n') is one JSON object.
func isObject(line []byte) bool {
	i := 0
	for i < len(line) && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r') {
		i++
	}
	return i < len(line) && line[i] == '{' && gjson.ValidBytes(line)
}

// lineReader cuts a growing file into complete lines. A partial last line stays buffered until
// its '\n' arrives; lines of any length are read whole.
type lineReader struct {
	r          io.Reader
	buf        []byte
	start, end int   // pending bytes are buf[start:end]
	scan       int   // buf[start:scan] holds no '\n'
	off        int64 // file offset of buf[start], just past the last complete line
	broken     int   // complete lines that were not JSON objects
}

// drain reads to the current end of the file, calling fn for every complete line that is a
// JSON object, '\n' included. It stops at the first error from fn, with off before that line.
func (lr *lineReader) drain(fn func(line []byte) error) error {
	for {
		for {
			i := bytes.IndexByte(lr.buf[lr.scan:lr.end], '\n')
			if i < 0 {
				lr.scan = lr.end
				break
			}
			next := lr.scan + i + 1
			line := lr.buf[lr.start:next]
			if isObject(line[:len(line)-1]) {
				if err := fn(line); err != nil {
					return err
				}
			} else {
				lr.broken++
			}
			lr.off += int64(len(line))
			lr.start, lr.scan = next, next
		}
		switch {
		case lr.start == lr.end && len(lr.buf) != blockSize:
			lr.buf = make([]byte, blockSize) // also gives back the memory of a huge line
			lr.start, lr.scan, lr.end = 0, 0, 0
		case lr.start > 0:
			n := copy(lr.buf, lr.buf[lr.start:lr.end])
			lr.scan -= lr.start
			lr.start, lr.end = 0, n
		case lr.end == len(lr.buf):
			buf := make([]byte, 2*len(lr.buf))
			copy(buf, lr.buf[:lr.end])
			lr.buf = buf
		}
		n, err := lr.r.Read(lr.buf[lr.end:])
		lr.end += n
		if err != nil && err != io.EOF {
			return err
		}
		if n == 0 {
			return nil
		}
	}
}

// ReadLog calls fn for every complete line of the log at path that is a JSON object, in order,
// with the line's '\n'; the slice is valid only during the call. It returns the offset just past
// the last complete line and how many complete lines were skipped as broken. A partial last
// line is not passed on. A missing file is an empty log. An error from fn stops the read and is
// returned as is, with offset before that line.
func ReadLog(path string, fn func(line []byte) error) (offset int64, broken int, err error) {
	f, lr, err := readLog(path, fn)
	if f != nil {
		f.Close()
	}
	if lr == nil {
		return 0, 0, err
	}
	return lr.off, lr.broken, err
}

// readLog opens path and hands every complete line to fn. The file is nil when the log does
// not exist; the reader, when not nil, says how far it got.
func readLog(path string, fn func(line []byte) error) (*os.File, *lineReader, error) {
	f, err := OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	lr := &lineReader{r: f}
	return f, lr, lr.drain(fn)
}

// ReadLogBack calls fn for the complete lines of the log at path that are JSON objects, from
// the last one back to the first, until fn returns false; the slice is valid only during the
// call. It reads the file backwards a block at a time, so a reader of the last few events
// reads only the end of a log of any size. It returns a cursor just past the last complete
// line, for FollowLogFrom; nil, nil when the log does not exist.
func ReadLogBack(path string, fn func(line []byte) bool) (*Cursor, error) {
	f, err := OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return readBack(f, fn)
}

// ReadRotatedBack is ReadLogBack over the rotated logs of path, newest first, until fn returns
// false. A rotation during the read can show a file twice: callers skip seqs they saw.
func ReadRotatedBack(path string, fn func(line []byte) bool) error {
	files := rotatedLogs(path)
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for i, f := range files {
		more := true
		c, err := readBack(f, func(line []byte) bool {
			more = fn(line)
			return more
		})
		files[i] = nil // readBack closes it on error; c holds it otherwise
		c.Close()
		if err != nil {
			return err
		}
		if !more {
			return nil
		}
	}
	return nil
}

// readBack is ReadLogBack on an open file, which the cursor takes over.
func readBack(f *os.File, fn func(line []byte) bool) (*Cursor, error) {
	path := f.Name()
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	fd := int(f.Fd())
	end, err := completeEnd(fd, fi.Size())
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	c := &Cursor{f: f, off: end}
	if end == 0 {
		return c, nil
	}
	_, err = lastLine(fd, end, 0, func(line []byte) bool {
		if !isObject(line) {
			return false
		}
		if c.seq == 0 {
			c.seq = lineSeq(line)
		}
		return !fn(line)
	})
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return c, nil
}

// completeEnd returns the offset just past the last '\n' of a file of size bytes, 0 when it
// has none: where its complete lines end.
func completeEnd(fd int, size int64) (int64, error) {
	var blk []byte
	for end := size; end > 0; {
		start := max(0, end-blockSize)
		if blk == nil {
			blk = make([]byte, min(blockSize, size))
		}
		b := blk[:end-start]
		if err := preadFull(fd, b, start); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			return start + int64(i) + 1, nil
		}
		end = start
	}
	return 0, nil
}

// lineSeq returns the seq of an event line, 0 when it has none.
func lineSeq(line []byte) int64 {
	return gjson.GetBytes(line, "seq").Int()
}

// Cursor is a place in one log file: the file as it was read, open, and the offset just past
// its last complete line. A follower started from it goes on in that very file, even when the
// log was rotated since, so no line falls between reading and following.
type Cursor struct {
	f   *os.File
	off int64
	seq int64 // of the last complete line, 0 when unknown
}

// Seq returns the seq of the last complete line of the cursor's file as read, 0 when unknown.
func (c *Cursor) Seq() int64 {
	if c == nil {
		return 0
	}
	return c.seq
}

// SameFile reports whether the cursor's file is the one fi describes (a rotated log, say).
func (c *Cursor) SameFile(fi os.FileInfo) bool {
	if c == nil || c.f == nil {
		return false
	}
	held, err := c.f.Stat()
	return err == nil && os.SameFile(held, fi)
}

// Close lets go of the file.
func (c *Cursor) Close() {
	if c != nil && c.f != nil {
		c.f.Close()
		c.f = nil
	}
}

// ReadLogCursor is ReadLog that keeps the file open for FollowLogFrom. The cursor is nil when
// the log does not exist yet.
func ReadLogCursor(path string, fn func(line []byte) error) (*Cursor, int, error) {
	f, lr, err := readLog(path, fn)
	switch {
	case f == nil:
		return nil, 0, err
	case err != nil:
		f.Close()
		return nil, lr.broken, err
	}
	c := &Cursor{f: f, off: lr.off}
	if lr.off > 0 {
		c.seq, _ = scanLastSeq(int(f.Fd()), lr.off)
	}
	return c, lr.broken, nil
}

// rotatedLogs opens the rotated logs of path, newest first (events.ndjson.1, .2, …), each
// once: a file seen twice because a rotation moved it during the look is left out. The caller
// closes them. Files that are links or not regular are skipped.
func rotatedLogs(path string) []*os.File {
	var files []*os.File
	var seen []os.FileInfo
	for k := 1; k <= maxRotations; k++ {
		f, err := OpenFile(RotatedPath(path, k), os.O_RDONLY, 0)
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			continue
		}
		fi, err := f.Stat()
		if err != nil || slices.ContainsFunc(seen, func(s os.FileInfo) bool { return os.SameFile(s, fi) }) {
			f.Close()
			continue
		}
		seen = append(seen, fi)
		files = append(files, f)
	}
	return files
}

// testOnlyAfterDrain, when set, runs in FollowLogFrom between reading the held file to its end
// and looking for a rotation: where a writer that rotates races the follower.
var testOnlyAfterDrain func()

// drainAgain tells FollowLogFrom's loop that the file changed under it and another drain is due.
var drainAgain = errors.New("drain again")

// FollowLogFrom calls fn, like ReadLog, for every complete line of the log at path from where
// ReadLogCursor left off, in the file it read, including lines appended later; it takes over
// the cursor (and closes it). A nil cursor follows the log from its start, which need not exist
// yet. It waits on inotify events of the log's directory, with a 1 s ticker as a fallback.
// After each drain it calls done; once done reports true it drains once more and returns nil.
// It returns ctx.Err() when ctx is cancelled and any error from fn or gap as is. The slice fn
// gets is valid only during the call.
//
// Across a rotation it reads the file it held to its end once more (a line written just
// before the rename is there), then every file rotated since, oldest first, then the new log.
// A line whose seq it passed on already is not passed again. When the follower fell further
// behind than the rotated files kept, the events between are gone: it calls gap (when not nil)
// with the first and last seq it missed, before the next line.
func FollowLogFrom(ctx context.Context, path string, c *Cursor, fn func(line []byte) error, gap func(from, to int64) error, done func() bool) error {
	var events <-chan fsnotify.Event
	var errs <-chan error
	if w, err := fsnotify.NewWatcher(); err == nil {
		defer w.Close()
		err := w.Add(filepath.Dir(path))
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("follow %s: %w", path, err)
		}
		if err == nil {
			events, errs = w.Events, w.Errors
		}
		// Otherwise (inotify limits reached) the ticker alone drives the loop.
	}
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()

	var f *os.File
	var lr *lineReader
	var last int64    // the seq of the last line passed on, 0 before the first
	var switched bool // a file other than the one held is being read: check its first seq
	if c != nil && c.f != nil {
		// Back to the end of the last complete line: a partial one was read but held back.
		if _, err := c.f.Seek(c.off, io.SeekStart); err != nil {
			c.Close()
			return err
		}
		f, lr, last = c.f, &lineReader{r: c.f, off: c.off}, c.seq
		c.f = nil
	}
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	pass := func(line []byte) error {
		seq := lineSeq(line)
		if seq > 0 {
			if seq <= last {
				return nil // passed on already: a file read twice across rotations
			}
			if switched && last > 0 && seq > last+1 && gap != nil {
				if err := gap(last+1, seq-1); err != nil {
					return err
				}
			}
			switched, last = false, seq
		}
		return fn(line)
	}
	// rotated reads the files rotated between held and next (both excluded), oldest first.
	rotated := func(held, next os.FileInfo) error {
		files := rotatedLogs(path)
		defer func() {
			for _, rf := range files {
				rf.Close()
			}
		}()
		// Newest first: skip those newer than next (rotations since next was opened), stop
		// at held. Without held among them, the follower fell behind: all of them, then a gap.
		var between []*os.File
		for _, rf := range files {
			fi, err := rf.Stat()
			if err != nil {
				continue
			}
			if os.SameFile(fi, held) {
				break
			}
			if os.SameFile(fi, next) {
				between = between[:0]
				continue
			}
			between = append(between, rf)
		}
		for i := len(between) - 1; i >= 0; i-- {
			switched = true
			if err := (&lineReader{r: between[i]}).drain(pass); err != nil {
				return err
			}
		}
		return nil
	}
	drain := func() error {
		if f == nil {
			var err error
			f, err = OpenFile(path, os.O_RDONLY, 0)
			if errors.Is(err, fs.ErrNotExist) {
				f = nil
				return nil
			}
			if err != nil {
				f = nil
				return fmt.Errorf("follow: %w", err)
			}
			lr = &lineReader{r: f}
		}
		if err := lr.drain(pass); err != nil {
			return err
		}
		if testOnlyAfterDrain != nil {
			testOnlyAfterDrain()
		}
		// Rotated: read the rest of the old file, the ones between, go on with the new one
		// from its start. Truncated (smaller than what we read): start again from the top.
		now, err1 := os.Lstat(path)
		held, err2 := f.Stat()
		switch {
		case err1 != nil || err2 != nil:
		case !os.SameFile(now, held):
			// Every write to the held file came before the rename we see.
			if err := lr.drain(pass); err != nil {
				return err
			}
			// The new log is opened before the rotated ones are listed, so a rotation
			// meanwhile shows as a file newer than it, read in its turn.
			next, err := OpenFile(path, os.O_RDONLY, 0)
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil // between the rename and the new file: the next drain sees it
				}
				return fmt.Errorf("follow: %w", err)
			}
			nextInfo, err := next.Stat()
			if err == nil {
				err = rotated(held, nextInfo)
			}
			if err != nil {
				next.Close()
				return err
			}
			f.Close()
			f, lr, switched = next, &lineReader{r: next}, true
			return drainAgain
		case held.Size() < lr.off:
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				return err
			}
			lr = &lineReader{r: f}
			return drainAgain
		}
		return nil
	}

	drainAll := func() error {
		for {
			err := drain()
			if err != drainAgain {
				return err
			}
			if err := ctx.Err(); err != nil {
				return err
			}
		}
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := drainAll(); err != nil {
			return err
		}
		if done() {
			return drainAll()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case _, ok := <-events:
			if !ok {
				events = nil
			}
			// Take the whole burst (a status rewrite alone makes three events), then drain once.
			for more := true; more && events != nil; {
				select {
				case _, ok := <-events:
					if !ok {
						events = nil
					}
				default:
					more = false
				}
			}
		case _, ok := <-errs:
			// A queue overflow loses events, not data: the drain below reads everything.
			if !ok {
				errs = nil
			}
		case <-ticker.C:
		}
	}
}
