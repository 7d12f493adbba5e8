// Package stdiotap records both directions of an agent that talks on its stdin and stdout: the
// root test binary registers Main as the script command stdiotap. See Main.
package stdiotap

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
)

// Main runs a command between agt and an agent that talks on its stdin and stdout (ACP,
// Codex's app-server), and writes both directions to a transcript in the form of the captures in
// stream/testdata/acp: ">>> " a line agt wrote, "<<< " a line the agent wrote, "### rc N" the
// agent's exit code. It is how those captures are made with a real CLI:
//
//	[agents.claude-acp-tap]
//	start = ["stdiotap", "/tmp/claude.txt", "claude-agent-acp"]
//	format = "acp"
//	stdin = "acp"
//
// Usage: stdiotap FILE COMMAND [ARG...]. Its exit code is the agent's; SIGTERM and SIGINT are
// passed on.
func Main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: stdiotap FILE COMMAND [ARG...]")
		os.Exit(2)
	}
	f, err := os.OpenFile(os.Args[1], os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "stdiotap:", err)
		os.Exit(1)
	}
	cmd := exec.Command(os.Args[2], os.Args[3:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "stdiotap:", err)
		os.Exit(1)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "stdiotap:", err)
		os.Exit(1)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "stdiotap:", err)
		os.Exit(1)
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		for s := range sigs {
			cmd.Process.Signal(s)
		}
	}()
	var mu sync.Mutex
	record := func(prefix string, line []byte) {
		mu.Lock()
		defer mu.Unlock()
		f.Write(append(append([]byte(prefix), line...), '\n'))
	}
	copyLines := func(dst io.Writer, src io.Reader, prefix string, done func()) {
		defer done()
		r := bufio.NewReaderSize(src, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				if line[len(line)-1] == '\n' {
					line = line[:len(line)-1]
				}
				record(prefix, line)
				if _, werr := dst.Write(append(line, '\n')); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}
	go copyLines(in, os.Stdin, ">>> ", func() { in.Close() })
	var wg sync.WaitGroup
	wg.Add(1)
	go copyLines(os.Stdout, out, "<<< ", wg.Done)
	wg.Wait()
	err = cmd.Wait()
	code := cmd.ProcessState.ExitCode()
	record("### rc=", fmt.Appendf(nil, "%d", code))
	f.Close()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		signal.Reset()
		syscall.Kill(os.Getpid(), ws.Signal()) // die as the agent died
	}
	_ = err
	os.Exit(code)
}
