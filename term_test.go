package main

import (
	"agt/commands"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/creack/pty"
	"github.com/rogpeppe/go-internal/testscript"
	"github.com/urfave/cli/v2"
)

// term drives terminals through tmux, for the tests of agt attach: a person's terminal that a
// script can type into and read the screen of. Each script has a tmux server of its own (its
// socket in $WORK), killed when the script ends, failed or not.
//
//	term start NAME COLS ROWS    a session NAME running sh, with the script's environment
//	term keys NAME KEY...        tmux send-keys (Enter, Escape, C-\ …; other words typed as they are)
//	term wait NAME REGEXP        wait until the screen of NAME matches (the screen on failure)
//	term shows NAME REGEXP       the screen matches now (with !: does not)
//	term resize NAME COLS ROWS   resize NAME's window, as a person resizes a terminal
func cmdTerm(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: term start|keys|wait|shows|resize NAME ...")
	}
	if neg && args[0] != "shows" {
		ts.Fatalf("term %s does not support negation", args[0])
	}
	sock := ts.MkAbs("tmux.sock")
	tmux := func(a ...string) (string, error) {
		cmd := scriptCommand(ts, append([]string{"tmux", "-S", sock, "-f", "/dev/null"}, a...))
		out, err := cmd.CombinedOutput()
		if err != nil {
			return string(out), fmt.Errorf("tmux %s: %v: %s", strings.Join(a, " "), err, out)
		}
		return string(out), nil
	}
	// A target names the session exactly: tmux takes a bare "a" as the start of a window's
	// name too, and a window of another session that runs agt is named "agt" by then, so keys
	// meant for one terminal went to another's.
	target := func(name string) string { return "=" + name + ":" }
	screen := func(name string) string {
		out, err := tmux("capture-pane", "-p", "-t", target(name))
		ts.Check(err)
		return out
	}
	name := args[1]
	switch args[0] {
	case "start":
		if len(args) != 4 {
			ts.Fatalf("usage: term start NAME COLS ROWS")
		}
		if _, err := os.Stat(sock); err != nil {
			// The first session starts the server: kill it when the script ends.
			ts.Defer(func() { tmux("kill-server") })
		}
		// A prompt without the user's shell settings; the screen, plain.
		_, err := tmux("new-session", "-d", "-s", name, "-x", args[2], "-y", args[3], "env", "PS1=$ ", "sh")
		ts.Check(err)
		_, err = tmux("set-option", "-t", target(name), "window-size", "manual")
		ts.Check(err)
	case "keys":
		_, err := tmux(append([]string{"send-keys", "-t", target(name)}, args[2:]...)...)
		ts.Check(err)
	case "wait", "shows":
		if len(args) != 3 {
			ts.Fatalf("usage: term %s NAME REGEXP", args[0])
		}
		re, err := regexp.Compile("(?m)" + args[2])
		ts.Check(err)
		if args[0] == "shows" {
			if s := screen(name); re.MatchString(s) == neg {
				ts.Fatalf("the screen of %s (not) matching %q:\n%s", name, args[2], s)
			}
			return
		}
		deadline := time.Now().Add(limitOf(ts))
		for {
			s := screen(name)
			if re.MatchString(s) {
				return
			}
			if time.Now().After(deadline) {
				ts.Fatalf("timed out after %s waiting for %q on the screen of %s, which shows:\n%s", limitOf(ts), args[2], name, s)
			}
			time.Sleep(20 * time.Millisecond)
		}
	case "resize":
		if len(args) != 4 {
			ts.Fatalf("usage: term resize NAME COLS ROWS")
		}
		for _, n := range args[2:] {
			if _, err := strconv.Atoi(n); err != nil {
				ts.Fatalf("term resize: bad size %q", n)
			}
		}
		_, err := tmux("resize-window", "-t", target(name), "-x", args[2], "-y", args[3])
		ts.Check(err)
	default:
		ts.Fatalf("term: unknown %q: want start, keys, wait, shows or resize", args[0])
	}
}

