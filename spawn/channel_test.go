package spawn

import (
	"bufio"
	"context"
	"net"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"agt/state"
)

// TestSendQueuedRepliesTogether: a supervisor whose two replies to send --wait --queue (queued,
// then delivered) reach the client's socket before the client reads either (a busy machine)
// still has its second reply read: the first read takes no byte past the first reply.
func TestSendQueuedRepliesTogether(t *testing.T) {
	d, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a, err := d.Create("chat")
	if err != nil {
		t.Fatal(err)
	}
	// A supervisor holds the lock.
	lock, err := os.OpenFile(a.Path(state.LockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", a.Path(state.CtlSocket))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		bufio.NewReader(c).ReadBytes('\n')
		c.Write([]byte("{\"queued\":true,\"seq\":3}\n{\"seq\":7}\n")) // both at once, then gone
	}()
	r, err := SendQueued(context.Background(), a, Request{Op: OpSend, Text: "m3", Queue: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Seq != 7 || !r.Queued {
		t.Errorf("reply %+v, want the second one (seq 7), queued", r)
	}
}
