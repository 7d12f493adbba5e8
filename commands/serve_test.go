package commands

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"agt/state"
)

func TestServeSession(t *testing.T) {
	a := newServeAuth([]byte("token-one-0123456789-0123456789-0123"), false)
	b := newServeAuth([]byte("token-two-0123456789-0123456789-0123"), false)
	v := a.newSession()
	sid, ok := a.session(v)
	if !ok || sid == "" {
		t.Fatalf("a fresh session %q is refused", v)
	}
	if _, ok := b.session(v); ok {
		t.Error("a session of another token is taken")
	}
	for _, bad := range []string{"", ".", sid, sid + ".", "." + v, v + "x", strings.Replace(v, ".", "x.", 1), strings.Repeat("a", 300) + "." + v} {
		if _, ok := a.session(bad); ok {
			t.Errorf("session(%q) is taken", bad)
		}
	}
	if a.csrf(sid) == a.csrf(sid+"x") || a.csrf(sid) == b.csrf(sid) {
		t.Error("CSRF tokens of two sessions, or of two tokens, are the same")
	}
	if !a.tokenCSRF(sid, a.csrf(sid)) || a.tokenCSRF(sid, "") || a.tokenCSRF(sid, a.csrf(sid)+"x") {
		t.Error("tokenCSRF takes a wrong token or refuses the right one")
	}
	if !a.tokenOK("token-one-0123456789-0123456789-0123") || a.tokenOK("token-one") || a.tokenOK("") {
		t.Error("tokenOK takes a wrong token or refuses the right one")
	}
}

func FuzzServeSession(f *testing.F) {
	a := newServeAuth([]byte("token-one-0123456789-0123456789-0123"), false)
	f.Add(a.newSession())
	f.Add("abc.def")
	f.Fuzz(func(t *testing.T, v string) {
		sid, ok := a.session(v)
		if ok && v != sid+"."+a.sign("session:"+sid) {
			t.Fatalf("session(%q) is taken without its MAC", v)
		}
	})
}

func TestSameOrigin(t *testing.T) {
	for _, tc := range []struct {
		site, origin string
		ok           bool
	}{
		{"", "", true}, // a script
		{"same-origin", "http://127.0.0.1:7480", true},
		{"none", "", true}, // the address typed
		{"same-site", "", false},
		{"cross-site", "", false},
		{"", "http://evil.example", false},
		{"", "https://127.0.0.1:7480", false}, // another scheme is another origin
		{"", "null", false},
		{"same-origin", "http://127.0.0.1:7481", false},
	} {
		r := httptest.NewRequest("POST", "http://127.0.0.1:7480/api/agents/x/approve", nil)
		if tc.site != "" {
			r.Header.Set("Sec-Fetch-Site", tc.site)
		}
		if tc.origin != "" {
			r.Header.Set("Origin", tc.origin)
		}
		if e := sameOrigin(r, "http"); (e == nil) != tc.ok {
			t.Errorf("Sec-Fetch-Site %q, Origin %q: refused %v, want refused %v", tc.site, tc.origin, e, !tc.ok)
		}
	}
}

func TestFailLimiter(t *testing.T) {
	l := newFailLimiter()
	now := time.Now()
	for i := 0; i < failBurst; i++ {
		if !l.allowed("1.2.3.4", now) {
			t.Fatalf("refused after %d failures, want %d allowed", i, failBurst)
		}
		l.failed("1.2.3.4", now)
	}
	if l.allowed("1.2.3.4", now) {
		t.Error("allowed after the burst")
	}
	if !l.allowed("5.6.7.8", now) {
		t.Error("another address is refused")
	}
	if !l.allowed("1.2.3.4", now.Add(failEvery)) {
		t.Error("refused after failEvery")
	}
	for i := 0; i < 2*failClients; i++ {
		l.failed(fmt.Sprintf("10.0.%d.%d", i/256, i%256), now)
	}
	if len(l.clients) > failClients {
		t.Errorf("%d addresses remembered, want at most %d", len(l.clients), failClients)
	}
}

