package commands

// Who may use agt serve: the holder of its token. A script sends it as a bearer token; a
// browser opens the link with it once and keeps a session cookie instead. Answers from a
// browser also carry the session's CSRF token, and no request from another site is served.

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"agt/state"
)

// serveAuth checks requests against the token.
type serveAuth struct {
	token  []byte
	key    []byte // signs sessions: derived from the token, so a new token ends every session
	secure bool   // served over TLS: the cookie is Secure (and __Host-)
	cookie string
	fails  *failLimiter
}

// sessionAge is how long a browser stays signed in after opening the link.
const sessionAge = 30 * 24 * time.Hour

// csrfHeader carries a browser session's CSRF token on every POST.
const csrfHeader = "X-Agt-Csrf"

func newServeAuth(token []byte, secure bool) *serveAuth {
	mac := hmac.New(sha256.New, token)
	mac.Write([]byte("agt serve sessions"))
	a := &serveAuth{token: token, key: mac.Sum(nil), secure: secure, cookie: "agt_session", fails: newFailLimiter()}
	if secure {
		a.cookie = "__Host-agt_session" // Secure, Path=/, no Domain: no other host sets or reads it
	}
	return a
}

// loadToken reads the token of the run directory, making one (32 random bytes, 0600) when
// there is none or when fresh asks for a new one: that ends every session.
func loadToken(d *state.Dir, fresh bool) (token []byte, made bool, err error) {
	path, err := d.ServePath(state.ServeToken)
	if err != nil {
		return nil, false, err
	}
	if !fresh {
		b, err := state.ReadSmall(path)
		if err == nil && len(strings.TrimSpace(string(b))) >= 32 {
			return []byte(strings.TrimSpace(string(b))), false, nil
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, false, fmt.Errorf("read the token: %w\nhint: agt serve --new-token makes a new one", err)
		}
	}
	raw := make([]byte, 32)
	rand.Read(raw)
	token = []byte(base64.RawURLEncoding.EncodeToString(raw))
	if err := state.WriteFileAtomic(path, append(token, '\n')); err != nil {
		return nil, false, err
	}
	return token, true, nil
}

// tokenOK compares a token given with the server's in constant time.
func (a *serveAuth) tokenOK(given string) bool {
	return subtle.ConstantTimeCompare([]byte(given), a.token) == 1
}

// sign is the MAC of what, under the session key.
func (a *serveAuth) sign(what string) string {
	mac := hmac.New(sha256.New, a.key)
	mac.Write([]byte(what))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// newSession is a cookie value: a random session id and its MAC. Sessions need no table: a
// restarted agt serve with the same token knows them, a new token ends them.
func (a *serveAuth) newSession() string {
	raw := make([]byte, 16)
	rand.Read(raw)
	sid := base64.RawURLEncoding.EncodeToString(raw)
	return sid + "." + a.sign("session:"+sid)
}

// session returns the session id of a valid cookie value.
func (a *serveAuth) session(v string) (string, bool) {
	sid, mac, ok := strings.Cut(v, ".")
	if !ok || sid == "" || len(v) > 256 {
		return "", false
	}
	return sid, hmac.Equal([]byte(mac), []byte(a.sign("session:"+sid)))
}

func hmacEqual(a, b string) bool { return hmac.Equal([]byte(a), []byte(b)) }

// csrf is the CSRF token of session sid: the page reads it from /api/session and sends it back
// on every POST. Another site can neither read it nor guess it.
func (a *serveAuth) csrf(sid string) string { return a.sign("csrf:" + sid) }

// setCookie signs the browser in.
func (a *serveAuth) setCookie(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{
		Name: a.cookie, Value: a.newSession(), Path: "/", MaxAge: int(sessionAge / time.Second),
		HttpOnly: true, Secure: a.secure, SameSite: http.SameSiteStrictMode,
	})
}

// Ways a request is signed in.
const (
	authNone    = iota
	authBearer  // Authorization: Bearer TOKEN, from a script
	authSession // the session cookie, from a browser
)

// authErr is a refusal: its status and one line saying why and what to do.
type authErr struct {
	status int
	msg    string
}