// ptyclose PATTERN PROG ARGS...: run PROG on a new terminal as its controlling tty, wait until
// its output matches PATTERN, then close the terminal (the kernel hangs up on it), and wait
// for PROG to end.
func cmdPtyClose(ts *testscript.TestScript, neg bool, args []string) {
	noNegation(ts, neg, "ptyclose")
	if len(args) < 2 {
		ts.Fatalf("usage: ptyclose PATTERN PROG [ARGS...]")
	}
	re, err := regexp.Compile(args[0])
	ts.Check(err)
	cmd := scriptCommand(ts, args[1:])
	tty, err := pty.Start(cmd)
	ts.Check(err)
	var out bytes.Buffer
	buf := make([]byte, 4096)
	deadline := time.Now().Add(10 * time.Second)
	for !re.Match(out.Bytes()) {
		if time.Now().After(deadline) {
			tty.Close()
			cmd.Process.Kill()
			cmd.Wait()
			ts.Fatalf("no match for %q on the terminal; it showed:\n%s", args[0], out.String())
		}
		n, err := tty.Read(buf)
		out.Write(buf[:n])
		if err != nil {
			break
		}
	}
	ts.Logf("terminal showed:\n%s", out.String())
	tty.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		ts.Logf("%s ended: %v", args[1], err)
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		ts.Fatalf("%s still runs 10s after its terminal closed", args[1])
	}
}

// tty PROG ARGS...: run PROG with a new terminal as its stdin, stdout and stderr, and take what
// the terminal showed (line ends as \n) as its stdout, for stdout to check. It fails when PROG
// fails, unless negated.
func cmdTTY(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 {
		ts.Fatalf("usage: tty PROG [ARGS...]")
	}
	cmd := scriptCommand(ts, args)
	tty, err := pty.Start(cmd)
	ts.Check(err)
	done := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(tty) // EIO once PROG and all that shares the terminal are gone
		done <- b
	}()
	var out []byte
	select {
	case out = <-done:
	case <-time.After(limitOf(ts)):
		cmd.Process.Kill()
		ts.Fatalf("%s still holds its terminal after %s", args[0], limitOf(ts))
	}
	tty.Close()
	err = cmd.Wait()
	fmt.Fprint(ts.Stdout(), strings.ReplaceAll(string(out), "\r\n", "\n"))
	if (err != nil) != neg {
		ts.Fatalf("%s on a terminal: %v", args[0], err)
	}
}

// scriptCommand is PROG ARGS... as exec runs it in the script: found on the script's PATH, in
// $WORK, with the script's values of the variables agt and the harness read, and none of the
// AGT_ settings of the environment the tests run in.
func scriptCommand(ts *testscript.TestScript, args []string) *exec.Cmd {
	path, err := exec.LookPath(args[0])
	if err != nil {
		// testscript's own PATH, not the test process's.
		for _, dir := range filepath.SplitList(ts.Getenv("PATH")) {
			if p := filepath.Join(dir, args[0]); fileExists(p) {
				path, err = p, nil
				break
			}
		}
	}
	ts.Check(err)
	cmd := exec.Command(path, args[1:]...)
	cmd.Args[0] = args[0]
	cmd.Dir = ts.Getenv("WORK")
	// The test's own environment, without the agt settings of whoever runs the tests and
	// without what the script sets (or blanks).
	script := append([]string{"PATH", "HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "GORACE", testMarker,
		"AGT_AGENT", "AGT_MODEL", "AGT_BASE", "NO_COLOR"}, flagEnvVars()...)
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "AGT_") && !slices.Contains(script, k) {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	for _, k := range script {
		if v := ts.Getenv(k); v != "" {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	return cmd
}

// flagEnvVars are the environment variables that agt's flags read.
func flagEnvVars() []string {
	app := commands.New("test")
	var vars []string
	add := func(flags []cli.Flag) {
		for _, f := range flags {
			if e, ok := f.(interface{ GetEnvVars() []string }); ok {
				vars = append(vars, e.GetEnvVars()...)
			}
		}
	}
	add(app.Flags)
	for _, c := range app.Commands {
		add(c.Flags)
	}
	return vars
}

func fileExists(p string) bool { fi, err := os.Stat(p); return err == nil && !fi.IsDir() }
