package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"golang.org/x/sys/unix"
)

// Peers of an agent's control channel, as scripts make and count them.

// ctlSocket is the control socket of agent name in the script's run directory.
func ctlSocket(ts *testscript.TestScript, name string) string {
	return filepath.Join(ts.Getenv("AGT_RUN_DIR"), "agents", name, "ctl.sock")
}

// ctlconns NAME N: wait until the supervisor of NAME has accepted N connections that are still
// open (the kernel's table of unix sockets lists the accepted ones under the socket's path).
func cmdCtlConns(ts *testscript.TestScript, neg bool, args []string) {
	noNegation(ts, neg, "ctlconns")
	if len(args) != 2 {
		ts.Fatalf("usage: ctlconns NAME N")
	}
	want, err := strconv.Atoi(args[1])
	ts.Check(err)
	path := ctlSocket(ts, args[0])
	poll(ts, fmt.Sprintf("%d connections to %s", want, path), func() bool {
		b, err := os.ReadFile("/proc/net/unix")
		ts.Check(err)
		n := 0
		for _, line := range strings.Split(string(b), "\n") {
			// Num RefCount Protocol Flags Type St Inode Path; St 03 is connected.
			if f := strings.Fields(line); len(f) == 8 && f[5] == "03" && f[7] == path {
				n++
			}
		}
		return n == want
	})
}

// ctlflood NAME CLIENTS MB: CLIENTS clients of NAME's control channel at once, each writing MB
// megabytes without a newline, as fast as the supervisor reads them; it returns once the
// supervisor has let every one go (cut it off), and fails after a minute.
func cmdCtlFlood(ts *testscript.TestScript, neg bool, args []string) {
	noNegation(ts, neg, "ctlflood")
	if len(args) != 3 {
		ts.Fatalf("usage: ctlflood NAME CLIENTS MB")
	}
	clients, err1 := strconv.Atoi(args[1])
	mb, err2 := strconv.Atoi(args[2])
	if err1 != nil || err2 != nil {
		ts.Fatalf("ctlflood: bad numbers")
	}
	path := ctlSocket(ts, args[0])
	chunk := []byte(strings.Repeat("x", 64<<10))
	var wg sync.WaitGroup
	answers := make([]string, clients)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				answers[i] = err.Error()
				return
			}
			tv := unix.NsecToTimeval(time.Minute.Nanoseconds())
			unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv)
			unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
			c := os.NewFile(uintptr(fd), "ctl")
			defer c.Close()
			if err := unix.Connect(fd, &unix.SockaddrUnix{Name: path}); err != nil {
				answers[i] = "connect: " + err.Error()
				return
			}
			for sent := 0; sent < mb<<20; sent += len(chunk) {
				if _, err := c.Write(chunk); err != nil {
					break // cut off
				}
			}
			line, _ := bufio.NewReader(c).ReadString('\n')
			answers[i] = strings.TrimSpace(line)
		}()
	}
	wg.Wait()
	for i, a := range answers {
		ts.Logf("client %d: %s", i, a)
	}
}
