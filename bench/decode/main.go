// Command decode times agt's decoders alone: bytes in, schema v1 events out (serialized, as
// the supervisor writes them), one core. Usage: decode FORMAT FILE. It prints MB/s.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"agt/stream"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: decode FORMAT FILE")
		os.Exit(2)
	}
	runtime.GOMAXPROCS(1)
	f, err := os.Open(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	dec := stream.ForFormat(os.Args[1])
	r := bufio.NewReaderSize(f, 1<<20)
	var events []stream.Event
	var out []byte
	var in, n int64
	start := time.Now()
	for {
		line, err := r.ReadSlice('\n')
		in += int64(len(line))
		if len(line) > 1 {
			events = dec.Decode(events[:0], line[:len(line)-1])
			for i := range events {
				out = append(events[i].AppendJSON(out[:0]), '\n')
				n++
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	d := time.Since(start)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Printf("%.0f MB/s (%d MB in %.2fs, %d events, heap in use %d MB)\n",
		float64(in)/1e6/d.Seconds(), in/1e6, d.Seconds(), n, ms.HeapInuse>>20)
}
