// Command hello is the reference for process start time in bench/run.sh: a Go hello-world,
// built static (CGO_ENABLED=0), that does nothing but print one line.
package main

import "os"

func main() {
	os.Stdout.WriteString("hello\n")
}
