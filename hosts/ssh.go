package hosts

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// MaxSessions is how many commands share a host's connection at once. sshd's MaxSessions is
// 10 by default; 8 leaves room for the user's own.
const MaxSessions = 8

// ControlPersist is how long a host's master connection outlives its last command.
const ControlPersist = "10m"

// SSH is a host reached with the system ssh.
type SSH struct {
	Host   string // its name: a [hosts] key, or the destination itself
	Dest   string // what ssh is given
	RunDir string // --run-dir on the host; "" for its default
	Agt    string // the agt program there; "" finds it (PATH, then ~/.local/bin)
	// Control is the private directory of the master sockets, locks and probes (ControlDir).
	Control string
}

// Name is the host's name.
func (s *SSH) Name() string { return s.Host }

// key names the host's files in the control directory: the master is shared by every name of
// one destination and program.
func (s *SSH) key() string {
	sum := sha256.Sum256([]byte(s.Dest + "\x00" + s.Agt))
	return hex.EncodeToString(sum[:6])
}

func (s *SSH) file(suffix string) string { return filepath.Join(s.Control, s.key()+suffix) }

// Run runs agt with call's arguments on the host.
func (s *SSH) Run(ctx context.Context, call *Call) error {
	sock, fresh, err := s.master(ctx)
	if err != nil {
		return err
	}
	info, err := s.probe(ctx, sock, fresh)
	if err != nil {
		return err
	}
	return s.run(ctx, sock, info.Agt, call)
}

// run runs agt (the program at agt on the host) with call's arguments, through the master at
// sock or, for a stream or a terminal, on a connection of its own.
func (s *SSH) run(ctx context.Context, sock, agt string, call *Call) error {
	remote := Command(agt, []string{"--host", Local})
	if s.RunDir != "" {
		remote += " --run-dir " + QuotePath(s.RunDir) // ~/ expands there
	}
	args := call.Args
	if call.Stream && call.Stdin == nil {
		args = append([]string{"--end-on-eof"}, args...) // stdin is the link's; a payload ends before it does
	}
	return s.ssh(ctx, sock, remote+" "+Words(args), call)
}

// ssh runs the shell command line remote on the host.
func (s *SSH) ssh(ctx context.Context, sock, remote string, call *Call) error {
	opts := []string{"-o", "BatchMode=yes"}
	own := call.Stream || call.Terminal
	if own {
		// Its own connection, so that it neither holds one of the master's sessions for hours
		// nor dies with it; keepalives tell a dead link within about 15 s.
		opts = append(opts, "-o", "ControlMaster=no", "-o", "ControlPath=none", "-o", "ConnectTimeout=30",
			"-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3")
	} else {
		opts = append(opts, "-o", "ControlMaster=no", "-o", "ControlPath="+sock)
		release, err := s.session(ctx)
		if err != nil {
			return err
		}
		defer release()
	}
	if call.Terminal {
		opts = append(opts, "-t", "-e", "none") // what the user types goes to the agent, ~. too
	} else {
		opts = append(opts, "-T")
	}
	cmd := exec.Command(sshProgram(), append(opts, "--", s.Dest, remote)...)
	return runCommand(ctx, s.Host, cmd, call)
}

// sshProgram is the ssh that agt runs: the one on PATH.
func sshProgram() string { return "ssh" }

