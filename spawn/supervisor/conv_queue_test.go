package supervisor

import (
	"strings"
	"testing"

	"agt/spawn/ctl"
)

// TestMessageQueue: messages queued with Wait are each told where their own turn began, in
// order, or why they were never delivered; past maxQueued messages, or maxQueuedBytes of them,
// one is refused.
func TestMessageQueue(t *testing.T) {
	var q messageQueue
	r1 := q.addLocked("a", ctl.Request{Text: "m1", Wait: true}, 10)
	r2 := q.addLocked("a", ctl.Request{Text: "m2"}, 10)
	r3 := q.addLocked("a", ctl.Request{Text: "m3", Wait: true}, 11)
	if !r1.Queued || r1.Then == nil || r2.Then != nil || r1.Seq != 10 {
		t.Fatalf("replies %+v, %+v", r1, r2)
	}
	if q.first() != "m1" {
		t.Fatalf("first %q", q.first())
	}
	q.deliveredLocked(20)
	if got := <-r1.Then; got.Seq != 20 || got.Error != "" {
		t.Fatalf("m1 told %+v, want seq 20", got)
	}
	q.deliveredLocked(30) // m2: nobody waits
	q.dropLocked("a ended", -1)
	if got := <-r3.Then; got.Error != "a ended" {
		t.Fatalf("m3 told %+v, want the drop", got)
	}
	if !q.empty() || q.bytes != 0 {
		t.Fatalf("queue left %+v", q)
	}

	for i := range maxQueued {
		if r := q.addLocked("a", ctl.Request{Text: "m"}, int64(i)); r.Error != "" {
			t.Fatalf("message %d refused: %s", i, r.Error)
		}
	}
	if r := q.addLocked("a", ctl.Request{Text: "m"}, 0); !strings.Contains(r.Error, "1024 messages queued already") {
		t.Fatalf("past maxQueued: %+v", r)
	}
	q.dropLocked("", -1)
	big := strings.Repeat("x", maxQueuedBytes/2)
	q.addLocked("a", ctl.Request{Text: big}, 0)
	q.addLocked("a", ctl.Request{Text: big}, 0)
	if r := q.addLocked("a", ctl.Request{Text: "x"}, 0); r.Error == "" {
		t.Fatal("a message past maxQueuedBytes was queued")
	}
}
