package commands

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"agt/state"
)

// A bare NAME that is not this machine's but runs on a host is a 404 whose JSON error names
// the HOST:NAME to ask for, as the CLI's hint does; on several hosts it names them.
func TestServeNameOnHost(t *testing.T) {
	d, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const token = "token-0123456789-0123456789-0123456"
	s := &server{d: d, hub: newServeHub(ctx, fleetHere(ctx, d)), auth: newServeAuth([]byte(token), false),
		scheme: "http", hosts: loopbackHosts("127.0.0.1", 7480), streams: make(chan struct{}, 1), log: &strings.Builder{}}
	s.hub.mu.Lock()
	for _, r := range []topRow{{Host: "h1", Name: "asker"}, {Host: "h2", Name: "twin"}, {Host: "h1", Name: "twin"}} {
		s.hub.rows[r.key()] = r
	}
	s.hub.mu.Unlock()
	h := s.handler()
	for target, want := range map[string]string{
		"/api/agents/asker":       `no agent "asker" on this machine: it runs on h1; ask for h1:asker`,
		"/api/agents/local:asker": `no agent "asker" on this machine: it runs on h1; ask for h1:asker`,
		"/api/agents/twin/events": `no agent "twin" on this machine: h1, h2 each run one; say which, as in h1:twin`,
		"/api/agents/nobody":      `no agent "nobody": GET /api/agents lists them`,
		"/api/agents/h1:asker":    "",
	} {
		r := httptest.NewRequest("GET", "http://127.0.0.1:7480"+target, nil)
		r.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if want == "" {
			if w.Code != 200 {
				t.Errorf("%s: %d %s", target, w.Code, w.Body)
			}
			continue
		}
		if got := gjson.Get(w.Body.String(), "error").String(); w.Code != 404 || got != want {
			t.Errorf("%s: %d %q\nwant 404 %q", target, w.Code, got, want)
		}
	}
}
