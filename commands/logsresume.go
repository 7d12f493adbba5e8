package commands

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"agt/state"
)

// What agt logs -f over a link needs to go on where it stopped when the link drops: the agt on
// the host says first, in a line before the log's bytes (logs --mark), where they start (the
// inode of the file and the offset in it) and how many of them after that it skipped; a
// follow that resumes asks for that start and how many bytes came (--resume
// INODE:BORN:OFFSET:BYTES). A start in the current log or in the one rotated out once since is
// found; one rotated out twice is gone, and the host prints what it has, from a new start.

// logsMark begins the line that says where the printing starts.
const logsMark = "agt-logs-from "

// rawPos is a place in a raw log: the file (by inode and birth time, as an inode is used
// again once freed; zero for the start of whatever is there, rotated copy first) and an
// offset in it.
type rawPos struct {
	id  fileID
	off int64
}

type fileID struct {
	ino  uint64
	born int64 // ns; 0 where the file system does not say
}

func (p rawPos) String() string { return fmt.Sprintf("%d:%d:%d", p.id.ino, p.id.born, p.off) }

func idOf(f *os.File) fileID {
	if f == nil {
		return fileID{}
	}
	var st unix.Statx_t
	if err := unix.Statx(int(f.Fd()), "", unix.AT_EMPTY_PATH, unix.STATX_INO|unix.STATX_BTIME, &st); err != nil {
		return fileID{}
	}
	id := fileID{ino: st.Ino}
	if st.Mask&unix.STATX_BTIME != 0 {
		id.born = st.Btime.Sec*1e9 + int64(st.Btime.Nsec)
	}
	return id
}

// parseResume reads --resume INODE:BORN:OFFSET:BYTES (and the mark, the same).
func parseResume(s string) (rawPos, int64, error) {
	f := strings.Split(s, ":")
	if len(f) == 4 {
		ino, e1 := strconv.ParseUint(f[0], 10, 64)
		born, e2 := strconv.ParseInt(f[1], 10, 64)
		off, e3 := strconv.ParseInt(f[2], 10, 64)
		n, e4 := strconv.ParseInt(f[3], 10, 64)
		if e1 == nil && e2 == nil && e3 == nil && e4 == nil && off >= 0 && n >= 0 {
			return rawPos{fileID{ino, born}, off}, n, nil
		}
	}
	return rawPos{}, 0, fmt.Errorf("--resume %q: want INODE:BORN:OFFSET:BYTES, numbers 0 or more", s)
}

// printResumed writes the log at path from start, after skip bytes of it, and returns the
// current log open at its end for a follower. When start's file is gone it writes all there
// is from a new start, and says so on errw. before is told where what it writes starts.
func printResumed(w, errw io.Writer, path string, start rawPos, skip int64, before func(rawPos, int64)) (*os.File, error) {
	cur, err := openRaw(path)
	if err != nil {
		return nil, err
	}
	old, err := openRaw(path + state.RotatedSuffix)
	if err != nil {
		old = nil
	}
	if old != nil {
		defer old.Close()
	}
	var r io.Reader
	switch {
	case start.id.ino != 0 && start.id == idOf(cur):
		_, err = cur.Seek(start.off, io.SeekStart)
		r = cur
	case start.id.ino != 0 && start.id == idOf(old):
		_, err = old.Seek(start.off, io.SeekStart)
		r = io.MultiReader(old, orEmpty(cur))
	case start.id.ino == 0: // it started before there was a log
		r = io.MultiReader(orEmpty(old), orEmpty(cur))
	default:
		fmt.Fprintf(errw, "agt: logs: the log was rotated away twice while the link was down: what it held is lost\n")
		first := old
		if first == nil {
			first = cur
		}
		start, skip = rawPos{idOf(first), 0}, 0
		r = io.MultiReader(orEmpty(old), orEmpty(cur))
	}
	if err != nil {
		return cur, err
	}
	before(start, skip)
	if _, err := io.CopyN(io.Discard, r, skip); err != nil && err != io.EOF {
		return cur, err
	}
	_, err = io.Copy(w, r)
	return cur, err
}

// orEmpty is f as a reader, or nothing for a nil file.
func orEmpty(f *os.File) io.Reader {
	if f == nil {
		return strings.NewReader("")
	}
	return f
}
