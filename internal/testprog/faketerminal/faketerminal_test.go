package faketerminal

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"regexp"
	"testing"
	"time"

	"github.com/creack/pty"

	"agt/internal/testprog/selfexec"
)

func TestMain(m *testing.M) {
	selfexec.Main(m, func() { Main(time.Minute) })
}

// screen reads what the terminal shows until it matches re.
type screen struct {
	t   *testing.T
	tty *os.File
	buf bytes.Buffer
}

func (s *screen) wait(re string) {
	s.t.Helper()
	r := regexp.MustCompile(re)
	deadline := time.Now().Add(30 * time.Second)
	b := make([]byte, 4096)
	for !r.Match(s.buf.Bytes()) {
		if time.Now().After(deadline) {
			s.t.Fatalf("the terminal never showed %q; it showed %q", re, s.buf.String())
		}
		s.tty.SetReadDeadline(time.Now().Add(time.Second))
		n, _ := s.tty.Read(b)
		s.buf.Write(b[:n])
	}
	s.buf.Reset()
}

func TestOnATerminal(t *testing.T) {
	cmd := selfexec.Command()
	cmd.Env = append(cmd.Env, "TERM=xterm-test")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 24, Cols: 80})
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	defer cmd.Process.Kill()
	s := &screen{t: t, tty: tty}
	s.wait(`started on a 24x80 terminal \(true\), TERM=xterm-test\r?\nfake> `)

	io.WriteString(tty, "hello\r")
	s.wait(`you typed: hello\r?\nfake> `)

	pty.Setsize(tty, &pty.Winsize{Rows: 30, Cols: 100})
	s.wait(`\x1b\[2Jscreen of fake at 30x100\r?\nfake> `)

	io.WriteString(tty, "\x1b[200~one\rtwo\x1b[201~\r")
	s.wait(`pasted: one\|two\r?\nfake> `)

	io.WriteString(tty, "exit 4\r")
	s.wait(`bye \(4\)`)
	var ee *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 4 {
		t.Fatalf("after exit 4: %v", err)
	}
}
