package state

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// readAll collects the lines ReadLog passes on.
func readAll(t *testing.T, path string) (lines []string, offset int64, broken int) {
	t.Helper()
	offset, broken, err := ReadLog(path, func(line []byte) error {
		lines = append(lines, string(line))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return lines, offset, broken
}

func event(seq int) string { return fmt.Sprintf(`{"v":1,"seq":%d,"type":"text"}`+"\n", seq) }

// newLog opens a new event log in a directory of its own, closed when the test ends.
func newLog(t *testing.T) (string, *LogWriter) {
	t.Helper()
	path := filepath.Join(t.TempDir(), EventsFile)
	w, _, err := OpenLog(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return path, w
}

// gapLine is how the tests' followers note a gap among the lines they got.
func gapLine(from, to int64) string { return fmt.Sprintf("gap %d-%d\n", from, to) }

func TestOpenLogRepairsTornTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), EventsFile)
	if err := os.WriteFile(path, []byte(event(1)+event(2)+`{"seq":3,"v":1`), 0o600); err != nil {
		t.Fatal(err)
	}
	w, lastSeq, err := OpenLog(path)
	if err != nil {
		t.Fatal(err)
	}
	if lastSeq != 2 {
		t.Errorf("lastSeq = %d, want 2", lastSeq)
	}
	if err := w.Write([]byte(event(3))); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	lines, _, broken := readAll(t, path)
	if want := []string{event(1), event(2), event(3)}; !reflect.DeepEqual(lines, want) || broken != 1 {
		t.Errorf("after repair: lines %q, broken %d; want %q, 1 broken", lines, broken, want)
	}
	// A second writer finds a clean tail and the new last seq.
	w, lastSeq, err = OpenLog(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if lastSeq != 3 {
		t.Errorf("reopened lastSeq = %d, want 3", lastSeq)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("log mode: %v, %v", fi, err)
	}
}

func TestOpenLogLastSeq(t *testing.T) {
	huge := `{"seq":7,"pad":"` + strings.Repeat("x", 3*blockSize) + `"}` + "\n"
	manyBroken := strings.Repeat("broken line\n", 3*blockSize/12)
	for _, tc := range []struct {
		desc, content string
		want          int64
	}{
		{"missing file", "", 0},
		{"one line", event(1), 1},
		{"last line wins", event(1) + event(5), 5},
		{"broken last line", event(4) + "{oops\n", 4},
		{"torn last line", event(4) + `{"seq":5`, 4},
		{"line without seq", event(4) + `{"v":1}` + "\n", 4},
		{"seq not a number", event(4) + `{"seq":"x"}` + "\n", 4},
		{"only garbage", "a\n\nb\n", 0},
		{"huge last line", event(6) + huge, 7},
		{"huge line then broken blocks", huge + manyBroken, 7},
		{"first line only", event(9) + manyBroken, 9},
		{"blank lines", event(2) + "\n\n\n", 2},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), EventsFile)
			if tc.content != "" {
				if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			w, lastSeq, err := OpenLog(path)
			if err != nil {
				t.Fatal(err)
			}
			w.Close()
			if lastSeq != tc.want {
				t.Errorf("lastSeq = %d, want %d", lastSeq, tc.want)
			}
		})
	}
}

func TestLogWriterWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), EventsFile)
	w, _, err := OpenLog(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", `{"seq":1}`} {
		if err := w.Write([]byte(bad)); err == nil {
			t.Errorf("Write(%q) succeeded", bad)
		}
	}
	if err := w.Write([]byte(event(1))); err != nil {
		t.Fatal(err)
	}
	flags, err := unix.FcntlInt(uintptr(w.fd), unix.F_GETFD, 0)
	if err != nil || flags&unix.FD_CLOEXEC == 0 {
		t.Errorf("log descriptor flags %#x, %v; want FD_CLOEXEC", flags, err)
	}
	w.Close()
	if err := w.Write([]byte(event(2))); err == nil {
		t.Error("Write after Close succeeded")
	}
	if b, _ := os.ReadFile(path); string(b) != event(1) {
		t.Errorf("log = %q", b)
	}
}

