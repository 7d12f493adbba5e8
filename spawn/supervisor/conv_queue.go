package supervisor

import (
	"fmt"

	"agt/spawn/ctl"
)

// The messages held for the end of the running turn (agt send --queue), bounded (R36): a
// message past maxQueued of them, or past maxQueuedBytes of their text, is refused. Each is
// delivered once, in order, when a turn ends; the client of one sent with --wait is told where
// its turn began (its own, not the first one's: R38), or that it was never delivered.
const (
	maxQueued      = 1024
	maxQueuedBytes = 32 << 20
)

// queuedMessage is a message waiting for its turn.
type queuedMessage struct {
	text string
	told chan ctl.Reply // where its delivery is told (send --queue --wait); nil for nobody
}

// messageQueue is a conversation's queue of messages; the supervisor's mu guards it.
type messageQueue struct {
	msgs  []queuedMessage
	bytes int
}

func (q *messageQueue) empty() bool { return len(q.msgs) == 0 }

// first is the text of the next message to deliver.
func (q *messageQueue) first() string { return q.msgs[0].text }

// addLocked queues the message of req for agent name, whose log is at seq, and says so: the
// reply brings the second one (Then) when req waits for the delivery.
func (q *messageQueue) addLocked(name string, req ctl.Request, seq int64) ctl.Reply {
	if len(q.msgs) >= maxQueued || q.bytes+len(req.Text) > maxQueuedBytes {
		return ctl.Reply{Error: fmt.Sprintf("%s has %d messages queued already (%d KiB): not queued; send it once its turn has ended", name, len(q.msgs), q.bytes>>10)}
	}
	m := queuedMessage{text: req.Text}
	r := ctl.Reply{Queued: true, Seq: seq}
	if req.Wait {
		told := make(chan ctl.Reply, 1)
		m.told, r.Then = told, told
	}
	q.msgs = append(q.msgs, m)
	q.bytes += len(req.Text)
	return r
}

// deliveredLocked takes the first message off the queue: it went to the agent after the event
// seq, where its turn begins.
func (q *messageQueue) deliveredLocked(seq int64) {
	m := q.pop()
	if m.told != nil {
		m.told <- ctl.Reply{Seq: seq}
	}
}

// dropLocked takes the first n messages (all, for n < 0) off the queue, undelivered, for why.
func (q *messageQueue) dropLocked(why string, n int) {
	for ; n != 0 && len(q.msgs) > 0; n-- {
		if m := q.pop(); m.told != nil {
			m.told <- ctl.Reply{Error: why}
		}
	}
}

func (q *messageQueue) pop() queuedMessage {
	m := q.msgs[0]
	q.msgs[0] = queuedMessage{}
	q.msgs = q.msgs[1:]
	q.bytes -= len(m.text)
	if len(q.msgs) == 0 {
		q.msgs = nil
	}
	return m
}