// check says how r is signed in, or why it is refused. A wrong token or cookie counts against
// the client's address; once it has failed too often, it is refused before any check.
func (a *serveAuth) check(r *http.Request) (how int, sid string, err *authErr) {
	ip := clientIP(r)
	if !a.fails.allowed(ip, time.Now()) {
		return authNone, "", &authErr{http.StatusTooManyRequests, "too many wrong tokens from " + ip + "; try again in a minute"}
	}
	if h := r.Header.Get("Authorization"); h != "" {
		tok, ok := strings.CutPrefix(h, "Bearer ")
		if ok && a.tokenOK(strings.TrimSpace(tok)) {
			return authBearer, "", nil
		}
		a.fails.failed(ip, time.Now())
		return authNone, "", &authErr{http.StatusUnauthorized, "wrong token: send the one agt serve printed (Authorization: Bearer TOKEN)"}
	}
	if c, cerr := r.Cookie(a.cookie); cerr == nil {
		if sid, ok := a.session(c.Value); ok {
			return authSession, sid, nil
		}
		a.fails.failed(ip, time.Now())
		return authNone, "", &authErr{http.StatusUnauthorized, "this session has ended (a new token?): open the link agt serve printed"}
	}
	return authNone, "", &authErr{http.StatusUnauthorized, "not signed in: open the link agt serve printed, or send its token (Authorization: Bearer TOKEN)"}
}

// sameOrigin refuses what another site sent: a browser says where a request comes from
// (Sec-Fetch-Site, Origin), and only this origin, or the person typing an address, may use
// the API. Requests without either header come from scripts, which hold the token.
func sameOrigin(r *http.Request, scheme string) *authErr {
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "", "same-origin", "none":
	default:
		return &authErr{http.StatusForbidden, "refused a " + site + " request: agt serve answers only its own page"}
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Scheme != scheme || u.Host != r.Host {
			return &authErr{http.StatusForbidden, "refused a request from another origin: agt serve answers only its own page"}
		}
	}
	return nil
}

// clientIP is the address a request came from, without its port.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// failLimiter counts wrong tokens: each address may fail failBurst times, then once every
// failEvery. (A token of 256 random bits is not guessed at any rate: the limit keeps a
// guesser from costing the server and filling its log.) The table is bounded: past
// failClients addresses, those that have refilled go first.
type failLimiter struct {
	mu      sync.Mutex
	clients map[string]*failBucket
}

type failBucket struct {
	tokens float64
	last   time.Time
}

const (
	failBurst   = 10
	failEvery   = 6 * time.Second
	failClients = 4096
)

func newFailLimiter() *failLimiter {
	return &failLimiter{clients: map[string]*failBucket{}}
}

// refill brings b up to date at now.
func (b *failBucket) refill(now time.Time, burst float64, every time.Duration) {
	if !b.last.IsZero() {
		b.tokens = min(burst, b.tokens+float64(now.Sub(b.last))/float64(every))
	}
	b.last = now
}

// allowed reports whether ip may try a token now.
func (l *failLimiter) allowed(ip string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.clients[ip]
	if b == nil {
		return true
	}
	b.refill(now, failBurst, failEvery)
	return b.tokens >= 1
}

// failed spends a token of ip.
func (l *failLimiter) failed(ip string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.clients[ip]
	if b == nil {
		if len(l.clients) >= failClients {
			l.evict(now)
		}
		b = &failBucket{tokens: failBurst, last: now}
		l.clients[ip] = b
	}
	b.refill(now, failBurst, failEvery)
	b.tokens = max(0, b.tokens-1)
}

// evict drops the buckets that have refilled (they remember nothing), then others, down to
// three quarters of the table, so that a stream of new addresses costs one sweep per quarter.
func (l *failLimiter) evict(now time.Time) {
	for ip, b := range l.clients {
		b.refill(now, failBurst, failEvery)
		if b.tokens >= failBurst {
			delete(l.clients, ip)
		}
	}
	for ip := range l.clients {
		if len(l.clients) <= failClients*3/4 {
			break
		}
		delete(l.clients, ip)
	}
}