// TestLogWriterShortWrite points a LogWriter at a full non-blocking pipe to get a short write,
// and checks that the next line starts on a fresh line.
func TestLogWriterShortWrite(t *testing.T) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	size, err := unix.FcntlInt(uintptr(p[1]), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		t.Fatal(err)
	}
	w := &LogWriter{path: "pipe", fd: p[1]}
	defer w.Close()
	long := `{"pad":"` + strings.Repeat("x", 2*size) + `"}` + "\n"
	if err := w.Write([]byte(long)); !errors.Is(err, io.ErrShortWrite) {
		t.Fatalf("Write to a full pipe = %v, want a short write", err)
	}
	drained := make([]byte, size)
	if n, err := unix.Read(p[0], drained); err != nil || n != size {
		t.Fatalf("drain pipe: %d, %v", n, err)
	}
	if err := w.Write([]byte(event(2))); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 100)
	n, err := unix.Read(p[0], got)
	if err != nil {
		t.Fatal(err)
	}
	if want := "\n" + event(2); string(got[:n]) != want {
		t.Errorf("after a short write the pipe got %q, want %q", got[:n], want)
	}
}

func TestReadLog(t *testing.T) {
	oneMiB := `{"seq":3,"pad":"` + strings.Repeat("y", 1<<20) + `"}` + "\n"
	for _, tc := range []struct {
		desc, content string
		lines         []string
		broken        int
		offset        int
	}{
		{"empty", "", nil, 0, 0},
		{"complete lines", event(1) + event(2), []string{event(1), event(2)}, 0, 2 * len(event(1))},
		{"partial last line held", event(1) + `{"seq":2`, []string{event(1)}, 0, len(event(1))},
		{"complete object without newline held", event(1) + `{"seq":2}`, []string{event(1)}, 0, len(event(1))},
		{"broken lines skipped and counted", event(1) + "garbage\n\n[1,2]\n\"s\"\n{\"a\":\n" + event(2),
			[]string{event(1), event(2)}, 5, 2*len(event(1)) + 25},
		{"NUL and invalid UTF-8", "\x00\xff{}\n" + event(1), []string{event(1)}, 1, 5 + len(event(1))},
		{"1 MiB line", event(1) + oneMiB + event(4), []string{event(1), oneMiB, event(4)}, 0, 2*len(event(1)) + len(oneMiB)},
		{"1 MiB partial line", event(1) + oneMiB[:len(oneMiB)-1], []string{event(1)}, 0, len(event(1))},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), EventsFile)
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			lines, offset, broken := readAll(t, path)
			if !reflect.DeepEqual(lines, tc.lines) || broken != tc.broken || offset != int64(tc.offset) {
				t.Errorf("got %d lines, broken %d, offset %d; want %d lines, broken %d, offset %d",
					len(lines), broken, offset, len(tc.lines), tc.broken, tc.offset)
			}
		})
	}
}

func TestReadLogMissingFile(t *testing.T) {
	offset, broken, err := ReadLog(filepath.Join(t.TempDir(), "nope"), func([]byte) error {
		t.Error("fn called for a missing file")
		return nil
	})
	if offset != 0 || broken != 0 || err != nil {
		t.Errorf("ReadLog of a missing file = %d, %d, %v", offset, broken, err)
	}
}

func TestReadLogStopsOnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), EventsFile)
	if err := os.WriteFile(path, []byte(event(1)+event(2)+event(3)), 0o600); err != nil {
		t.Fatal(err)
	}
	stop := errors.New("stop")
	calls := 0
	offset, _, err := ReadLog(path, func(line []byte) error {
		if calls++; calls == 2 {
			return stop
		}
		return nil
	})
	if err != stop || offset != int64(len(event(1))) || calls != 2 {
		t.Errorf("ReadLog = offset %d, %v after %d calls; want offset %d, stop after 2", offset, err, calls, len(event(1)))
	}
}

// follower runs FollowLogFrom in the background. Every call of done hands control to the test,
// which answers through step, so the test knows that a drain ran after each of its writes.
type follower struct {
	lines  chan string
	called chan struct{}
	answer chan bool
	result chan error
	cancel context.CancelFunc
	ended  chan struct{} // closed when FollowLogFrom has returned
}

