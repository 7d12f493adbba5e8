package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"agt/config"
	"agt/spawn/ctl"
	"agt/state"
	"agt/stream"
)

// A notifier tells a person that the agent needs them (it starts to wait for them) or failed
// ([notify] in agt.toml): a desktop notification through notify-send, run as a hook is (the
// supervisor reaps it), and a JSON POST to a webhook. It runs from a goroutine of its own
// behind a small queue, so the supervisor never waits on it; a full queue drops and logs. It is
// rate limited per agent: a burst of notifyBurst, then one per MinInterval; what it drops it
// counts and says in the next one. Every failure goes to supervisor.log.
type notifier struct {
	a       *state.Agent
	spec    state.NotifySpec
	desktop func(argv []string) // queues a hook run of argv; nil for no desktop notifications
	client  *http.Client
	queue   chan notice
	done    chan struct{}
	bucket  bucket
	dropped int
	host    string
}

// notice is one change of state worth telling.
type notice struct {
	state, reason string
	at            time.Time
}

// notifyBurst is how many notifications an agent sends in a row before the rate limit holds.
const notifyBurst = 3

// notifyQueue bounds the notices waiting for the notifier.
const notifyQueue = 16

// webhookTimeout bounds one POST.
const webhookTimeout = 10 * time.Second

