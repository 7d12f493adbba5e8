package commands

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"agt/state"
)

func logsCommand() *cli.Command {
	return &cli.Command{
		Name:  "logs",
		Usage: "print an agent's raw output, as it wrote it",
		UsageText: "agt logs [-f] [-n N] [--stderr] NAME\n\n" +
			"Prints what the agent wrote to its stdout (--stderr: its stderr), byte for byte; agt tail\n" +
			"prints the decoded events.\n\n" +
			"EXAMPLES:\n" +
			"   agt logs build\n" +
			"   agt logs -n 50 --stderr build\n" +
			"   agt logs -f fix-auth | jq -c 'select(.type==\"assistant\")'",
		Description: helpText("logs"),
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep printing new output until the agent ends"},
			&cli.IntFlag{Name: "lines", Aliases: []string{"n"}, Usage: "print only the last `N` lines (0: none, only new ones with -f)", DefaultText: "all"},
			&cli.BoolFlag{Name: "stderr", Usage: "print what it wrote to stderr instead"},
			&cli.BoolFlag{Name: "mark", Hidden: true, Usage: "a first line that says where what it prints starts (what agt asks of a host)"},
			&cli.StringFlag{Name: "resume", Hidden: true, Usage: "go on from `INODE:BORN:OFFSET:BYTES`: BYTES after where a marked print started"},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Len() != 1 {
				return usagef(c, "want one NAME: agt logs [-f] [-n N] [--stderr] NAME")
			}
			agents, err := targets(c, "agt logs [-f] [-n N] [--stderr] NAME", false)
			if err != nil {
				return err
			}
			last := -1
			if c.IsSet("lines") {
				if last = c.Int("lines"); last < 0 {
					return usagef(c, "-n %d: must not be negative", last)
				}
			}
			a := agents[0]
			file := state.StdoutLog
			if spec, err := a.ReadSpec(); err == nil && spec.TTY {
				file = state.TTYLog // its stdout and stderr are its terminal
			}
			if c.Bool("stderr") {
				file = state.StderrLog
			}
			path := a.Path(file)
			w := bufio.NewWriterSize(c.App.Writer, 64<<10)
			// --mark: the first line says where what follows starts (see logsresume.go).
			before := func(rawPos, int64) {}
			if c.Bool("mark") {
				before = func(p rawPos, skip int64) { fmt.Fprintf(w, "%s%s:%d\n", logsMark, p, skip) }
			}
			var f *os.File
			if r := c.String("resume"); r != "" {
				from, skip, err := parseResume(r)
				if err != nil {
					return usagef(c, "%v", err)
				}
				f, err = printResumed(w, c.App.ErrWriter, path, from, skip, before)
			} else {
				f, err = printRaw(w, path, last, before)
			}
			if err != nil {
				return err
			}
			if err := w.Flush(); err != nil || !c.Bool("follow") {
				if f != nil {
					f.Close()
				}
				return err
			}
			return followRaw(c, w, a, path, f)
		},
	}
}

// openRaw opens a raw log for reading, never through a symlink and never blocking on a FIFO;
// nil, nil when it does not exist.
func openRaw(path string) (*os.File, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("open %s: not a regular file", path)
	}
	return f, nil
}

// printRaw writes the rotated log and then the current one, or their last n lines when n >= 0,
// and returns the current one, open at its end, for a follower (nil when there is none yet).
// before is told where what it writes starts, before it writes.
func printRaw(w io.Writer, path string, n int, before func(rawPos, int64)) (*os.File, error) {
	cur, err := openRaw(path)
	if err != nil {
		return nil, err
	}
	var files []*os.File
	if old, err := openRaw(path + state.RotatedSuffix); err == nil && old != nil {
		defer old.Close()
		files = append(files, old)
	}
	if cur != nil {
		files = append(files, cur)
	}
	if n < 0 {
		var start rawPos
		if len(files) > 0 {
			start.id = idOf(files[0])
		}
		before(start, 0)
		for _, f := range files {
			if _, err := io.Copy(w, f); err != nil {
				return cur, err
			}
		}
		return cur, nil
	}
	type line struct {
		b  []byte
		at rawPos
	}
	lines := lastN[line]{max: n}
	for _, f := range files {
		r := bufio.NewReaderSize(f, 64<<10)
		at := rawPos{id: idOf(f)}
		for n > 0 {
			b, err := r.ReadBytes('\n')
			if len(b) > 0 {
				lines.add(line{b, at})
				at.off += int64(len(b))
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				return cur, err
			}
		}
	}
	start := rawPos{id: idOf(cur)} // nothing kept: what comes next
	if cur != nil {
		if start.off, err = cur.Seek(0, io.SeekEnd); err != nil {
			return cur, err
		}
	}
	kept := lines.list()
	if len(kept) > 0 {
		start = kept[0].at
	}
	before(start, 0)
	for _, l := range kept {
		if _, err := w.Write(l.b); err != nil {
			return cur, err
		}
	}
	return cur, nil
}

// followRaw prints what is appended to the log at path, held open as f, until the agent ends
// or the command is interrupted. It looks ten times a second, and follows a rotation.
func followRaw(c *cli.Context, w *bufio.Writer, a *state.Agent, path string, f *os.File) error {
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		done := ended(a) // before the last read: what it wrote before it ended is read below
		if f == nil {
			var err error
			if f, err = openRaw(path); err != nil {
				return err
			}
		}
		if f != nil {
			if _, err := io.Copy(w, f); err != nil {
				return err
			}
			// Rotated: the old file is read to its end; go on with the new one.
			if now, err := os.Stat(path); err == nil {
				if held, err := f.Stat(); err == nil && !os.SameFile(now, held) {
					f.Close()
					f = nil
					continue
				}
			}
		}
		if err := w.Flush(); err != nil || done {
			return err
		}
		select {
		case <-c.Context.Done():
			return c.Context.Err()
		case <-tick.C:
		}
	}
}

// lastN keeps the items it is given, only the last max of them when max >= 0, in at most
// twice that much memory: a reader that wants the last N never holds the whole log.
type lastN[T any] struct {
	max   int
	items []T
}

func (l *lastN[T]) add(v T) {
	if l.max == 0 {
		return
	}
	l.items = append(l.items, v)
	if l.max > 0 && len(l.items) >= 2*l.max {
		l.items = append(l.items[:0], l.items[len(l.items)-l.max:]...)
	}
}

func (l *lastN[T]) list() []T {
	if l.max >= 0 && len(l.items) > l.max {
		return l.items[len(l.items)-l.max:]
	}
	return l.items
}
