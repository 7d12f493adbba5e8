// Package ctl is what an agent's supervisor (package supervisor) and the commands that talk to
// it (package spawn) agree on: the control channel's requests and replies, the readiness line
// a starting supervisor writes, how it is told to start, the permission inbox's records, and how
// an agent's process tree is told from other processes and killed, which both a supervisor and
// a reap do. Both ends import it; it imports neither.
package ctl

import (
	"encoding/json"
	"time"

	"agt/state"
)

// The control channel is agents/NAME/ctl.sock, a unix stream socket the supervisor listens on
// for its whole life. A client connects, writes one Request as a JSON line and reads one Reply
// line; then the connection closes (but for attach, after which it carries the terminal). Only
// the agent's owner can connect: the socket is 0600 in a 0700 directory, and the supervisor
// checks the peer's uid.

// Timeout bounds a whole exchange on the channel, at both ends: a wedged supervisor gives a
// clear error, never a hang.
const Timeout = 5 * time.Second

// ExchangeTime is how long an exchange may take: Timeout, but in tests that shorten it.
func ExchangeTime() time.Duration {
	if Test.Timeout > 0 {
		return Test.Timeout
	}
	return Timeout
}

// An answer that arrives is true (R38). The client says in its request when it stops waiting
// (Deadline); the supervisor begins nothing that the request asks for (a message delivered,
// keys typed) past AnswerBy(Deadline), and answers by then what it did, so that the answer
// arrives before the client gives up. A client that gets no answer says that what happened is
// unknown, never that it failed. A message queued with Wait keeps its connection: a second
// reply says where its turn began (Seq), or why it was never delivered (Error).

// AnswerBy is when the supervisor answers a request whose client waits until deadline: early
// enough for the answer to reach it.
func AnswerBy(deadline time.Time) time.Time { return deadline.Add(-ExchangeTime() / 5) }

// AnswerBy is when the supervisor answers r: zero for no bound (a request without a deadline,
// as tests make them).
func (r Request) AnswerBy() time.Time {
	if r.Deadline.IsZero() {
		return time.Time{}
	}
	return AnswerBy(r.Deadline)
}

// Late reports whether it is past the time to begin what r asks for.
func (r Request) Late() bool {
	by := r.AnswerBy()
	return !by.IsZero() && time.Now().After(by)
}

// Ops of the control channel.
const (
	OpSend      = "send"       // a user message: the next turn of the conversation
	OpApprove   = "approve"    // allow a pending permission request
	OpDeny      = "deny"       // deny one
	OpInterrupt = "interrupt"  // cancel the running turn
	OpAfterTurn = "after-turn" // end the conversation once the running turn is over
	OpKeys      = "keys"       // keystrokes into a terminal agent
	OpAttach    = "attach"     // stay connected to a terminal agent's screen
	OpStatus    = "status"     // the status as the supervisor holds it, ahead of status.json
)

// Request is one command on the control channel.
type Request struct {
	Op      string `json:"op"`
	Text    string `json:"text,omitempty"`    // send: the message
	Queue   bool   `json:"queue,omitempty"`   // send: hold it until the running turn ends
	Steer   bool   `json:"steer,omitempty"`   // send: into the running turn, where the agent takes that
	ID      string `json:"id,omitempty"`      // approve, deny: the request; "" for the only one
	Always  bool   `json:"always,omitempty"`  // approve: allow such requests for the session
	Message string `json:"message,omitempty"` // deny: what the agent is told instead
	Rows    uint16 `json:"rows,omitempty"`    // attach: the client's terminal size
	Cols    uint16 `json:"cols,omitempty"`
	Wait    bool   `json:"wait,omitempty"` // send --queue: a second reply once it is delivered
	// Deadline is when the client stops waiting for the reply (zero: an older client, which
	// waits Timeout from its connect).
	Deadline time.Time `json:"deadline,omitzero"`
}

// Reply answers a Request: Error when it was refused.
type Reply struct {
	Error  string `json:"error,omitempty"`
	Seq    int64  `json:"seq,omitempty"`    // send: the last event before the turn it began
	ID     string `json:"id,omitempty"`     // approve, deny: the request answered
	Tool   string `json:"tool,omitempty"`   // approve, deny: its tool
	Queued bool   `json:"queued,omitempty"` // send --queue: held until the turn ends
	// Status is the agent's status as its supervisor holds it (status): ahead of status.json
	// while the disk refuses it.
	Status *state.Status `json:"status,omitempty"`
	// Then, in the supervisor only, brings the second reply of a message queued with Wait.
	Then <-chan Reply `json:"-"`
}

// Attaching goes over the control channel: the request {"op":"attach","rows":R,"cols":C} and
// its reply as for any request; then the connection stays open. The supervisor writes the
// program's output on it, raw, the recent output first; the client writes frames: a type byte,
// a two-byte big-endian length and the payload, FrameKeys for keys, FrameSize for a window size
// (rows and columns, two bytes each). The client writes no frame before the reply, so nothing
// it sends is lost to the reader of the request line.
const (
	FrameKeys = 'k'
	FrameSize = 'w'
)

// Permission is a permission request an agent waits on, as its event had it and as its inbox
// file (permissions/ID.json) holds it.
type Permission struct {
	ID      string          `json:"id"`
	Tool    string          `json:"tool"`
	Input   json.RawMessage `json:"input,omitempty"`
	Options json.RawMessage `json:"options,omitempty"`
	Seq     int64           `json:"seq"`
	TS      time.Time       `json:"ts"`
}

// How a supervisor starts its agent.
const (
	StartNew    = ""       // agt spawn: the start argv
	StartResume = "resume" // agt restart: resume the session where the kind can
	StartFresh  = "fresh"  // agt restart --fresh: the start argv again
)
