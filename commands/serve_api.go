package commands

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"agt/hosts"
	"agt/spawn"
	"agt/state"
	"agt/termsafe"
)

// The page: one HTML file, a script and a style sheet, embedded in the binary. No script comes
// from anywhere else, and none is inline (the Content-Security-Policy forbids both).
//
//go:embed web
var webFiles embed.FS

// server is agt serve's HTTP handler.
type server struct {
	d      *state.Dir
	hub    *serveHub
	auth   *serveAuth
	scheme string
	// hosts are the Host headers a loopback server answers (nil: any): a page of another
	// site whose name resolves to 127.0.0.1 (DNS rebinding) is not this page.
	hosts   map[string]bool
	streams chan struct{} // one token per open stream
	log     io.Writer
}

// maxStreams bounds the event streams open at once.
const maxStreams = 64

// maxBody bounds a POST's body: a message to send, a reason to deny.
const maxBody = 1 << 20

// securityHeaders are on every answer. The page's own files only, never framed, no referrer.
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
		"connect-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
	"X-Content-Type-Options":       "nosniff",
	"Referrer-Policy":              "no-referrer",
	"X-Frame-Options":              "DENY",
	"Cross-Origin-Opener-Policy":   "same-origin",
	"Cross-Origin-Resource-Policy": "same-origin",
	"Cache-Control":                "no-store",
}

