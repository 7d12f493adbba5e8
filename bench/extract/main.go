// Command extract is the reference point of the decoder benchmark: a bare gjson extractor of
// four fields per line, printing them as JSON. Usage: extract FIELD,FIELD,FIELD,FIELD FILE.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: extract FIELDS FILE")
		os.Exit(2)
	}
	runtime.GOMAXPROCS(1)
	fields := strings.Split(os.Args[1], ",")
	f, err := os.Open(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	r := bufio.NewReaderSize(f, 1<<20)
	w := bufio.NewWriterSize(io.Discard, 1<<16)
	var in int64
	start := time.Now()
	for {
		line, err := r.ReadSlice('\n')
		in += int64(len(line))
		if len(line) > 1 {
			for _, v := range gjson.GetManyBytes(line, fields...) {
				w.WriteString(v.Raw)
			}
			w.WriteByte('\n')
		}
		if err != nil {
			break
		}
	}
	w.Flush()
	d := time.Since(start)
	fmt.Printf("%.0f MB/s (%d MB in %.2fs)\n", float64(in)/1e6/d.Seconds(), in/1e6, d.Seconds())
}
