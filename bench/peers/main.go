// Command peers is both ends of bench/peers.sh, which measures what a flood from a peer costs a
// supervisor (R36): the peers that flood, and the reading of the supervisor's memory.
//
// Usage:
//
//	peers ctl SOCKET CLIENTS MB     CLIENTS clients of a control channel at once, each writing MB
//	                                megabytes without a newline; returns once each is let go
//	peers acp REQUESTS KB           an ACP agent that, at its first prompt, sends REQUESTS
//	                                requests of a method named with KB kilobytes, reading none
//	                                of its input, then prints a notification flood/done and
//	                                reads its input again
//	peers rss PID                   the peak and current resident size of PID, in KiB
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 3 {
		usage()
	}
	switch os.Args[1] {
	case "ctl":
		if len(os.Args) != 5 {
			usage()
		}
		ctl(os.Args[2], atoi(os.Args[3]), atoi(os.Args[4]))
	case "acp":
		if len(os.Args) != 4 {
			usage()
		}
		acp(atoi(os.Args[2]), atoi(os.Args[3]))
	case "rss":
		b, err := os.ReadFile("/proc/" + os.Args[2] + "/status")
		if err != nil {
			fmt.Fprintln(os.Stderr, "peers:", err)
			os.Exit(1)
		}
		var hwm, rss string
		for _, l := range strings.Split(string(b), "\n") {
			f := strings.Fields(l)
			if len(f) >= 2 && f[0] == "VmHWM:" {
				hwm = f[1]
			}
			if len(f) >= 2 && f[0] == "VmRSS:" {
				rss = f[1]
			}
		}
		fmt.Println(hwm, rss)
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: peers ctl SOCKET CLIENTS MB | peers acp REQUESTS KB | peers rss PID")
	os.Exit(2)
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		usage()
	}
	return n
}

// ctl floods the control channel at path and says how its clients ended.
func ctl(path string, clients, mb int) {
	chunk := []byte(strings.Repeat("x", 64<<10))
	var wg sync.WaitGroup
	var mu sync.Mutex
	ends := map[string]int{}
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			end := "answered"
			defer func() { mu.Lock(); ends[end]++; mu.Unlock() }()
			fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				end = "no socket"
				return
			}
			c := os.NewFile(uintptr(fd), "ctl")
			defer c.Close()
			if err := unix.Connect(fd, &unix.SockaddrUnix{Name: path}); err != nil {
				end = "refused"
				return
			}
			for sent := 0; sent < mb<<20; sent += len(chunk) {
				if _, err := c.Write(chunk); err != nil {
					break
				}
			}
			line, _ := bufio.NewReader(c).ReadString('\n')
			switch {
			case strings.Contains(line, "cut off"):
				end = "cut off"
			case line == "":
				end = "closed"
			}
		}()
	}
	wg.Wait()
	fmt.Printf("%d clients of %d MB in %.1fs: %v\n", clients, mb, time.Since(start).Seconds(), ends)
}

// acp is an ACP agent that floods requests at its first prompt.
func acp(requests, kb int) {
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	send := func(s string) { out.WriteString(s + "\n"); out.Flush() }
	flooded := false
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return
		}
		var m struct {
			ID     json.RawMessage
			Method string
		}
		if json.Unmarshal(line, &m) != nil {
			continue
		}
		switch m.Method {
		case "initialize":
			send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1,"agentCapabilities":{},"authMethods":[]}}`, m.ID))
		case "session/new":
			send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"sessionId":"s-1"}}`, m.ID))
		case "session/prompt":
			if flooded {
				send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"stopReason":"end_turn"}}`, m.ID))
				continue
			}
			flooded = true
			pad := strings.Repeat("x", kb<<10)
			for i := range requests {
				send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"f%d","method":"fs/%s","params":{}}`, i, pad))
			}
			send(`{"jsonrpc":"2.0","method":"flood/done"}`)
		}
	}
}
