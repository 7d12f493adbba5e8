package supervisor

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"
	"time"
)

// TestInputWriterBounded: an agent that reads nothing holds at most maxInput of queued lines;
// what would go past it is refused whole, the first refusal of a spell said once; when the
// agent takes a line again, took hears how many were refused, and room comes back.
func TestInputWriterBounded(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	took := make(chan int, 1)
	lw := newInputWriter(w, func(n int) { took <- n })
	defer lw.closeAfter()
	line := bytes.Repeat([]byte("x"), 1<<20)
	line[len(line)-1] = '\n'
	sent := 0
	for ; ; sent++ {
		first, err := lw.send(line)
		if err != nil {
			var full errInputFull
			if !errors.As(err, &full) || !first {
				t.Fatalf("refusal %v (first %v), want the first errInputFull", err, first)
			}
			break
		}
	}
	// What the pipe holds is out of the queue; the rest is within the bound.
	if sent > maxInput>>20+1 {
		t.Fatalf("%d lines of 1 MiB queued, past the bound of %d MiB", sent, maxInput>>20)
	}
	if first, err := lw.send(line); err == nil || first {
		t.Fatalf("second refusal: %v (first %v), want a refusal not said again", err, first)
	}
	if err := lw.room(1); err == nil {
		t.Fatal("room with the queue full")
	}
	// The agent reads: the spell ends, and says how many lines it refused.
	go io.Copy(io.Discard, r)
	select {
	case n := <-took:
		if n != 2 {
			t.Fatalf("took(%d), want 2 refused", n)
		}
	case <-time.After(bound):
		t.Fatal("took was not called once the agent read")
	}
	if err := lw.room(len(line)); err != nil {
		t.Fatalf("room once it reads: %v", err)
	}
}

// TestInputWriterGone: once the agent's stdin is closed (it exited), lines go nowhere and
// nothing is held.
func TestInputWriterGone(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	lw := newInputWriter(w, nil)
	lw.send([]byte("a\n")) // EPIPE: the writer ends
	deadline := time.Now().Add(bound)
	for {
		lw.mu.Lock()
		done := lw.done
		lw.mu.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the writer did not end on a closed pipe")
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := lw.send(bytes.Repeat([]byte("x"), maxInput+1)); err != nil {
		t.Fatalf("send after the end: %v, want nothing", err)
	}
	if lw.queued != 0 || lw.lines != nil {
		t.Fatalf("%d bytes held after the end", lw.queued)
	}
}
