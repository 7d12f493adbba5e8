package commands

import (
	"context"
	"io"
	"slices"
	"strconv"
	"sync"
	"time"
)

// What agt top does for the agents of hosts: their rows come from hostFleet; their transcript
// is the host's tail -f of the agent, streamed while the view is open.

// label names a row's agent for people: NAME here, HOST:NAME when hosts are in play.
func (r *topRow) label() string { return qualifiedKey(r.Host, r.Name) }

// qualifiedKey is NAME, or HOST:NAME when host is set.
func qualifiedKey(host, name string) string {
	if host == "" {
		return name
	}
	return host + ":" + name
}

// openTranscript shows the transcript of r's agent: read from its log here, or streamed from
// its host.
func (m *topModel) openTranscript(r *topRow) {
	m.closeTranscript()
	m.view, m.tkey, m.tscroll, m.moved = viewTranscript, r.key(), 0, true
	if h := m.fleet.hostOfRow(r); h != nil && m.send != nil {
		m.traw = nil
		m.tstop = m.followHost(h, r.key(), r.Name)
	}
	m.loadTranscript()
}

// closeTranscript stops the stream of a host's transcript, if one runs.
func (m *topModel) closeTranscript() {
	if m.tstop != nil {
		m.tstop()
		m.tstop, m.traw = nil, nil
	}
}

// followHost streams the last transcriptMax events of the agent name of h, then its new ones,
// to the program (as transcriptMsg for key), gathered for topBatch, until the returned cancel
// is called. A dropped link is followed again after the last event it brought.
func (m *topModel) followHost(h *hostFleet, key, name string) context.CancelFunc {
	ctx, cancel := context.WithCancel(m.ctx)
	send := m.send
	var mu sync.Mutex
	var pending [][]byte
	flush := func() {
		mu.Lock()
		lines := pending
		pending = nil
		mu.Unlock()
		if ctx.Err() == nil && len(lines) > 0 {
			send(transcriptMsg{key: key, lines: lines})
		}
	}
	fl := &hostFollower{errw: io.Discard, flags: []string{"--lines=" + strconv.Itoa(transcriptMax)}, sink: func(line []byte) error {
		mu.Lock()
		first := len(pending) == 0
		pending = append(pending, slices.Clone(line))
		mu.Unlock()
		if first {
			time.AfterFunc(topBatch, flush)
		}
		return nil
	}}
	go fl.follow(ctx, h.place, []string{name})
	return cancel
}
