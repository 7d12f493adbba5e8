package commands

// The transcript of one agent over HTTP: its events after a seq, as NDJSON for scripts, or as
// server-sent events that go on as the agent writes, resuming after the last seq a browser saw
// (Last-Event-ID) when it comes back.

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/tidwall/gjson"

	"agt/state"
	"agt/stream"
)

const (
	// pageEvents is how many of the last events a stream starts with when no seq is given.
	pageEvents = 300
	// resumeEvents and resumeBytes bound what a resume replays: a client further behind is
	// told of a gap (the older events are in agt tail).
	resumeEvents = 20000
	resumeBytes  = 32 << 20
	// viewText bounds one event's text in the page's view of it.
	viewText = 8 << 10
	// sseBeat is how often an idle stream says it is alive, so that a dead client is noticed
	// and a proxy does not close the connection.
	sseBeat = 25 * time.Second
	// sseWriteTimeout bounds one write to a client.
	sseWriteTimeout = 30 * time.Second
)

// past is what an agent's log holds after a seq: the lines, oldest first, and a cursor at the
// end of the log for following it. gapFrom..gapTo are the seqs the log no longer holds
// (rotated away, or past the resume bounds); gapTo is 0 when nothing is missing. newest is the
// log's last seq, 0 for an empty log.
type past struct {
	lines                  [][]byte
	c                      *state.Cursor
	gapFrom, gapTo, newest int64
}

// pastEvents reads the events of a's log after seq after (the last pageEvents when after < 0).
func pastEvents(a *state.Agent, after int64) (*past, error) {
	p := &past{}
	var size int
	var oldest int64 // the smallest seq read: a file read twice across a rotation shows it again
	reached := after <= 0
	collect := func(line []byte) bool {
		seq := gjson.GetBytes(line, "seq").Int()
		if seq > 0 {
			if oldest > 0 && seq >= oldest {
				return true
			}
			oldest = seq
			p.newest = max(p.newest, seq)
			if after >= 0 && seq <= after {
				reached = true
				return false
			}
			if seq == after+1 {
				reached = true
			}
		}
		p.lines = append(p.lines, bytes.TrimSuffix(slices.Clone(line), []byte{'\n'}))
		size += len(line)
		if after < 0 {
			return len(p.lines) < pageEvents
		}
		return len(p.lines) < resumeEvents && size < resumeBytes
	}
	path := a.Path(state.EventsFile)
	more := true
	c, err := state.ReadLogBack(path, func(line []byte) bool { more = collect(line); return more })
	if err == nil && more {
		err = state.ReadRotatedBack(path, collect)
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	p.c = c
	slices.Reverse(p.lines)
	if after >= 0 && !reached && oldest > after+1 {
		p.gapFrom, p.gapTo = after+1, oldest-1
	}
	return p, nil
}

// gapLine is the event saying that the seqs from..to are missing.
func gapLine(name string, from, to int64) []byte {
	ev := stream.Event{V: stream.Version, TS: time.Now(), Agent: name, Seq: to, Type: stream.TypeGap,
		Missed: to - from + 1, FromSeq: from, ToSeq: to}
	return bytes.TrimSuffix(ev.AppendJSON(nil), []byte{'\n'})
}

// eventView is an event as the page shows it: one or a few lines of plain text made by the
// transcript that agt tail prints, and a style. The agent's words are in Text as they came,
// bounded, without control characters; the page sets them as text, never as HTML.
type eventView struct {
	Seq   int64     `json:"seq"`
	TS    time.Time `json:"ts"`
	Type  string    `json:"type"`
	Style string    `json:"style,omitempty"` // dim, bad, ok, ask, strong
	Text  string    `json:"text"`
}

// styles maps the transcript's SGR colours to the page's classes.
var styles = map[string]string{sgrDim: "dim", sgrRed: "bad", sgrGreen: "ok", sgrYellow: "ask", sgrBold: "strong"}

// view renders an event line for the page; ok is false for what the transcript does not show.
func (t *transcript) view(line []byte) (v eventView, ok bool) {
	var ev stream.Event
	if err := json.Unmarshal(line, &ev); err != nil || ev.Type == "" || t.denial(&ev) {
		return v, false
	}
	style, body := t.body(&ev, line)
	if ev.Type == stream.TypePermission && ev.Decision == "" {
		// The transcript's "answer: agt approve …" line is for a terminal; the page has buttons.
		body, _, _ = strings.Cut(body, "\n  answer: ")
	}
	if body == "" {
		return v, false
	}
	return eventView{Seq: ev.Seq, TS: ev.TS, Type: ev.Type, Style: styles[style], Text: webText(body, viewText)}, true
}

// webText makes agent text fit for a page: at most max bytes (cut on a rune, saying how much
// more there was), without control characters (newlines and tabs stay) or the invisible
// characters that reorder text (bidi overrides) and could make a command read as another.
func webText(s string, max int) string {
	var b strings.Builder
	cut := 0
	for i, r := range s {
		if b.Len() >= max {
			cut = len(s) - i
			break
		}
		switch {
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case unicode.IsControl(r), r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069, r == 0x200E, r == 0x200F:
			b.WriteRune('\uFFFD')
		default:
			b.WriteRune(r)
		}
	}
	if cut > 0 {
		b.WriteString("… (" + strconv.Itoa(cut) + " bytes more)")
	}
	return b.String()
}

// sseWriter writes server-sent events to one client, one writer at a time: the stream's
// follower and its heartbeat.
type sseWriter struct {
	mu sync.Mutex
	w  http.ResponseWriter
	rc *http.ResponseController
}

// startSSE answers r with an event stream.
func startSSE(w http.ResponseWriter) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &sseWriter{w: w, rc: http.NewResponseController(w)}
	s.mu.Lock()
	s.w.Write([]byte("retry: 2000\n\n"))
	s.mu.Unlock()
	return s
}

