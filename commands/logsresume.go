package commands

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"

	"agt/state"
)

// What agt logs -f over a link needs to go on where it stopped when the link drops: the agt on
// the host says first, on stderr, where what it prints starts (logsMark: the inode of the
// file and the offset in it), and a follow that resumes asks for that start and how many bytes
// came (--resume INODE:OFFSET:BYTES). A start in the current log or in the one rotated out
// once since is found; one rotated out twice is gone, and the host prints what it has.

// logsMark is the line that says where the printing starts, on stderr.
const logsMark = "agt: logs: from "

// rawPos is a place in a raw log: the file (by inode; 0 for the start of whatever is
// there, rotated copy first) and an offset in it.
type rawPos struct {
	ino uint64
	off int64
}

func (p rawPos) String() string { return fmt.Sprintf("%d:%d", p.ino, p.off) }

func inodeOf(f *os.File) uint64 {
	if f == nil {
		return 0
	}
	fi, err := f.Stat()
	if err != nil {
		return 0
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}

// parseResume reads --resume INODE:OFFSET:BYTES.
func parseResume(s string) (rawPos, int64, error) {
	f := strings.Split(s, ":")
	if len(f) == 3 {
		ino, e1 := strconv.ParseUint(f[0], 10, 64)
		off, e2 := strconv.ParseInt(f[1], 10, 64)
		n, e3 := strconv.ParseInt(f[2], 10, 64)
		if e1 == nil && e2 == nil && e3 == nil && off >= 0 && n >= 0 {
			return rawPos{ino, off}, n, nil
		}
	}
	return rawPos{}, 0, fmt.Errorf("--resume %q: want INODE:OFFSET:BYTES, numbers 0 or more", s)
}

// printResumed writes the log at path from start, after skip bytes of it, and returns the
// current log open at its end for a follower. When start's file is gone it writes all there
// is and says so, with the new start (a logsMark) on errw.
func printResumed(w, errw io.Writer, path string, start rawPos, skip int64) (*os.File, error) {
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
	case start.ino != 0 && start.ino == inodeOf(cur):
		_, err = cur.Seek(start.off, io.SeekStart)
		r = cur
	case start.ino != 0 && start.ino == inodeOf(old):
		_, err = old.Seek(start.off, io.SeekStart)
		r = io.MultiReader(old, orEmpty(cur))
	case start.ino == 0: // it started before there was a log
		r = io.MultiReader(orEmpty(old), orEmpty(cur))
	default:
		fmt.Fprintf(errw, "agt: logs: the log was rotated away twice while the link was down: what it held is lost\n")
		first := old
		if first == nil {
			first = cur
		}
		fmt.Fprintf(errw, "%s%s\n", logsMark, rawPos{inodeOf(first), 0})
		r, skip = io.MultiReader(orEmpty(old), orEmpty(cur)), 0
	}
	if err != nil {
		return cur, err
	}
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