// runCommand runs cmd (ssh, or agt itself) for call and classifies how it ended. A stream's
// stdin stays open until it ends: the far side takes its end for the link's. The process gets
// a group of its own, so that the terminal's Ctrl-C reaches agt alone, which decides.
func runCommand(ctx context.Context, place string, cmd *exec.Cmd, call *Call) error {
	cmd.Stdout = call.Stdout
	if call.Terminal {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	var theirs *os.File // the child's end of a stream's stdin; ours is closed when it ends
	switch {
	case call.Terminal:
	case call.Stdin != nil:
		cmd.Stdin = call.Stdin
	case call.Stream:
		r, w, err := os.Pipe()
		if err != nil {
			return err
		}
		defer w.Close()
		cmd.Stdin, theirs = r, r
		defer r.Close()
	}
	errs := &lastLines{forward: call.Stderr, live: call.Stream}
	if !call.Terminal {
		cmd.Stderr = errs
	}
	if err := cmd.Start(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return fmt.Errorf("cannot reach %s: %s not found\nhint: agt runs the system ssh; install OpenSSH's client", place, cmd.Path)
		}
		return fmt.Errorf("cannot reach %s: %w", place, err)
	}
	if theirs != nil {
		theirs.Close() // the child has it now
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			cmd.Process.Signal(syscall.SIGTERM) // ssh closes the link; agt ends quietly
		case <-done:
		}
	}()
	err := cmd.Wait()
	close(done)
	var exit *exec.ExitError
	switch {
	case err == nil:
		errs.flush()
		return nil
	case !errors.As(err, &exit):
		return err
	}
	status := exit.Sys().(syscall.WaitStatus)
	// ssh exits 255 when the link fails; killed by a signal, it took the link with it.
	if status.Signaled() || status.ExitStatus() == 255 {
		reason := errs.last()
		if reason == "" {
			reason = "the connection ended (" + exit.String() + ")"
		}
		return &Unreachable{Place: place, Reason: reason}
	}
	errs.flush()
	return &ExitError{Place: place, Code: status.ExitStatus()}
}

// lastLines passes a command's stderr on, at once (live) or when it ends well, and keeps its
// last line: ssh's reason when the link failed. Live, a line is held until the next one comes
// or the command ends well, unless it is agt's own ("agt: …", never ssh's): ssh says why the
// link failed last, and that line is the reason the caller prints, not a line to pass on as
// the host's too. It holds at most 64 KiB.
type lastLines struct {
	forward io.Writer
	live    bool
	buf     []byte // all of it; live, the line not yet ended
	held    []byte // live: the last line, held back
}

func (l *lastLines) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	if l.live {
		for {
			i := bytes.IndexByte(l.buf, '\n')
			if i < 0 {
				break
			}
			line := l.buf[:i+1]
			l.pass(l.held)
			l.held = l.held[:0]
			if bytes.HasPrefix(line, []byte("agt: ")) {
				l.pass(line)
			} else {
				l.held = append(l.held, line...)
			}
			l.buf = l.buf[i+1:]
		}
	}
	if len(l.buf) > 64<<10 {
		l.buf = append(l.buf[:0], l.buf[len(l.buf)-32<<10:]...)
	}
	return len(p), nil
}

func (l *lastLines) pass(b []byte) {
	if l.forward != nil && len(b) > 0 {
		l.forward.Write(b)
	}
}

// flush passes on what is held: the command ended well.
func (l *lastLines) flush() {
	if l.live {
		l.pass(l.held)
	}
	l.pass(l.buf)
	l.buf, l.held = nil, nil
}

