package commands

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"agt/config"
	"agt/hosts"
	"agt/spawn"
	"agt/state"
	"agt/stream"
	"agt/termsafe"
)

func attachCommand() *cli.Command {
	return &cli.Command{
		Name:  "attach",
		Usage: "connect this terminal to a terminal agent's; Ctrl-\\ detaches and leaves it running",
		UsageText: "agt attach [--detach-keys KEYS] NAME\n\n" +
			"Shows the screen of an agent spawned with --tty and types what you type into it, until the\n" +
			"detach keys (Ctrl-\\) leave it running.\n\n" +
			"EXAMPLES:\n" +
			"   agt spawn --tty --detach --agent claude helper   # then, whenever:\n" +
			"   agt attach helper\n" +
			"   agt attach --detach-keys ctrl-p,ctrl-q helper",
		Description: helpText("attach"),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "label", Hidden: true, Usage: "the `HOST:NAME` to say in messages (set by agt over ssh)"},
			&cli.StringFlag{Name: "detach-keys", Usage: "the `KEYS` that detach: a character or ctrl-X, comma-separated (ctrl-p,ctrl-q)", DefaultText: `ctrl-\, or detach_keys`, EnvVars: []string{"AGT_DETACH_KEYS"}},
		},
		Action: runAttach,
	}
}

func runAttach(c *cli.Context) error {
	args := c.Args().Slice()
	if err := flagAfterName(c, args); err != nil {
		return err
	}
	if len(args) != 1 {
		return usagef(c, "want one NAME: agt attach [--detach-keys KEYS] NAME")
	}
	keys, err := detachKeys(c)
	if err != nil {
		return err
	}
	a, err := oneAgent(c, args[0])
	if err != nil {
		return err
	}
	spec, err := a.ReadSpec()
	if err != nil {
		return err
	}
	name := attachLabel(c, a)
	if !spec.TTY {
		if ended(a) {
			st := spawn.Observe(a)
			return fmt.Errorf("cannot attach to %s: it is %s, and has no terminal\nhint: 'agt tail %s' prints what it did", name, st.State, name)
		}
		return watchReadOnly(c, a)
	}
	return attach(c, a, keys)
}

// attachLabel is how attach names a in what it says: NAME, or the HOST:NAME of --label that an
// agt over ssh passes, so that the hint after a detach is one to paste where the user is.
func attachLabel(c *cli.Context, a *state.Agent) string {
	host, name := hosts.Split(c.String("label"))
	if name != a.Name || host == "" || config.ValidDestination(host) != nil {
		return a.Name
	}
	return termsafe.Text(host + ":" + name)
}

// detachKeys are the keys that detach: --detach-keys, else detach_keys in agt.toml, else Ctrl-\.
func detachKeys(c *cli.Context) ([]byte, error) {
	spec := c.String("detach-keys")
	if spec == "" {
		dir, _ := os.Getwd()
		cfg, err := config.Load(dir)
		if err != nil {
			return nil, err
		}
		spec = cfg.DetachKeys
	}
	if spec == "" {
		spec = config.DefaultDetachKeys
	}
	keys, err := config.ParseDetachKeys(spec)
	if err != nil {
		return nil, usagef(c, "--detach-keys: %v", err)
	}
	return keys, nil
}

// watchReadOnly is attach on an agent that has no terminal: its transcript, live, until it ends.
func watchReadOnly(c *cli.Context, a *state.Agent) error {
	PrintError(c.App.ErrWriter, fmt.Sprintf("hint: %s has no terminal (spawned without --tty): showing its events read-only; Ctrl-C leaves it running", a.Name))
	out, err := outputFor(c)
	if err != nil {
		return err
	}
	if out.mode == modeTable {
		out.view = newTranscript(out, []string{a.Name})
	}
	return followEvents(c.Context, out, []*state.Agent{a}, tailFilter{last: 20}, nil)
}

