// Package faketerminal is a deterministic interactive program for the scripts of terminal
// agents (spawn --tty, attach, send --keys): the fake agent runs it with -terminal.
package faketerminal

import (
	"bufio"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Main is the interactive program: it greets, shows a prompt "fake> " and answers each line typed; on a change of window size it
// redraws its screen, as full-screen programs do. Lines it knows: "exit N" exits with N;
// "perm" asks "Allow Bash? [y/n]" and waits; "busy" says it works and shows no prompt; "flood KB" prints that many KiB of lines; "paste"
// reports the next bracketed paste it gets as one message. It exits by itself after lifetime.
func Main(lifetime time.Duration) {
	go func() {
		time.Sleep(lifetime)
		os.Exit(125)
	}()
	size := func() string {
		ws, err := unix.IoctlGetWinsize(0, unix.TIOCGWINSZ)
		if err != nil {
			return "no terminal"
		}
		return fmt.Sprintf("%dx%d", ws.Row, ws.Col)
	}
	_, isTTY := unix.IoctlGetTermios(0, unix.TCGETS)
	// A title, colours and the greeting: raw in tty.log, plain in the output events.
	// Each answer and the prompt after it go in one write, so that a script that saw the
	// answer knows the prompt came too.
	const prompt = "fake> "
	fmt.Printf("\x1b]0;fake title\x07\x1b[1;32mfake\x1b[0m started on a %s terminal (%v), TERM=%s\n"+prompt, size(), isTTY == nil, os.Getenv("TERM"))
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	go func() {
		for range winch {
			fmt.Printf("\x1b[H\x1b[2Jscreen of fake at %s\n"+prompt, size())
		}
	}()
	in := bufio.NewReader(os.Stdin)
	for {
		line, err := in.ReadString('\n')
		if err != nil {
			os.Exit(0)
		}
		line = strings.TrimRight(line, "\r\n")
		word, arg, _ := strings.Cut(line, " ")
		switch {
		case word == "exit":
			n, _ := strconv.Atoi(arg)
			fmt.Printf("bye (%d)\n", n)
			os.Exit(n)
		case word == "perm":
			fmt.Print("╭────────────────╮\n│ Allow Bash? [y/n] ")
		case word == "busy":
			fmt.Print("working on it\n")
		case word == "flood":
			kb, _ := strconv.Atoi(arg)
			w := bufio.NewWriter(os.Stdout)
			for i := 0; i < kb*16; i++ {
				fmt.Fprintf(w, "flood line %05d %s\n", i, strings.Repeat("x", 40))
			}
			fmt.Fprint(w, prompt)
			w.Flush()
		case strings.HasPrefix(line, "\x1b[200~"):
			// A bracketed paste: the lines up to its end are one message.
			msg := strings.TrimPrefix(line, "\x1b[200~")
			for !strings.Contains(msg, "\x1b[201~") {
				more, err := in.ReadString('\n')
				if err != nil {
					os.Exit(0)
				}
				msg += "|" + strings.TrimRight(more, "\r\n")
			}
			msg = strings.Replace(msg, "\x1b[201~", "", 1)
			fmt.Printf("pasted: %s\n"+prompt, msg)
		default:
			fmt.Printf("you typed: %s\n"+prompt, line)
		}
	}
}
