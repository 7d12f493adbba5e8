package state

import (
	"context"
	"testing"
	"time"
)

// TestEndLock: while the supervisor holds the end lock, readers see it alive with its end
// unknown, and a wait for the end blocks; once it lets go (the disk refuses the end), they see
// the end known while the lock is still held, and the wait returns; when the lock goes, so
// does the supervisor.
func TestEndLock(t *testing.T) {
	a := newAgent(t, "x")
	if sup, known := a.Liveness(); sup || known {
		t.Fatalf("no lock file: Liveness = %v, %v", sup, known)
	}
	l, err := a.Lock()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.HoldEnd(); err != nil {
		t.Fatal(err)
	}
	if sup, known := a.Liveness(); !sup || known {
		t.Fatalf("end held: Liveness = %v, %v; want true, false", sup, known)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	if err := a.WaitEndKnown(ctx); err != context.DeadlineExceeded {
		t.Fatalf("WaitEndKnown with the end held = %v", err)
	}
	cancel()
	done := make(chan error, 1)
	go func() { done <- a.WaitEndKnown(context.Background()) }()
	l.EndKnown()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitEndKnown did not return once the end was known")
	}
	if sup, known := a.Liveness(); !sup || !known {
		t.Fatalf("end known: Liveness = %v, %v; want true, true", sup, known)
	}
	// A new holder takes it again once the readers let go.
	if err := l.HoldEnd(); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if sup, _ := a.Liveness(); sup {
		t.Fatal("Liveness says supervised after Close")
	}
	if err := a.WaitEndKnown(context.Background()); err != nil {
		t.Fatal(err)
	}
}