// Payload is the JSON body of a webhook POST.
type Payload struct {
	Agent  string `json:"agent"`
	Host   string `json:"host,omitempty"`
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
	// Question is what the agent waits on: the tool and its input in one line, the plan, the
	// question; or, for a failure, the agent's own message.
	Question string `json:"question,omitempty"`
	// Tool and Input are the request it waits on, as it sent them.
	Tool  string          `json:"tool,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// Text says all of it in one line, for chat webhooks that show a text field.
	Text string `json:"text"`
	// URL is the agent's page on agt serve ([notify] link, or the agt serve running on the
	// run directory), without the token; absent when there is none.
	URL     string    `json:"url,omitempty"`
	TS      time.Time `json:"ts"`
	Dropped int       `json:"dropped,omitempty"` // notifications the rate limit held back before this one
}

func newNotifier(a *state.Agent, spec *state.NotifySpec, desktop func([]string)) *notifier {
	if spec == nil || (!spec.Desktop && spec.Webhook == "") {
		return nil
	}
	n := &notifier{a: a, spec: *spec, client: &http.Client{Timeout: webhookTimeout},
		queue: make(chan notice, notifyQueue), done: make(chan struct{})}
	if spec.Desktop {
		n.desktop = desktop
	}
	every := time.Duration(spec.MinInterval)
	if every <= 0 {
		every = config.DefaultNotifyInterval
	}
	n.bucket = bucket{burst: notifyBurst, every: every, tokens: notifyBurst}
	n.host, _ = os.Hostname()
	go n.run()
	return n
}

// worth reports whether a change to state for reason is one a person is told of.
func worth(prev, st, reason string) bool {
	switch st {
	case stream.Waiting:
		return prev != stream.Waiting && prev != stream.Stale
	case stream.Failed:
		return true
	}
	return false
}

// changed queues a notice of a change, if it is worth one; it never blocks.
func (n *notifier) changed(prev, st, reason string) {
	if n == nil || !worth(prev, st, reason) {
		return
	}
	select {
	case n.queue <- notice{st, reason, time.Now()}:
	default:
		fmt.Fprintf(os.Stderr, "agt supervise: notify: %d notices wait already; dropped %s (%s)\n", notifyQueue, st, reason)
	}
}

func (n *notifier) run() {
	defer close(n.done)
	for nt := range n.queue {
		if !n.bucket.take(nt.at) {
			n.dropped++
			fmt.Fprintf(os.Stderr, "agt supervise: notify: rate limited, dropped %s (%s)\n", nt.state, nt.reason)
			continue
		}
		p := n.payload(nt)
		n.dropped = 0
		if n.desktop != nil {
			n.desktop(desktopArgv(&p))
		}
		if n.spec.Webhook != "" {
			if err := n.post(&p); err != nil {
				fmt.Fprintf(os.Stderr, "agt supervise: notify webhook: %v\n", err)
			}
		}
	}
}

// payload describes a notice: what the agent waits for, read from its inbox.
func (n *notifier) payload(nt notice) Payload {
	p := Payload{Agent: n.a.Name, Host: n.host, State: nt.state, Reason: nt.reason, TS: nt.at.UTC(), Dropped: n.dropped}
	if w := ctl.WaitingFor(n.a, &state.Status{State: nt.state, Reason: nt.reason}); w != nil && w.Tool != "" {
		p.Tool, p.Input, p.Question = w.Tool, w.Input, w.Line()
	}
	switch {
	case nt.state == stream.Failed:
		p.Text = fmt.Sprintf("agt: %s failed (%s)", p.Agent, nt.reason)
	case p.Question != "":
		p.Text = fmt.Sprintf("agt: %s waits for you: %s", p.Agent, p.Question)
	default:
		p.Text = fmt.Sprintf("agt: %s waits for you (%s)", p.Agent, nt.reason)
	}
	if p.URL = agentLink(n.spec.Link, n.a); p.URL != "" {
		p.Text += " " + p.URL
	}
	return p
}

// agentLink is the address of a's page on agt serve: link (the page as the person's devices
// reach it), else the URL of the agt serve running on a's run directory, with the agent's
// name as the fragment; "" when there is neither. The token is never part of it: the browser
// that opened agt serve's link once holds a cookie instead.
func agentLink(link string, a *state.Agent) string {
	if link == "" {
		link = state.ServeURL(a)
	}
	if link == "" {
		return ""
	}
	u, err := url.Parse(link)
	if err != nil {
		return ""
	}
	u.RawQuery, u.Fragment = "", a.Name
	return u.String()
}

func (n *notifier) post(p *Payload) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // && as it was typed, not \u0026\u0026
	if err := enc.Encode(p); err != nil {
		return err
	}
	b := buf.Bytes()
	ctx, cancel := context.WithTimeout(context.Background(), webhookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.spec.Webhook, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "agt")
	resp, err := n.client.Do(req)
	if err != nil {
		return err // the URL (and any token in it) is the user's own, in their own log
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST answered %s", resp.Status)
	}
	return nil
}

// finish sends what is queued (the agent's end, above all) and returns once it is sent or
// timed out.
func (n *notifier) finish() {
	if n == nil {
		return
	}
	close(n.queue)
	select {
	case <-n.done:
	case <-time.After(webhookTimeout + time.Second):
	}
}

// desktopArgv is the notify-send command of a payload. Notification servers read a subset of
// HTML in the body: the agent's words are escaped for it, and made one line of printable text.
func desktopArgv(p *Payload) []string {
	title := "agt: " + p.Agent + " needs you"
	urgency := "normal"
	if p.State == stream.Failed {
		title, urgency = "agt: "+p.Agent+" failed", "critical"
	}
	body := p.Reason
	if p.Question != "" {
		body = p.Question
	}
	body = markupSafe(body)
	if p.URL != "" {
		body += "\n" + markupSafe(p.URL)
	}
	return []string{"notify-send", "--app-name=agt", "--urgency=" + urgency, "--", title, body}
}

// markupSafe makes agent text one line of plain text for a notification body: controls go,
// and the characters of markup are written as entities.
func markupSafe(s string) string {
	var b strings.Builder
	for _, r := range stream.FirstLine(s) {
		switch {
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '&':
			b.WriteString("&amp;")
		case r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0:
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// bucket is a token bucket: burst tokens, one more every every.
type bucket struct {
	mu     sync.Mutex
	burst  float64
	every  time.Duration
	tokens float64
	last   time.Time
}

// take spends a token at now, if there is one.
func (b *bucket) take(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.last.IsZero() && b.every > 0 {
		b.tokens = min(b.burst, b.tokens+float64(now.Sub(b.last))/float64(b.every))
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
