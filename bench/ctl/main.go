// Command ctl times the control channel: N round trips of `agt send --queue` to a live
// conversation agent, from the client's connect to the supervisor's answer, which comes once the
// message is written to the agent's stdin. It prints the median, p99 and max.
//
// Usage: go run ./bench/ctl RUN_DIR NAME [N]
package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

	"agt/spawn"
	"agt/state"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: ctl RUN_DIR NAME [N]")
		os.Exit(2)
	}
	n := 1000
	if len(os.Args) > 3 {
		n, _ = strconv.Atoi(os.Args[3])
	}
	d, err := state.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "ctl:", err)
		os.Exit(1)
	}
	a, err := d.Agent(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "ctl:", err)
		os.Exit(1)
	}
	times := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		t0 := time.Now()
		if _, err := spawn.Control(context.Background(), a, spawn.Request{Op: spawn.OpSend, Text: "ping " + strconv.Itoa(i), Queue: true}); err != nil {
			fmt.Fprintln(os.Stderr, "ctl:", err)
			os.Exit(1)
		}
		times = append(times, time.Since(t0))
	}
	slices.Sort(times)
	fmt.Printf("control channel, %d sends: median %v, p99 %v, max %v\n", n, times[n/2], times[n*99/100], times[n-1])
}