func (l *lastLines) last() string {
	s := strings.TrimSpace(string(l.buf))
	if l.live && s == "" {
		s = strings.TrimSpace(string(l.held))
	}
	lines := strings.Split(s, "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// master returns the socket of the host's master connection, opening one when none answers;
// fresh says it was opened just now. One agt process opens it while the others wait.
func (s *SSH) master(ctx context.Context) (sock string, fresh bool, err error) {
	sock = s.file(".sock")
	if answers(sock) {
		return sock, false, nil
	}
	unlock, err := lockFile(ctx, s.file(".lock"))
	if err != nil {
		return "", false, err
	}
	defer unlock()
	if answers(sock) {
		return sock, false, nil // another agt opened it meanwhile
	}
	os.Remove(sock)
	os.Remove(s.file(".info"))
	// What ssh says while it connects is read back from errFile when it fails. Its name goes
	// at once (this agt holds the lock, so no other uses it): nothing is left in the control
	// directory for each destination ever tried, however this ends.
	errFile, err := os.OpenFile(s.file(".err"), os.O_CREATE|os.O_TRUNC|os.O_RDWR|unix.O_NOFOLLOW|os.O_APPEND, 0o600)
	if err != nil {
		return "", false, err
	}
	os.Remove(errFile.Name())
	defer errFile.Close()
	// -f: ssh goes to the background once the link is up, and keeps it for ControlPersist.
	// It is a session of its own, so that no Ctrl-C of the terminal reaches it.
	cmd := exec.CommandContext(ctx, sshProgram(), "-o", "BatchMode=yes",
		"-o", "ControlMaster=yes", "-o", "ControlPath="+sock, "-o", "ControlPersist="+ControlPersist,
		"-o", "ConnectTimeout=30", "-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=4",
		"-N", "-f", "--", s.Dest)
	cmd.Stderr = errFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Run(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return "", false, fmt.Errorf("cannot reach %s: ssh not found\nhint: agt runs the system ssh; install OpenSSH's client", s.Host)
		}
		if ctx.Err() != nil {
			return "", false, ctx.Err()
		}
		l := &lastLines{buf: tailOf(errFile, 64<<10)}
		reason := l.last()
		if reason == "" {
			reason = "ssh " + err.Error()
		}
		return "", false, &Unreachable{Place: s.Host, Reason: reason}
	}
	// ssh -f returns once authenticated; its background half listens on the socket.
	for deadline := time.Now().Add(10 * time.Second); !answers(sock); {
		if time.Now().After(deadline) {
			return "", false, &Unreachable{Place: s.Host, Reason: "ssh's master connection opened no socket at " + sock}
		}
		if err := Pause(ctx, 10*time.Millisecond); err != nil {
			return "", false, err
		}
	}
	return sock, true, nil
}

// tailOf reads the last n bytes of f.
func tailOf(f *os.File, n int64) []byte {
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	off := max(fi.Size()-n, 0)
	b := make([]byte, fi.Size()-off)
	read, _ := f.ReadAt(b, off)
	return b[:read]
}

// answers reports whether a master listens on sock.
func answers(sock string) bool {
	c, err := net.DialTimeout("unix", sock, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// session takes one of the host's MaxSessions slots, waiting while all are taken, and returns
// how to give it back. The slots are locks on files: they hold across agt processes, and a
// process that dies gives its slot back with its descriptors.
func (s *SSH) session(ctx context.Context) (func(), error) {
	start := os.Getpid() % MaxSessions
	for {
		for i := range MaxSessions {
			path := s.file(fmt.Sprintf(".slot%d", (start+i)%MaxSessions))
			fd, err := unix.Open(path, unix.O_CREAT|unix.O_RDWR|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o600)
			if err != nil {
				return nil, fmt.Errorf("take a session of %s: %w", s.Host, err)
			}
			if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) == nil {
				return func() { unix.Close(fd) }, nil
			}
			unix.Close(fd)
		}
		if err := Pause(ctx, 5*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

// lockFile takes an exclusive lock on path, waiting for it, and returns how to let it go.
func lockFile(ctx context.Context, path string) (func(), error) {
	fd, err := unix.Open(path, unix.O_CREAT|unix.O_RDWR|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	for unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
		if err := Pause(ctx, 10*time.Millisecond); err != nil {
			unix.Close(fd)
			return nil, err
		}
	}
	return func() { unix.Close(fd) }, nil
}

// Pause waits d, or less when ctx ends (then it returns ctx's error): the wait between two
// tries at a host.
func Pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// ControlDir makes (0700) and returns the private directory of the master sockets of the run
// directory root: root/ssh. A socket path holds at most 107 bytes, and ssh binds a temporary
// name 17 bytes longer first: when root is too deep for one, the directory is agt-UID-HASH
// (HASH of root) in $XDG_RUNTIME_DIR, else the system's temporary directory, else /tmp, the
// first that is short enough; it is checked to be the user's alone.
func ControlDir(root string) (string, error) {
	sum := sha256.Sum256([]byte(root))
	own := fmt.Sprintf("agt-%d-%s", os.Getuid(), hex.EncodeToString(sum[:4]))
	dir := filepath.Join(root, "ssh")
	for _, d := range []string{os.Getenv("XDG_RUNTIME_DIR"), os.TempDir(), "/tmp"} {
		if len(dir)+len("/0123456789ab.sock.0123456789abcdef") <= 107 {
			break
		}
		if filepath.IsAbs(d) {
			dir = filepath.Join(d, own)
		}
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("make the ssh control directory: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return "", fmt.Errorf("ssh control directory: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != os.Getuid() || st.Mode&0o077 != 0 {
		return "", fmt.Errorf("ssh control directory %s is not a directory of yours alone (0700)\nhint: remove it; agt makes it again", dir)
	}
	return dir, nil
}
