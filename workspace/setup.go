package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// copyIn copies each of paths (relative to the repository root repo) to the same place in the
// workspace at dst: files with their permissions, directories whole, symlinks as symlinks.
func copyIn(repo, dst string, paths []string) error {
	for _, p := range paths {
		clean := filepath.Clean(p)
		if p == "" || filepath.IsAbs(p) || clean == "." || clean == ".." || strings.HasPrefix(clean, "../") {
			return fmt.Errorf("copy %q: want a path inside the repository, relative to its root", p)
		}
		src := filepath.Join(repo, clean)
		if _, err := os.Lstat(src); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("copy %s into the workspace: there is no %s in %s; create it, or take it out of copy in [workspace] of agt.toml", clean, clean, repo)
		} else if err != nil {
			return fmt.Errorf("copy %s into the workspace: %w", clean, err)
		}
		err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(repo, path)
			if err != nil {
				return err
			}
			return copyEntry(path, filepath.Join(dst, rel), d)
		})
		if err != nil {
			return fmt.Errorf("copy %s into the workspace: %w", clean, err)
		}
	}
	return nil
}

// copyEntry copies one file, directory (without its contents) or symlink from src to dst,
// replacing a file at dst.
func copyEntry(src, dst string, d fs.DirEntry) error {
	info, err := d.Info()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	switch {
	case d.IsDir():
		if err := os.Mkdir(dst, info.Mode().Perm()); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		return nil
	case info.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		os.Remove(dst)
		return os.Symlink(target, dst)
	case info.Mode().IsRegular():
		in, err := os.Open(src)
		if err != nil {
			return err
		}
		defer in.Close()
		os.Remove(dst) // a tracked file or a symlink there: replace it, never write through it
		out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, info.Mode().Perm())
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	default:
		return fmt.Errorf("%s is neither a file, a directory nor a symlink", src)
	}
}

// setUp runs each set-up command in the workspace dir, in order, stdin empty and stdout
// dropped. A command that fails fails the set-up with its exit code and the tail of its
// stderr.
func setUp(ctx context.Context, dir, name string, cmds [][]string, output io.Writer) error {
	for _, argv := range cmds {
		if len(argv) == 0 {
			continue
		}
		if err := runSetUp(ctx, dir, name, argv, output); err != nil {
			return err
		}
	}
	return nil
}

func runSetUp(ctx context.Context, dir, name string, argv []string, output io.Writer) error {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "AGT_NAME="+name, "AGT_WORKSPACE="+dir)
	stderr := &tail{max: 2 << 10}
	cmd.Stderr = stderr
	if output != nil {
		cmd.Stdout, cmd.Stderr = output, io.MultiWriter(stderr, output)
	}
	// Its own process group, so Ctrl-C stops what it started too; and no endless wait on a
	// daemon it left holding stderr.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	err := cmd.Run()
	if err == nil {
		return nil
	}
	what := "workspace set-up " + quote(argv)
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", what, ctx.Err())
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		if errors.Is(err, exec.ErrNotFound) {
			return fmt.Errorf("%s: %s not found", what, argv[0])
		}
		return fmt.Errorf("%s: %w", what, err)
	}
	how := "exit code " + strconv.Itoa(exit.ExitCode())
	if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		how = "signal " + ws.Signal().String()
	}
	msg := fmt.Sprintf("%s failed with %s", what, how)
	if t := stderr.String(); t != "" {
		msg += ":\n" + t
	}
	return errors.New(msg)
}

// quote shows argv as a shell would take it back.
func quote(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && !strings.ContainsAny(a, " \t\n'\"\\$`*?[]{}()<>|&;#~") {
			q[i] = a
		} else {
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(q, " ")
}

// tail keeps the last lines of what is written to it, at most max bytes of them.
type tail struct {
	max int
	buf []byte
	cut bool
}

func (t *tail) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - 2*t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.cut = true
	}
	return len(p), nil
}

// String returns the last lines, at most max bytes, indented, with "…" first when earlier
// output was left out.
func (t *tail) String() string {
	s := strings.TrimRight(string(t.buf), "\n")
	cut := t.cut
	if len(s) > t.max {
		s, cut = s[len(s)-t.max:], true
	}
	if cut {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
	}
	if s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > 10 {
		lines, cut = lines[len(lines)-10:], true
	}
	out := "  " + strings.Join(lines, "\n  ")
	if cut {
		out = "  …\n" + out
	}
	return out
}
