// Command faults measures what a page fault costs on this machine: it maps fresh anonymous
// memory, touches one byte per page, and prints the time per first touch (a fault: the kernel
// finds and zeroes a page) and per second touch (none). Every Go start-up takes a few hundred
// such faults (perf stat -e page-faults), so their price sets the price of a start-up.
//
// Usage: faults [PAGES]   (default 20000)
package main

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

func main() {
	pages := 20000
	if len(os.Args) > 1 {
		n, err := strconv.Atoi(os.Args[1])
		if err != nil || n < 1 {
			fmt.Fprintln(os.Stderr, "usage: faults [PAGES]")
			os.Exit(2)
		}
		pages = n
	}
	size := os.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, pages*size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		os.Exit(1)
	}
	touch := func(v byte) time.Duration {
		start := time.Now()
		for i := 0; i < pages; i++ {
			mem[i*size] = v
		}
		return time.Since(start)
	}
	first, second := touch(1), touch(2)
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(pages) / 1000 }
	fmt.Printf("%d pages of %d bytes: first touch (a fault) %.2f us a page, second touch %.3f us\n",
		pages, size, per(first), per(second))
}