func TestWebText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain <b>text</b> & more", "plain <b>text</b> & more"},
		{"two\nlines\tand a tab", "two\nlines\tand a tab"},
		{"bell\a esc\x1b[31m nul\x00 c1\u0085", "bell\uFFFD esc\uFFFD[31m nul\uFFFD c1\uFFFD"},
		{"rm -rf \u202Egnp.sl\u202C x", "rm -rf \uFFFDgnp.sl\uFFFD x"},
		{"bad \xff utf8", "bad \uFFFD utf8"},
	} {
		if got := webText(tc.in, 1000); got != tc.want {
			t.Errorf("webText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := webText(strings.Repeat("é", 100), 10); got != "ééééé… (190 bytes more)" {
		t.Errorf("cut: %q", got)
	}
}

func FuzzWebText(f *testing.F) {
	f.Add("a\x1b]52;c;aGk=\a\u202Eb\n", 8)
	f.Fuzz(func(t *testing.T, s string, max int) {
		max = max%4096 + 4096
		got := webText(s, max)
		if !utf8.ValidString(got) {
			t.Fatalf("invalid UTF-8: %q", got)
		}
		for _, r := range got {
			if r != '\n' && r != '\t' && (unicode.IsControl(r) || r >= 0x202A && r <= 0x202E || r >= 0x2066 && r <= 0x2069) {
				t.Fatalf("%q left in %q", r, got)
			}
		}
		if len(got) > max+64 {
			t.Fatalf("%d bytes out of a bound of %d", len(got), max)
		}
	})
}

// TestPastEvents: the last events, those after a seq, and a gap for the seqs the log lost.
func TestPastEvents(t *testing.T) {
	d, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a, err := d.Create("x")
	if err != nil {
		t.Fatal(err)
	}
	w, _, err := state.OpenLog(a.Path(state.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	write := func(from, to int) {
		for i := from; i <= to; i++ {
			if err := w.Write([]byte(fmt.Sprintf(`{"v":1,"agent":"x","seq":%d,"type":"output","line":"l%d"}`+"\n", i, i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	seqs := func(after int64) (got string, gapFrom, gapTo int64) {
		p, err := pastEvents(a, after)
		if err != nil {
			t.Fatal(err)
		}
		p.c.Close()
		var b strings.Builder
		for _, l := range p.lines {
			fmt.Fprintf(&b, "%d ", lineSeqOf(l))
		}
		return strings.TrimSpace(b.String()), p.gapFrom, p.gapTo
	}
	write(1, 10)
	if got, _, gt := seqs(5); got != "6 7 8 9 10" || gt != 0 {
		t.Errorf("after 5: %q, gap to %d", got, gt)
	}
	if got, _, _ := seqs(10); got != "" {
		t.Errorf("after 10: %q", got)
	}
	if got, _, _ := seqs(0); got != "1 2 3 4 5 6 7 8 9 10" {
		t.Errorf("after 0: %q", got)
	}
	// Rotated: the events after 8 span two files.
	if err := w.Rotate(); err != nil {
		t.Fatal(err)
	}
	write(11, 12)
	if got, _, gt := seqs(8); got != "9 10 11 12" || gt != 0 {
		t.Errorf("after 8 across a rotation: %q, gap to %d", got, gt)
	}
	// The older file gone: the seqs it held are a gap.
	if err := os.Remove(state.RotatedPath(a.Path(state.EventsFile), 1)); err != nil {
		t.Fatal(err)
	}
	if got, gf, gt := seqs(3); got != "11 12" || gf != 4 || gt != 10 {
		t.Errorf("after 3 with seqs 4-10 gone: %q, gap %d-%d, want 4-10", got, gf, gt)
	}
	// No seq: the last pageEvents.
	write(13, 12+pageEvents)
	got, _, _ := seqs(-1)
	if n := len(strings.Fields(got)); n != pageEvents || !strings.HasSuffix(got, fmt.Sprint(12+pageEvents)) {
		t.Errorf("the last events: %d of them, ending %q", n, got[max(0, len(got)-10):])
	}
}

func lineSeqOf(line []byte) int64 {
	var seq int64
	fmt.Sscanf(string(line[strings.Index(string(line), `"seq":`)+6:]), "%d", &seq)
	return seq
}

func TestFingerprint(t *testing.T) {
	d, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cert, made, err := servePair(d, "", "")
	if err != nil || !made {
		t.Fatalf("servePair: made %v, %v", made, err)
	}
	sum := sha256.Sum256(cert.Certificate[0])
	want := strings.ToUpper(strings.Join(strings.Split(fmt.Sprintf("% x", sum[:]), " "), ":"))
	if got := fingerprint(&cert); got != want {
		t.Errorf("fingerprint = %s, want %s", got, want)
	}
	again, made, err := servePair(d, "", "")
	if err != nil || made || fingerprint(&again) != want {
		t.Errorf("a second servePair made %v (%v): %s", made, err, fingerprint(&again))
	}
	if cert.Leaf.PublicKeyAlgorithm.String() != "ECDSA" {
		t.Errorf("key: %s, want ECDSA", cert.Leaf.PublicKeyAlgorithm)
	}
}

func TestIsLoopback(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1": true, "127.1.2.3": true, "::1": true, "localhost": true,
		"": false, "0.0.0.0": false, "::": false, "10.0.0.1": false, "box.example": false,
	} {
		if got := isLoopback(host); got != want {
			t.Errorf("isLoopback(%q) = %v", host, got)
		}
	}
}

// TestServeHandler: every answer carries the security headers; a loopback server answers only
// its own Host; no preflight; the API needs the token.
func TestServeHandler(t *testing.T) {
	d, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &server{d: d, hub: newServeHub(ctx, d), auth: newServeAuth([]byte("token-0123456789-0123456789-0123456"), false),
		scheme: "http", hosts: loopbackHosts("127.0.0.1", 7480), streams: make(chan struct{}, 1), log: &strings.Builder{}}
	h := s.handler()
	do := func(method, target string, hdr map[string]string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, target, nil)
		for k, v := range hdr {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for _, tc := range []struct {
		method, target string
		hdr            map[string]string
		status         int
	}{
		{"GET", "http://127.0.0.1:7480/", nil, 200},
		{"GET", "http://localhost:7480/static/app.js", nil, 200},
		{"GET", "http://127.0.0.1:7480/nothing", nil, 404},
		{"GET", "http://127.0.0.1:7480/static/", nil, 404},
		{"GET", "http://evil.example:7480/", nil, http.StatusMisdirectedRequest},
		{"OPTIONS", "http://127.0.0.1:7480/api/agents", nil, 405},
		{"GET", "http://127.0.0.1:7480/api/agents", nil, 401},
		{"GET", "http://127.0.0.1:7480/api/agents", map[string]string{"Authorization": "Bearer token-0123456789-0123456789-0123456"}, 200},
		{"GET", "http://127.0.0.1:7480/api/agents/nobody", map[string]string{"Authorization": "Bearer token-0123456789-0123456789-0123456"}, 404},
		{"DELETE", "http://127.0.0.1:7480/api/agents", nil, 405},
	} {
		w := do(tc.method, tc.target, tc.hdr)
		if w.Code != tc.status {
			t.Errorf("%s %s: %d, want %d: %s", tc.method, tc.target, w.Code, tc.status, w.Body)
		}
		for k, v := range securityHeaders {
			if got := w.Header().Get(k); got != v {
				t.Errorf("%s %s: %s: %q, want %q", tc.method, tc.target, k, got, v)
			}
		}
		if w.Header().Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%s %s: a CORS header", tc.method, tc.target)
		}
	}
	// What a client sends reaches the log escaped, on one line.
	w := do("GET", "http://127.0.0.1:7480/api/agents", map[string]string{"Sec-Fetch-Site": "x\x1b]0;owned\a"})
	log := s.log.(*strings.Builder).String()
	if w.Code != 403 || strings.ContainsAny(log, "\x1b\a") || !strings.Contains(log, `refused a x\x1b]0;owned\x07 request`) {
		t.Errorf("a hostile header: %d, logged %q", w.Code, log)
	}
}

// BenchmarkPastEvents is what opening an agent's page (its last events) and resuming after a
// seq cost in a log of 100,000 events: the log is read from its end, so neither grows with it.
func BenchmarkPastEvents(b *testing.B) {
	d, err := state.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	a, err := d.Create("x")
	if err != nil {
		b.Fatal(err)
	}
	w, _, err := state.OpenLog(a.Path(state.EventsFile))
	if err != nil {
		b.Fatal(err)
	}
	const n = 100000
	for i := 1; i <= n; i++ {
		w.Write([]byte(fmt.Sprintf(`{"v":1,"ts":"2026-01-01T00:00:00Z","agent":"x","seq":%d,"type":"text","text":"some words the agent said, event %d"}`+"\n", i, i)))
	}
	w.Close()
	for _, bc := range []struct {
		name  string
		after int64
	}{{"page", -1}, {"resume-10", n - 10}, {"resume-1000", n - 1000}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				p, err := pastEvents(a, bc.after)
				if err != nil || len(p.lines) == 0 {
					b.Fatal(err)
				}
				p.c.Close()
			}
		})
	}
}

// BenchmarkEventView is the page's rendering of one event on the server.
func BenchmarkEventView(b *testing.B) {
	line := []byte(`{"v":1,"ts":"2026-01-01T00:00:00Z","agent":"x","seq":7,"type":"tool_use","id":"t1","tool":"Bash","input":{"command":"go test ./... && go vet ./..."}}`)
	t := &transcript{}
	for b.Loop() {
		if _, ok := t.view(line); !ok {
			b.Fatal("not shown")
		}
	}
}

// TestServeEventStream reads an agent's stream as a browser would: after Last-Event-ID, the
// next events with their seqs as ids; after a seq the log never had (another agent of the
// same name), a reset and the log from its start.
func TestServeEventStream(t *testing.T) {
	d, err := state.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a, err := d.Create("x")
	if err != nil {
		t.Fatal(err)
	}
	w, _, err := state.OpenLog(a.Path(state.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := 1; i <= 4; i++ {
		w.Write([]byte(fmt.Sprintf(`{"v":1,"agent":"x","seq":%d,"type":"output","line":"l%d"}`+"\n", i, i)))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &server{d: d, hub: newServeHub(ctx, d), auth: newServeAuth([]byte("token-0123456789-0123456789-0123456"), false),
		scheme: "http", streams: make(chan struct{}, 4), log: &strings.Builder{}}
	srv := httptest.NewServer(s.handler())
	defer srv.Close()
	read := func(lastID string, until ...string) string {
		t.Helper()
		rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
		defer rcancel()
		req, _ := http.NewRequestWithContext(rctx, "GET", srv.URL+"/api/agents/x/events", nil)
		req.Header.Set("Authorization", "Bearer token-0123456789-0123456789-0123456")
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Last-Event-ID", lastID)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var got strings.Builder
		buf := make([]byte, 4096)
		for i, u := range until {
			if i > 0 {
				// Then the agent writes another: it comes as it is logged.
				w.Write([]byte(`{"v":1,"agent":"x","seq":5,"type":"output","line":"l5"}` + "\n"))
			}
			for !strings.Contains(got.String(), u) {
				n, err := resp.Body.Read(buf)
				got.Write(buf[:n])
				if err != nil {
					t.Fatalf("%v after %q", err, got.String())
				}
			}
		}
		return got.String()
	}
	got := read("2", "id: 4\n", "id: 5\n")
	if strings.Contains(got, "id: 2\n") || strings.Contains(got, "} \n") || !strings.Contains(got, "id: 3\ndata: {") || strings.Contains(got, "event: reset") {
		t.Errorf("after 2:\n%s", got)
	}
	got = read("9", "id: 5\n")
	if !strings.Contains(got, "event: reset\ndata: {}\n\n") || !strings.Contains(got, "id: 1\n") {
		t.Errorf("after a seq the log never had:\n%s", got)
	}
}