func (s *server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.page)
	web, _ := fs.Sub(webFiles, "web")
	files := http.StripPrefix("/static/", http.FileServerFS(web))
	mux.HandleFunc("GET /static/{file}", func(w http.ResponseWriter, r *http.Request) {
		files.ServeHTTP(w, r) // files only: no listing of the directory
	})
	mux.HandleFunc("GET /api/session", s.api(s.session))
	mux.HandleFunc("GET /api/agents", s.api(s.agents))
	mux.HandleFunc("GET /api/agents/{name}", s.api(s.agent))
	mux.HandleFunc("GET /api/agents/{name}/events", s.api(s.events))
	mux.HandleFunc("POST /api/agents/{name}/{action}", s.api(s.action))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range securityHeaders {
			w.Header().Set(k, v)
		}
		if s.hosts != nil && !s.hosts[strings.ToLower(r.Host)] {
			httpError(w, http.StatusMisdirectedRequest, fmt.Sprintf("this server answers as %s, not %q", s.anyHost(), r.Host))
			return
		}
		if r.Method == http.MethodOptions {
			// No CORS: a preflight gets no Access-Control-Allow-* and so fails.
			httpError(w, http.StatusMethodNotAllowed, "no cross-origin requests")
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// logf writes one line to agt serve's log (its stderr), made safe for a terminal: a path, a
// header and an agent's words in it are other people's bytes.
func (s *server) logf(format string, args ...any) {
	line := strings.ReplaceAll(fmt.Sprintf(format, args...), "\n", `\n`)
	fmt.Fprintln(s.log, "agt serve: "+termsafe.Line(line))
}

// anyHost is one of the Host headers the server answers, for an error message.
func (s *server) anyHost() string {
	for h := range s.hosts {
		return h
	}
	return ""
}

// httpError answers a JSON error: {"error": "…"}.
func httpError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// writeJSON answers v as JSON.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// page serves the page. Opened with ?token=, it checks the token, signs the browser in with a
// cookie and sends it on to the bare address, so the token leaves the address bar and the
// history at once.
func (s *server) page(w http.ResponseWriter, r *http.Request) {
	if tok := r.URL.Query().Get("token"); tok != "" || r.URL.Query().Has("token") {
		ip := clientIP(r)
		if !s.auth.fails.allowed(ip, time.Now()) {
			httpError(w, http.StatusTooManyRequests, "too many wrong tokens from "+ip+"; try again in a minute")
			return
		}
		if !s.auth.tokenOK(tok) {
			s.auth.fails.failed(ip, time.Now())
			s.logf("%s: wrong token in a link", ip)
			httpError(w, http.StatusUnauthorized, "wrong token: open the link agt serve printed")
			return
		}
		s.auth.setCookie(w)
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	b, err := webFiles.ReadFile("web/index.html")
	if err != nil {
		httpError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(b)
}

// request is what an API handler gets: the request and how it was signed in.
type request struct {
	*http.Request
	how int
	sid string
}

// api guards an API handler: same origin only, signed in, and for a POST from a browser the
// session's CSRF token and a JSON body.
func (s *server) api(h func(http.ResponseWriter, *request)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if e := sameOrigin(r, s.scheme); e != nil {
			s.logf("%s: %s %s: %s", clientIP(r), r.Method, r.URL.Path, e.msg)
			httpError(w, e.status, e.msg)
			return
		}
		how, sid, e := s.auth.check(r)
		if e != nil {
			if e.status != http.StatusTooManyRequests && how == authNone && (r.Header.Get("Authorization") != "" || hasCookie(r, s.auth.cookie)) {
				s.logf("%s: %s %s: %s", clientIP(r), r.Method, r.URL.Path, e.msg)
			}
			httpError(w, e.status, e.msg)
			return
		}
		if r.Method == http.MethodPost {
			if how == authSession && !s.auth.tokenCSRF(sid, r.Header.Get(csrfHeader)) {
				httpError(w, http.StatusForbidden, "missing or wrong CSRF token: reload the page")
				return
			}
			if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				httpError(w, http.StatusUnsupportedMediaType, "send the body as application/json")
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		}
		h(w, &request{Request: r, how: how, sid: sid})
	}
}

func hasCookie(r *http.Request, name string) bool {
	_, err := r.Cookie(name)
	return err == nil
}

// tokenCSRF checks a CSRF token against the session's, in constant time.
func (a *serveAuth) tokenCSRF(sid, given string) bool {
	return given != "" && len(given) < 256 && hmacEqual(given, a.csrf(sid))
}

// session tells the page its CSRF token and where it runs.
func (s *server) session(w http.ResponseWriter, r *request) {
	v := map[string]string{"host": hostName()}
	if r.how == authSession {
		v["csrf"] = s.auth.csrf(r.sid)
	}
	writeJSON(w, v)
}

// apiAgent is an agent as the API shows it: top's row.
type apiAgent struct {
	Host       string         `json:"host,omitempty"`
	Name       string         `json:"name"`
	Kind       string         `json:"kind"`
	State      string         `json:"state"`
	Reason     string         `json:"reason,omitempty"`
	Error      string         `json:"error,omitempty"`
	WaitingFor *spawn.Waiting `json:"waiting_for"`
	// Waits says in one line what it waits for (spawn.Waiting.Line).
	Waits   string    `json:"waits,omitempty"`
	Doing   string    `json:"doing,omitempty"`
	Since   time.Time `json:"since"`
	CostUSD *float64  `json:"cost_usd"`
	Dir     string    `json:"dir,omitempty"`
	// Needs: it waits for its person, or failed. Rank orders the list as agt top does: 0 a
	// permission or a plan, 1 failed, 2 a question, 3 at work, 4 ended.
	Needs bool `json:"needs"`
	Rank  int  `json:"rank"`
	Gone  bool `json:"gone,omitempty"`
	// Unreachable is why the agent's host cannot be reached now: the rest is what it said last.
	Unreachable string `json:"unreachable,omitempty"`
}

func apiAgentOf(r *topRow) apiAgent {
	return apiAgent{
		Host: r.Host, Name: r.Name, Kind: r.Kind, State: r.State, Reason: r.Reason, Error: r.Error,
		WaitingFor: r.Waiting, Waits: r.Waiting.Line(), Doing: r.Doing, Since: r.Since, CostUSD: r.CostUSD,
		Dir: r.Workspace, Needs: r.needs(), Rank: r.rank(), Gone: r.Gone, Unreachable: r.Unreachable,
	}
}

func apiAgents(rows []topRow) []apiAgent {
	out := make([]apiAgent, len(rows))
	for i := range rows {
		out[i] = apiAgentOf(&rows[i])
	}
	return out
}

// wantsStream reports whether the client asked for server-sent events.
func wantsStream(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/event-stream")
}

// fleetMsg is one message of the fleet stream: every agent (All), or those that changed.
type fleetMsg struct {
	All    bool       `json:"all"`
	Agents []apiAgent `json:"agents"`
}

// agents lists every agent, those that need their person first; as a stream, it sends the
// list, then the agents that change as they change.
func (s *server) agents(w http.ResponseWriter, r *request) {
	if !wantsStream(r.Request) {
		writeJSON(w, apiAgents(s.hub.list()))
		return
	}
	release, ok := s.openStream(w)
	if !ok {
		return
	}
	defer release()
	sub, cancel := s.hub.subscribe()
	defer cancel()
	ctx, stop := context.WithCancel(r.Context())
	defer stop()
	sse := startSSE(w)
	defer sse.beating(ctx, stop)()
	send := func(rows []topRow, all bool) error {
		b, _ := json.Marshal(fleetMsg{All: all, Agents: apiAgents(rows)})
		if err := sse.event("", "agents", b); err != nil {
			return err
		}
		return sse.flush()
	}
	if send(s.hub.list(), true) != nil {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-sub.ready:
		}
		if rows, all := s.hub.take(sub); (len(rows) > 0 || all) && send(rows, all) != nil {
			return
		}
	}
}

// openStream takes a place for a stream, answering 503 when all are taken.
func (s *server) openStream(w http.ResponseWriter) (release func(), ok bool) {
	select {
	case s.streams <- struct{}{}:
		return func() { <-s.streams }, true
	default:
		httpError(w, http.StatusServiceUnavailable, fmt.Sprintf("%d streams are open already; close a page", maxStreams))
		return nil, false
	}
}

// rowOf finds the agent the path names: NAME, or HOST:NAME.
func (s *server) rowOf(w http.ResponseWriter, r *request) (topRow, bool) {
	key := r.PathValue("name")
	row, ok := s.hub.row(key)
	if !ok {
		host, name := splitKey(key)
		switch {
		case host == "" || host == hosts.Local:
			if on := s.hub.hostsWith(name); len(on) > 0 {
				httpError(w, http.StatusNotFound, elsewhere(name, on))
				return row, false
			}
			if s.hub.fleet.local == nil {
				httpError(w, http.StatusNotFound, fmt.Sprintf("no agent %q: this agt serve shows the agents of --host, not this machine's", name))
				return row, false
			}
			httpError(w, http.StatusNotFound, fmt.Sprintf("no agent %q: GET /api/agents lists them", name))
		case s.hub.fleet.source(host) == nil:
			httpError(w, http.StatusNotFound, fmt.Sprintf("no host %q here: agt serve --host %s shows its agents", host, host))
		default:
			httpError(w, http.StatusNotFound, fmt.Sprintf("no agent %q on host %q: GET /api/agents lists them", name, host))
		}
	}
	return row, ok
}

// elsewhere is the error for a NAME that is not this machine's but runs on the hosts on: it
// names the HOST:NAME to ask for, as the CLI's hint does.
func elsewhere(name string, on []string) string {
	if len(on) == 1 {
		return fmt.Sprintf("no agent %q on this machine: it runs on %s; ask for %s:%s", name, on[0], on[0], name)
	}
	return fmt.Sprintf("no agent %q on this machine: %s each run one; say which, as in %s:%s", name, strings.Join(on, ", "), on[0], name)
}

func (s *server) agent(w http.ResponseWriter, r *request) {
	if row, ok := s.rowOf(w, r); ok {
		writeJSON(w, apiAgentOf(&row))
	}
}

// events sends an agent's events after a seq: NDJSON and done, or a stream that goes on.
// ?view=1 sends each event as the page shows it (eventView) instead of as logged. An agent of
// a host has them from its host (hostEvents).
func (s *server) events(w http.ResponseWriter, r *request) {
	row, ok := s.rowOf(w, r)
	if !ok {
		return
	}
	after, ok := lastSeq(r.Request)
	if !ok {
		httpError(w, http.StatusBadRequest, "after (or Last-Event-ID) wants a seq: a whole number, 0 or more")
		return
	}
	if h := s.hub.fleet.hostOfRow(&row); h != nil {
		s.hostEvents(w, r, h, row.Name, after)
		return
	}
	a, err := s.hub.fleet.local.agent(&row)
	if err != nil {
		httpError(w, http.StatusNotFound, err.Error())
		return
	}
	stream := wantsStream(r.Request)
	var release func()
	if stream {
		if release, ok = s.openStream(w); !ok {
			return
		}
		defer release()
	}
	wake, unwake := s.hub.wake(a.Name)
	defer unwake()
	p, err := pastEvents(a, after)
	reset := false
	if err == nil && stream && after > p.newest {
		// The client saw seqs this log never had: another agent of the same name (agt rm,
		// then a spawn). It starts again from this log's last events.
		p.c.Close()
		p, err = pastEvents(a, -1)
		reset, after = true, -1
	}
	if err != nil {
		httpError(w, http.StatusInternalServerError, err.Error())
		return
	}
	lines, c := p.lines, p.c
	es := &eventSender{view: r.URL.Query().Get("view") == "1", last: max(after, 0)}
	if p.gapTo > 0 {
		lines = append([][]byte{gapLine(a.Name, p.gapFrom, p.gapTo)}, lines...)
	}
	if !stream {
		c.Close()
		w.Header().Set("Content-Type", "application/x-ndjson")
		for _, line := range lines {
			if _, b := es.out(line); b != nil {
				w.Write(append(b, '\n'))
			}
		}
		return
	}
	ctx, stop := context.WithCancel(r.Context())
	defer stop()
	es.sse = startSSE(w)
	if reset && es.sse.event("", "reset", []byte("{}")) != nil {
		c.Close()
		return
	}
	for _, line := range lines {
		if err := es.emit(line); err != nil {
			c.Close()
			return
		}
	}
	if es.sse.flush() != nil {
		c.Close()
		return
	}
	defer es.sse.beating(ctx, stop)()
	state.FollowLogWoken(ctx, a.Path(state.EventsFile), c, wake, es.emit, func(from, to int64) error {
		return es.emit(gapLine(a.Name, from, to))
	}, func() bool {
		if es.sse.flush() != nil {
			stop()
		}
		_, err := s.d.Agent(a.Name)
		return err != nil // removed (agt rm): nothing more will come
	})
}

// actionBody is the JSON a POST of an action takes; each action reads its own fields.
type actionBody struct {
	ID      string `json:"id"`      // approve, deny: the request (as waiting_for.id shows it)
	Always  bool   `json:"always"`  // approve
	Message string `json:"message"` // deny
	Text    string `json:"text"`    // send
	Queue   bool   `json:"queue"`   // send
}

// action runs approve, deny, send, interrupt or stop on an agent: the code of the commands of
// those names. An answer from an agent's own processes is refused, as the control channel
// refuses it.
func (s *server) action(w http.ResponseWriter, r *request) {
	what := r.PathValue("action")
	switch what {
	case "approve", "deny", "send", "interrupt", "stop":
	default:
		httpError(w, http.StatusNotFound, fmt.Sprintf("no action %q: want approve, deny, send, interrupt or stop", what))
		return
	}
	row, ok := s.rowOf(w, r)
	if !ok {
		return
	}
	var body actionBody
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil && err != io.EOF {
		httpError(w, http.StatusBadRequest, "the body is not the JSON of an action: "+err.Error())
		return
	}
	act := fleetAction{What: what, ID: body.ID, Always: body.Always, Text: body.Message, Queue: body.Queue}
	switch what {
	case "send":
		act.Text = body.Text
		if strings.TrimSpace(act.Text) == "" {
			httpError(w, http.StatusBadRequest, "nothing to send: the text is empty")
			return
		}
	case "approve", "deny":
		agent, err := agentPeer(s.d, r.Request)
		if err == nil && agent != "" {
			err = fmt.Errorf("an agent cannot answer permission requests: this request came from the processes of agent %s", agent)
		}
		if err != nil {
			s.logf("%s: %s %s refused: %s", clientIP(r.Request), what, row.Name, err.Error())
			httpError(w, http.StatusForbidden, err.Error())
			return
		}
	}
	said, err := s.hub.fleet.act(r.Context(), act, &row)
	if err != nil {
		msg := firstLine(err.Error())
		s.logf("%s: %s %s: %s", clientIP(r.Request), what, row.Name, msg)
		httpError(w, http.StatusConflict, msg)
		return
	}
	s.logf("%s: %s", clientIP(r.Request), said)
	writeJSON(w, map[string]string{"said": said})
}
