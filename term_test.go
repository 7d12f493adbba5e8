package main

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
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
	screen := func(name string) string {
		out, err := tmux("capture-pane", "-p", "-t", name)
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
		_, err = tmux("set-option", "-t", name, "window-size", "manual")
		ts.Check(err)
	case "keys":
		_, err := tmux(append([]string{"send-keys", "-t", name}, args[2:]...)...)
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
		deadline := time.Now().Add(pollLimit)
		for {
			s := screen(name)
			if re.MatchString(s) {
				return
			}
			if time.Now().After(deadline) {
				ts.Fatalf("timed out after %s waiting for %q on the screen of %s, which shows:\n%s", pollLimit, args[2], name, s)
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
		_, err := tmux("resize-window", "-t", name, "-x", args[2], "-y", args[3])
		ts.Check(err)
	default:
		ts.Fatalf("term: unknown %q: want start, keys, wait, shows or resize", args[0])
	}
}

// filesize FILE MIN MAX: FILE holds between MIN and MAX bytes.
func cmdFileSize(ts *testscript.TestScript, neg bool, args []string) {
	noNegation(ts, neg, "filesize")
	if len(args) != 3 {
		ts.Fatalf("usage: filesize FILE MIN MAX")
	}
	lo, err1 := strconv.ParseInt(args[1], 10, 64)
	hi, err2 := strconv.ParseInt(args[2], 10, 64)
	if err1 != nil || err2 != nil {
		ts.Fatalf("filesize: bad numbers")
	}
	fi, err := os.Stat(ts.MkAbs(args[0]))
	ts.Check(err)
	ts.Logf("%s holds %d bytes", args[0], fi.Size())
	if fi.Size() < lo || fi.Size() > hi {
		ts.Fatalf("%s holds %d bytes, not between %d and %d", args[0], fi.Size(), lo, hi)
	}
}
