// Command chain is the floor that bench/run.sh times `agt spawn` against: the least a spawn
// built like agt's can cost, two Go start-ups in a row. It re-executes itself detached as a
// child, which starts the command, tells the parent over a pipe that it did, and leaves; the
// parent returns then. Nothing is read, written or locked.
//
// Usage: chain COMMAND [ARG...]
package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: chain COMMAND [ARG...]")
		os.Exit(2)
	}
	if os.Getenv("CHAIN_CHILD") == "1" {
		child(os.Args[1:])
		return
	}
	r, w, err := os.Pipe()
	if err != nil {
		fail(err)
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		fail(err)
	}
	self, err := os.Executable()
	if err != nil {
		fail(err)
	}
	_, err = syscall.ForkExec(self, os.Args, &syscall.ProcAttr{
		Env:   append(os.Environ(), "CHAIN_CHILD=1"),
		Files: []uintptr{null.Fd(), null.Fd(), null.Fd(), w.Fd()},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		fail(err)
	}
	w.Close()
	b := make([]byte, 1)
	if n, _ := r.Read(b); n != 1 {
		fail(fmt.Errorf("the child did not start %s", os.Args[1]))
	}
}

// child starts argv in its own session and reports on descriptor 3.
func child(argv []string) {
	path, err := exec.LookPath(argv[0])
	if err != nil {
		os.Exit(1)
	}
	if _, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	}); err != nil {
		os.Exit(1)
	}
	os.NewFile(3, "ready").Write([]byte{1})
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "chain:", err)
	os.Exit(1)
}
