// Package webhook is a loopback HTTP server that records what it is sent, for the notification
// tests: the root test binary registers Main as the script command webhook. See Main.
package webhook

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"
)

// Main is a loopback HTTP server for the notification tests: webhook URLFILE BODIES
// [STATUS] listens on 127.0.0.1, writes its URL to URLFILE, appends the body of every request
// to BODIES, one line each, and writes its method and content type to BODIES.N for the Nth
// (for waitfile), answering STATUS (200). It exits after ten minutes by itself (a test binary
// killed on timeout runs no cleanup), or at SIGTERM.
func Main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: webhook URLFILE BODIES [STATUS]")
		os.Exit(2)
	}
	status := http.StatusOK
	if len(os.Args) > 3 {
		fmt.Sscan(os.Args[3], &status)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	out, err := os.OpenFile(os.Args[2], os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var mu sync.Mutex
	n := 0
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		mu.Lock()
		fmt.Fprintf(out, "%s\n", b)
		n++
		writeWhole(fmt.Sprintf("%s.%d", os.Args[2], n), r.Method+" "+r.Header.Get("Content-Type")+"\n")
		mu.Unlock()
		w.WriteHeader(status)
	})}
	url := "http://" + ln.Addr().String() + "/hook"
	writeWhole(os.Args[1], url)
	go func() {
		time.Sleep(10 * time.Minute)
		os.Exit(0)
	}()
	srv.Serve(ln)
}

// writeWhole writes a file under another name and renames it into place: a script that waits
// for the file (waitfile) never reads it empty or half written.
func writeWhole(path, text string) {
	tmp := path + ".tmp"
	os.WriteFile(tmp, []byte(text), 0o600)
	os.Rename(tmp, path)
}