// attach connects the terminal on stdin and stdout to a's until the detach keys come, or a ends
// for good (then its exit code is ours).
func attach(c *cli.Context, a *state.Agent, keys []byte) error {
	if st := spawn.Observe(a); stream.IsFinal(st.State) || st.State == stream.Lost || st.State == spawn.Unknown {
		how := st.State
		if st.Reason != "" {
			how += " (" + st.Reason + ")"
		}
		name := attachLabel(c, a)
		return fmt.Errorf("cannot attach to %s: it is %s, nothing runs on its terminal\nhint: 'agt logs %s' prints what it showed", name, how, name)
	}
	in, out := int(os.Stdin.Fd()), os.Stdout
	if !isTerminal(os.Stdin) {
		return errors.New("cannot attach: stdin is not a terminal\nhint: run agt attach in a terminal; 'agt send --keys' types into the agent from a script")
	}
	rows, cols := uint16(24), uint16(80)
	if ws, err := unix.IoctlGetWinsize(in, unix.TIOCGWINSZ); err == nil && ws.Row > 0 && ws.Col > 0 {
		rows, cols = ws.Row, ws.Col
	}
	at, err := spawn.Attach(c.Context, a, rows, cols)
	if err != nil {
		return controlError(a, fmt.Errorf("cannot attach to %s: %w", a.Name, err))
	}
	defer at.Close()
	keysIn, err := newStopReader(in)
	if err != nil {
		return fmt.Errorf("cannot attach: %w", err)
	}
	defer keysIn.close()
	restore, err := rawMode(in)
	if err != nil {
		return fmt.Errorf("cannot attach: put the terminal in raw mode: %w", err)
	}
	// The agent's screen on the alternate screen, so that the shell's comes back at the end.
	io.WriteString(out, "\x1b[?1049h\x1b[H\x1b[2J")
	ended := make(chan struct{})
	go func() {
		io.Copy(out, at) // until the agent ends for good (or the connection breaks)
		close(ended)
	}()
	detached := make(chan struct{})
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		d := &detacher{keys: keys}
		buf := make([]byte, 4096)
		for {
			n, err := keysIn.read(buf)
			fwd, done := d.feed(buf[:n])
			if len(fwd) > 0 && at.Keys(fwd) != nil {
				return
			}
			if errors.Is(err, errStopped) {
				return
			}
			if done || err != nil {
				close(detached)
				return
			}
		}
	}()
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	defer signal.Stop(winch)
	var why string
	for why == "" {
		select {
		case <-winch:
			if ws, err := unix.IoctlGetWinsize(in, unix.TIOCGWINSZ); err == nil && ws.Row > 0 && ws.Col > 0 {
				at.Resize(ws.Row, ws.Col)
			}
		case <-detached:
			why = "detached"
		case <-ended:
			why = "ended"
		case <-c.Context.Done():
			why = "signal"
		}
	}
	// Keys typed from now on are the shell's, not the agent's: the reader stops before the
	// terminal goes back (it would take what is typed next, up to the moment attach exits).
	keysIn.stop()
	<-readerDone
	// Whatever modes the program set, the user's terminal gets its own back.
	io.WriteString(out, "\x1b[0m\x1b[?25h\x1b[?2004l\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?1049l")
	restore()
	switch why {
	case "detached":
		name := attachLabel(c, a)
		fmt.Fprintf(c.App.ErrWriter, "agt: detached from %s, which runs on; 'agt attach %s' comes back\n", name, name)
		return nil
	case "signal":
		return c.Context.Err()
	}
	st := spawn.Observe(a)
	fmt.Fprintf(c.App.ErrWriter, "agt: %s is %s%s\n", attachLabel(c, a), st.State, map[bool]string{true: " (" + st.Reason + ")", false: ""}[st.Reason != ""])
	return exitWithAgent(c, []*state.Agent{a})
}

// rawMode puts the terminal fd in raw mode, as cfmakeraw does, and returns how to restore it.
func rawMode(fd int) (func(), error) {
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, err
	}
	t := *old
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	t.Oflag &^= unix.OPOST
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Cflag &^= unix.CSIZE | unix.PARENB
	t.Cflag |= unix.CS8
	t.Cc[unix.VMIN], t.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &t); err != nil {
		return nil, err
	}
	return func() { unix.IoctlSetTermios(fd, unix.TCSETS, old) }, nil
}