func follow(t *testing.T, path string, c *Cursor) *follower {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	f := &follower{
		lines:  make(chan string, 100),
		called: make(chan struct{}),
		answer: make(chan bool),
		result: make(chan error, 1),
		cancel: cancel,
		ended:  make(chan struct{}),
	}
	// The follower has ended before the test does, so no test sees another's inotify instance.
	t.Cleanup(func() { cancel(); <-f.ended })
	go func() {
		defer close(f.ended)
		put := func(line string) error {
			select {
			case f.lines <- line:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		f.result <- FollowLogFrom(ctx, path, c, func(line []byte) error {
			return put(string(line))
		}, func(from, to int64) error {
			return put(gapLine(from, to))
		}, func() bool {
			select {
			case f.called <- struct{}{}:
			case <-ctx.Done():
				return false
			}
			select {
			case ans := <-f.answer:
				return ans
			case <-ctx.Done():
				return false
			}
		})
	}()
	return f
}

// drained waits until FollowLogFrom has drained and called done.
func (f *follower) drained(t *testing.T) {
	t.Helper()
	select {
	case <-f.called:
	case err := <-f.result:
		t.Fatalf("FollowLogFrom returned early: %v", err)
	}
}

// next lets FollowLogFrom go on (done reports d) and waits for the following drain.
func (f *follower) next(t *testing.T, d bool) {
	t.Helper()
	f.answer <- d
	if !d {
		f.drained(t)
	}
}

func (f *follower) take(t *testing.T) []string {
	var got []string
	for {
		select {
		case l := <-f.lines:
			got = append(got, l)
		default:
			return got
		}
	}
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func TestFollowLog(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, EventsFile)
	f := follow(t, path, nil)
	f.drained(t) // the file does not exist yet

	appendTo(t, path, event(1)+"garbage\n")
	f.next(t, false)
	if got := f.take(t); !reflect.DeepEqual(got, []string{event(1)}) {
		t.Errorf("after the first line: %q", got)
	}

	line := event(2)
	appendTo(t, path, line[:10])
	f.next(t, false)
	if got := f.take(t); len(got) != 0 {
		t.Errorf("a half line was passed on: %q", got)
	}
	appendTo(t, path, line[10:]+event(3))
	f.next(t, false)
	if got := f.take(t); !reflect.DeepEqual(got, []string{event(2), event(3)}) {
		t.Errorf("after the second half: %q", got)
	}

	// done turns true: one more drain picks up what came meanwhile, then FollowLogFrom returns.
	appendTo(t, path, event(4))
	f.next(t, true)
	if err := <-f.result; err != nil {
		t.Fatalf("FollowLogFrom = %v", err)
	}
	if got := f.take(t); !reflect.DeepEqual(got, []string{event(4)}) {
		t.Errorf("final drain: %q", got)
	}
}

func TestFollowLogFromCursor(t *testing.T) {
	path := filepath.Join(t.TempDir(), EventsFile)
	appendTo(t, path, event(1)+event(2)+`{"seq":3,`)
	c, _, err := ReadLogCursor(path, func([]byte) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	offset := c.off
	f := follow(t, path, c)
	f.drained(t)
	appendTo(t, path, `"v":1}`+"\n")
	f.next(t, true)
	if err := <-f.result; err != nil {
		t.Fatal(err)
	}
	if got := f.take(t); !reflect.DeepEqual(got, []string{`{"seq":3,"v":1}` + "\n"}) {
		t.Errorf("lines from offset %d: %q", offset, got)
	}
}

func TestFollowLogCancel(t *testing.T) {
	path := filepath.Join(t.TempDir(), EventsFile)
	f := follow(t, path, nil)
	f.drained(t)
	f.cancel()
	if err := <-f.result; !errors.Is(err, context.Canceled) {
		t.Errorf("FollowLogFrom after cancel = %v, want context.Canceled", err)
	}
}

func TestFollowLogMissingDir(t *testing.T) {
	err := FollowLogFrom(context.Background(), filepath.Join(t.TempDir(), "gone", EventsFile), nil,
		func([]byte) error { return nil }, nil, func() bool { return false })
	if err == nil {
		t.Error("FollowLogFrom in a missing directory succeeded")
	}
}

func FuzzReadLog(f *testing.F) {
	for _, seed := range []string{
		"",
		event(1) + event(2),
		event(1) + `{"seq":2`,
		"garbage\n\n{}\n[]\n",
		"\x00\xff\n{\"a\":\"\xff\"}\n",
		`{"a":{"b":[1,2,{"c":null}]}}` + "\n" + `{"unterminated":"` + "\n",
		"\r\n{}\r\n \t{}\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), EventsFile)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		var got [][]byte
		offset, broken, err := ReadLog(path, func(line []byte) error {
			if len(line) == 0 || line[len(line)-1] != '\n' {
				t.Fatalf("line without its newline: %q", line)
			}
			got = append(got, bytes.Clone(line))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if want := int64(bytes.LastIndexByte(data, '\n') + 1); offset != want {
			t.Fatalf("offset %d, want %d", offset, want)
		}
		// encoding/json is the oracle for which complete lines are objects.
		var want [][]byte
		complete := data[:offset]
		for len(complete) > 0 {
			i := bytes.IndexByte(complete, '\n')
			line := complete[:i+1]
			complete = complete[i+1:]
			if trimmed := bytes.TrimLeft(line, " \t\r"); len(trimmed) > 0 && trimmed[0] == '{' && json.Valid(line) {
				want = append(want, line)
			}
		}
		if !reflect.DeepEqual(got, want) || broken != bytes.Count(data, []byte{'\n'})-len(want) {
			t.Fatalf("got %q (%d broken), want %q", got, broken, want)
		}
	})
}

// TestFollowLogFromCursorAcrossRotation: lines appended to the file that was read, then a
// rotation, both before the follower starts: it gets every line once, in order (R22).
func TestFollowLogFromCursorAcrossRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, EventsFile)
	w, _, err := OpenLog(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := 1; i <= 3; i++ {
		if err := w.Write([]byte(event(i))); err != nil {
			t.Fatal(err)
		}
	}
	var read []string
	c, _, err := ReadLogCursor(path, func(l []byte) error { read = append(read, string(l)); return nil })
	if err != nil || len(read) != 3 {
		t.Fatalf("ReadLogCursor: %v, %d lines", err, len(read))
	}
	w.Write([]byte(event(4))) // after the read, before the rotation
	if err := w.Rotate(); err != nil {
		t.Fatal(err)
	}
	w.Write([]byte(event(5)))
	var got []string
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = FollowLogFrom(ctx, path, c, func(l []byte) error { got = append(got, string(l)); return nil },
		nil, func() bool { return len(got) >= 2 })
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{event(4), event(5)}; !reflect.DeepEqual(got, want) {
		t.Fatalf("followed %q, want %q", got, want)
	}
}

// TestOpenLogSeqAcrossRotation: a writer that opens a log just rotated (an empty current file)
// goes on from the rotated file's last seq, so seq never repeats across a restart.
func TestOpenLogSeqAcrossRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), EventsFile)
	w, _, err := OpenLog(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		if err := w.Write([]byte(event(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Rotate(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	w, last, err := OpenLog(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if last != 3 {
		t.Errorf("lastSeq after a rotation = %d, want 3", last)
	}
}

// followFrom reads path with ReadLogCursor, runs change, then follows until want lines came.
func followFrom(t *testing.T, path string, change func(), want []string) {
	t.Helper()
	c, _, err := ReadLogCursor(path, func([]byte) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	change()
	var got []string
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = FollowLogFrom(ctx, path, c, func(l []byte) error { got = append(got, string(l)); return nil },
		func(from, to int64) error { got = append(got, gapLine(from, to)); return nil },
		func() bool { return len(got) >= len(want) })
	if err != nil {
		t.Fatalf("followed %q: %v", got, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("followed %q, want %q", got, want)
	}
}

// TestFollowLogTruncated: a log truncated under a follower is read again from its start (R22).
func TestFollowLogTruncated(t *testing.T) {
	path, w := newLog(t)
	for i := 1; i <= 3; i++ {
		w.Write([]byte(event(i)))
	}
	followFrom(t, path, func() {
		if err := os.Truncate(path, 0); err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(event(9))) // O_APPEND: at the new end, the start
	}, []string{event(9)})
}

// TestFollowLogRotatedTwice: two rotations between drains lose nothing: the rest of the held
// file, the whole file between, then the current one.
func TestFollowLogRotatedTwice(t *testing.T) {
	path, w := newLog(t)
	w.Write([]byte(event(1)))
	followFrom(t, path, func() {
		w.Write([]byte(event(2)))
		w.Rotate()
		w.Write([]byte(event(3)))
		w.Rotate()
		w.Write([]byte(event(4)))
	}, []string{event(2), event(3), event(4)})
}

// TestFollowLogLineBeforeRotation: a line written to the held file after the follower read it
// to its end, just before a rotation, is not lost: the follower reads the old file once more
// before it switches (R22; a hook that wrote one line and rotated at once showed [1 3]).
func TestFollowLogLineBeforeRotation(t *testing.T) {
	path, w := newLog(t)
	w.Write([]byte(event(1)))
	raced := false
	testOnlyAfterDrain = func() {
		if !raced {
			raced = true
			w.Write([]byte(event(2)))
			w.Rotate()
			w.Write([]byte(event(3)))
		}
	}
	defer func() { testOnlyAfterDrain = nil }()
	followFrom(t, path, func() {}, []string{event(2), event(3)})
}

// TestFollowLogGap: a follower that fell further behind than the rotated files kept is told
// which seqs it missed, once, before the next line; everything still on disk it reads (R30).
func TestFollowLogGap(t *testing.T) {
	path, w := newLog(t)
	w.Write([]byte(event(1)))
	followFrom(t, path, func() {
		w.Write([]byte(event(2))) // in the held file, which the follower still reads
		for i := 3; i <= 7; i++ {
			w.Rotate() // five rotations, three kept: the file of 3 is gone
			w.Write([]byte(event(i)))
		}
	}, []string{event(2), gapLine(3, 3), event(4), event(5), event(6), event(7)})
}

// TestFollowLogRotationsBetween: every file rotated between two drains is read, oldest first,
// and a rotation that shows a file twice passes no line twice.
func TestFollowLogRotationsBetween(t *testing.T) {
	path, w := newLog(t)
	w.Write([]byte(event(1)))
	followFrom(t, path, func() {
		for i := 2; i <= 4; i++ {
			w.Rotate()
			w.Write([]byte(event(i)))
		}
	}, []string{event(2), event(3), event(4)})
}

// TestRotateKeeps: Rotate keeps the newest rotated files, as many as it is told, .1 the newest.
func TestRotateKeeps(t *testing.T) {
	path, w := newLog(t)
	for _, keep := range []int{KeptRotations, 2} {
		w.KeepRotations(keep)
		for i := 1; i <= 5; i++ {
			w.Write([]byte(event(i)))
			if err := w.Rotate(); err != nil {
				t.Fatal(err)
			}
		}
		for k := 1; k <= keep; k++ {
			lines, _, _ := readAll(t, RotatedPath(path, k))
			if want := []string{event(6 - k)}; !reflect.DeepEqual(lines, want) {
				t.Errorf("keep %d: %s holds %q, want %q", keep, RotatedPath(path, k), lines, want)
			}
		}
	}
	if _, err := os.Stat(RotatedPath(path, KeptRotations+1)); err == nil {
		t.Errorf("%s exists: more rotated files than kept", RotatedPath(path, KeptRotations+1))
	}
}

// TestReadLogBack: the last lines first, broken and partial ones skipped, and a cursor just
// past the last complete line with its seq, from which a follower goes on.
func TestReadLogBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), EventsFile)
	huge := `{"seq":3,"pad":"` + strings.Repeat("x", 3*blockSize) + `"}` + "\n"
	appendTo(t, path, event(1)+"broken\n"+event(2)+huge+event(4)+`{"seq":5,`)
	var got []int64
	c, err := ReadLogBack(path, func(line []byte) bool {
		got = append(got, lineSeq(line))
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if want := []int64{4, 3, 2, 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("seqs backwards %v, want %v", got, want)
	}
	if fi, _ := os.Stat(path); c.off != fi.Size()-int64(len(`{"seq":5,`)) || c.Seq() != 4 {
		t.Errorf("cursor at %d with seq %d; want %d with seq 4", c.off, c.Seq(), fi.Size()-9)
	}
	// Stopping early: one line.
	got = nil
	c2, err := ReadLogBack(path, func(line []byte) bool { got = append(got, lineSeq(line)); return false })
	if err != nil || !reflect.DeepEqual(got, []int64{4}) {
		t.Errorf("one line back: %v, %v", got, err)
	}
	c2.Close()
	// The follower goes on from the cursor: the partial line completes.
	f := follow(t, path, c)
	c = nil
	f.drained(t)
	appendTo(t, path, `"v":1}`+"\n")
	f.next(t, true)
	if err := <-f.result; err != nil {
		t.Fatal(err)
	}
	if got := f.take(t); !reflect.DeepEqual(got, []string{`{"seq":5,"v":1}` + "\n"}) {
		t.Errorf("followed from the cursor: %q", got)
	}
	if c, err := ReadLogBack(filepath.Join(t.TempDir(), "missing"), func([]byte) bool { return true }); c != nil || err != nil {
		t.Errorf("ReadLogBack of a missing log = %v, %v", c, err)
	}
}

// TestReadRotatedBack: the rotated files newest first, each from its end.
func TestReadRotatedBack(t *testing.T) {
	path, w := newLog(t)
	for i := 1; i <= 6; i += 2 {
		w.Write([]byte(event(i) + event(i+1)))
		w.Rotate()
	}
	var got []int64
	err := ReadRotatedBack(path, func(line []byte) bool {
		got = append(got, lineSeq(line))
		return len(got) < 5
	})
	if want := []int64{6, 5, 4, 3, 2}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ReadRotatedBack = %v, %v; want %v", got, err, want)
	}
}
