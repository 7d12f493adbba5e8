package state

// The readers of the event log: whole, backwards from its end, and followed across rotations.

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
	"time"

	"github.com/tidwall/gjson"
)

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
// yet. It waits on inotify events of the log's directory (one instance for all followers of
// the process: watchDir), with a 1 s ticker as a fallback.
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
	return followLog(ctx, path, c, nil, fn, gap, done)
}

// FollowLogWoken is FollowLogFrom without a watch of its own: it drains when wake delivers,
// and the caller signals wake whenever the log grew or rotated (a Watcher's Logged). A server
// that already watches the run directory so adds no inotify watch per reader (R31). It never
// polls: a wake that does not come is a drain that does not happen.
func FollowLogWoken(ctx context.Context, path string, c *Cursor, wake <-chan struct{}, fn func(line []byte) error, gap func(from, to int64) error, done func() bool) error {
	if wake == nil {
		return errors.New("follow " + path + ": no wake channel")
	}
	return followLog(ctx, path, c, wake, fn, gap, done)
}

// followLog is FollowLogFrom, woken by wake when it is not nil, else by the process's one
// inotify instance (watchDir) and a ticker.
func followLog(ctx context.Context, path string, c *Cursor, wake <-chan struct{}, fn func(line []byte) error, gap func(from, to int64) error, done func() bool) error {
	var changed <-chan struct{}
	var tick <-chan time.Time
	if wake == nil {
		// Without a watch (inotify limits reached) the ticker alone drives the loop.
		ch, unwatch, err := watchDir(filepath.Dir(path))
		if err != nil {
			return fmt.Errorf("follow %s: %w", path, err)
		}
		defer unwatch()
		ticker := time.NewTicker(time.Second)
		defer ticker.Stop()
		changed, tick = ch, ticker.C
	}

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
		case <-changed: // a burst of events is one wake: the drain reads everything
		case <-tick:
		case <-wake:
		}
	}
}