// event writes one event: its id (the seq, or "" for none), name and one line of data. The
// data is JSON, which holds no raw newline; a stray CR or LF is made a space all the same,
// since either would end the field.
func (s *sseWriter) event(id, name string, data []byte) error {
	var b bytes.Buffer
	if id != "" {
		b.WriteString("id: " + id + "\n")
	}
	if name != "" {
		b.WriteString("event: " + name + "\n")
	}
	b.WriteString("data: ")
	for _, c := range data {
		if c == '\n' || c == '\r' {
			c = ' '
		}
		b.WriteByte(c)
	}
	b.WriteString("\n\n")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rc.SetWriteDeadline(time.Now().Add(sseWriteTimeout))
	_, err := s.w.Write(b.Bytes())
	return err
}

// comment writes a line the browser does not dispatch: "id: N\n\n" moves its last seq on.
func (s *sseWriter) comment(raw string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rc.SetWriteDeadline(time.Now().Add(sseWriteTimeout))
	_, err := s.w.Write([]byte(raw))
	return err
}

// flush sends what was written.
func (s *sseWriter) flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rc.SetWriteDeadline(time.Now().Add(sseWriteTimeout))
	return s.rc.Flush()
}

// beat writes a comment every sseBeat until ctx ends; a failed write cancels the stream.
func (s *sseWriter) beat(ctx context.Context, cancel context.CancelFunc) {
	t := time.NewTicker(sseBeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.mu.Lock()
		s.rc.SetWriteDeadline(time.Now().Add(sseWriteTimeout))
		_, err := s.w.Write([]byte(": beat\n\n"))
		if err == nil {
			err = s.rc.Flush()
		}
		s.mu.Unlock()
		if err != nil {
			cancel()
			return
		}
	}
}

// lastSeq is where a stream resumes: Last-Event-ID (a browser coming back), else ?after=SEQ;
// -1 when neither is given. ok is false when one is given but is not a seq.
func lastSeq(r *http.Request) (seq int64, ok bool) {
	s := r.Header.Get("Last-Event-ID")
	if s == "" {
		s = r.URL.Query().Get("after")
	}
	if s == "" {
		return -1, true
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n >= 0
}
