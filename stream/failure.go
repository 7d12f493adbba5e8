package stream

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"
)

// Failure classes: what a restart can do about a failed run.
const (
	ClassAuth      = "auth"      // 401/403, not logged in, missing API key
	ClassConfig    = "config"    // unknown model, untrusted workspace, bad flag or usage (exit 2), 400
	ClassRate      = "rate"      // 429, quota exhausted
	ClassTransient = "transient" // 5xx, network, crash, anything else
	ClassSession   = "session"   // the session to resume does not exist (never saved)
	ClassBudget    = "budget"    // the agent spent more than its budget (the supervisor's own)
)

// Failure says why a run failed: Class decides whether a restart can help (auth, config: never;
// session: restart fresh), Message is the agent's own one-line message. The zero Failure means
// the run did not fail.
type Failure struct{ Class, Message string }

// Reason is what the end of a failed run is called: the failure's class when the run showed more
// than its exit (an auth error, a 500 the agent reported: transient), "" when the exit code is
// all there is to say.
func (f Failure) Reason(exit Exit) string {
	if f.Class == "" || f.Class == ClassTransient && (f.Message == "" || f.Message == exitText(exit)) {
		return ""
	}
	return f.Class
}

// Clean reports whether the process exited with code 0, not by a signal.
func (e Exit) Clean() bool { return e.Code == 0 && e.Signal == "" }

// exitText is the last resort of a failure's message: "exit code 3", "killed by SIGTERM",
// "exit code 143 (128+SIGTERM)".
func exitText(exit Exit) string {
	switch {
	case exit.Signal != "":
		return "killed by " + exit.Signal
	case exit.Code < 0:
		return "killed by a signal"
	}
	if m := signalExitMeaning(exit.Code); m != "" {
		return "exit code " + strconv.Itoa(exit.Code) + " (" + m + ")"
	}
	return "exit code " + strconv.Itoa(exit.Code)
}

// statusClass is the failure class of a failed HTTP request's status, "" for a status that says
// nothing (0, or one no table row names).
func statusClass(status int) string {
	switch {
	case status == 401 || status == 403 || status == 407:
		return ClassAuth
	case status == 402 || status == 429:
		return ClassRate
	case status == 400 || status == 404 || status == 405 || status == 413 || status == 422:
		return ClassConfig
	case status == 408 || status >= 500 && status < 600:
		return ClassTransient
	}
	return ""
}

// failurePatterns name the class an agent's message stands for. An entry matches when its words
// all appear in the message, in order, in any case; the first match wins. Entries marked
// overStatus outrank the HTTP status (Gemini answers an invalid API key with 400); the others
// apply only when the status names no class.
var failurePatterns = []struct {
	words      []string
	class      string
	overStatus bool
}{
	{[]string{"no conversation found with session id"}, ClassSession, true}, // claude --resume
	{[]string{"no rollout found for thread id"}, ClassSession, true},        // codex exec resume
	{[]string{"invalid session identifier"}, ClassSession, true},            // gemini --resume
	{[]string{"no previous sessions found"}, ClassSession, true},            // gemini --resume, none saved
	{[]string{"session not found"}, ClassSession, true},                     // opencode --session
	{[]string{"session id", "already in use"}, ClassConfig, true},           // claude --session-id
	{[]string{"not logged in"}, ClassAuth, true},
	{[]string{"invalid api key"}, ClassAuth, true},
	{[]string{"incorrect api key"}, ClassAuth, true},
	{[]string{"api key not valid"}, ClassAuth, true},
	{[]string{"invalid x-api-key"}, ClassAuth, true},
	{[]string{"missing environment variable"}, ClassAuth, true}, // codex env_key unset
	{[]string{"providerautherror"}, ClassAuth, true},
	{[]string{"auth method"}, ClassAuth, true}, // gemini: no or bad auth selected
	{[]string{"not running in a trusted directory"}, ClassConfig, true},
	{[]string{"unknown option"}, ClassConfig, true},      // claude usage error
	{[]string{"unexpected argument"}, ClassConfig, true}, // clap usage error
	{[]string{"unknown argument"}, ClassConfig, true},    // yargs (gemini) usage error
	{[]string{"cannot use both"}, ClassConfig, true},     // gemini --yolo with --approval-mode
	{[]string{"invalid approval mode"}, ClassConfig, true},
	{[]string{"requires --verbose"}, ClassConfig, true},
	{[]string{"cannot be used with root/sudo"}, ClassConfig, true},
	{[]string{"authenticat"}, ClassAuth, false},
	{[]string{"unauthorized"}, ClassAuth, false},
	{[]string{"rate_limit"}, ClassRate, false},
	{[]string{"rate limit"}, ClassRate, false},
	{[]string{"too many requests"}, ClassRate, false},
	{[]string{"resource_exhausted"}, ClassRate, false},
	{[]string{"quota"}, ClassRate, false},
	{[]string{"usage limit"}, ClassRate, false},
	{[]string{"billing_error"}, ClassRate, false}, // claude: out of credit
	{[]string{"credit balance"}, ClassRate, false},
	{[]string{"model not found"}, ClassConfig, true},                         // opencode's ProviderModelNotFoundError
	{[]string{"models/", "is not found for api version"}, ClassConfig, true}, // gemini --acp passes 500 on
	{[]string{"modelnotfound"}, ClassConfig, true},
	{[]string{"model_not_found"}, ClassConfig, false},
	{[]string{"modelnotfound"}, ClassConfig, false},
	{[]string{"unknown model"}, ClassConfig, false},
	{[]string{"model", "is not found"}, ClassConfig, false},
	{[]string{"model", "does not exist"}, ClassConfig, false},
	{[]string{"issue with the selected model"}, ClassConfig, false},
	{[]string{"not_found_error"}, ClassConfig, false},
	{[]string{"invalid_request"}, ClassConfig, false},
	{[]string{"invalid_argument"}, ClassConfig, false},
	{[]string{"overloaded"}, ClassTransient, false},
	{[]string{"server_error"}, ClassTransient, false},
}

// missingModel reports whether a message says the model asked for does not exist: a setting no
// later message of a conversation can cure, unlike other config errors (a prompt too long).
func missingModel(msg string) bool {
	lower := strings.ToLower(msg[:min(len(msg), classifyMax)])
	for _, words := range [][]string{{"model not found"}, {"modelnotfound"}, {"model_not_found"}, {"unknown model"},
		{"model", "is not found"}, {"model", "does not exist"}, {"models/", "is not found for api version"}} {
		if containsInOrder(lower, words) {
			return true
		}
	}
	return false
}

// classifyMax bounds how much of a message classify reads.
const classifyMax = 4096

// classify returns the failure class that a message and the HTTP status of the failed request
// mean, "" when they name none, and the status: the one given, else one the message quotes
// ("API Error: 401", "unexpected status 429", "code":400).
func classify(status int, msg string) (class string, st int) {
	var buf [classifyMax]byte // lowered on the stack: no allocation per message
	n := copy(buf[:], msg)
	for i, c := range buf[:n] {
		if 'A' <= c && c <= 'Z' {
			buf[i] = c + 'a' - 'A'
		}
	}
	lower := unsafe.String(&buf[0], n)
	if status == 0 {
		status = statusIn(lower)
	}
	if c := matchPatterns(lower, true); c != "" {
		return c, status
	}
	if c := statusClass(status); c != "" {
		return c, status
	}
	return matchPatterns(lower, false), status
}

func matchPatterns(lower string, overStatus bool) string {
	for _, p := range failurePatterns {
		if p.overStatus == overStatus && containsInOrder(lower, p.words) {
			return p.class
		}
	}
	return ""
}

func containsInOrder(s string, words []string) bool {
	for _, w := range words {
		i := strings.Index(s, w)
		if i < 0 {
			return false
		}
		s = s[i+len(w):]
	}
	return true
}

// statusMarkers precede an HTTP status in agents' messages.
var statusMarkers = []string{"status code", "statuscode", "status", "api error", `"code"`}

// statusIn returns the first HTTP error status (400-599) that follows a status marker in a
// lowercased message, or 0.
func statusIn(lower string) int {
	for _, m := range statusMarkers {
		for rest := lower; ; {
			i := strings.Index(rest, m)
			if i < 0 {
				break
			}
			rest = rest[i+len(m):]
			j := 0
			for j < len(rest) && j < 3 && strings.IndexByte(` :="'`, rest[j]) >= 0 {
				j++
			}
			k := j
			for k < len(rest) && rest[k] >= '0' && rest[k] <= '9' {
				k++
			}
			if k-j == 3 {
				if n, _ := strconv.Atoi(rest[j:k]); n >= 400 && n <= 599 {
					return n
				}
			}
		}
	}
	return 0
}

// readable returns the human part of an error message that wraps a JSON error body: Codex
// passes the API's body on ({"error":{"message":"…","type":"…"}} → its message), Gemini brackets
// it ("[API Error: {"error":{"code":400,"message":"…"}}]" → "API Error: …"). Anything else is
// returned as it is. Classify the whole message: the body's type and code are evidence.
func readable(msg string) string {
	s := strings.TrimSpace(msg)
	prefix := ""
	if inner, ok := strings.CutPrefix(s, "[API Error: "); ok && strings.HasSuffix(inner, "]") {
		prefix, s = "API Error: ", strings.TrimSpace(inner[:len(inner)-1])
	}
	if len(s) > 1 && s[0] == '{' && s[len(s)-1] == '}' && gjson.Valid(s) {
		for _, path := range []string{"error.message", "message", "error"} {
			if m := gjson.Get(s, path); m.Type == gjson.String && m.Str != "" {
				return prefix + strings.Clone(m.Str)
			}
		}
	}
	if prefix == "" {
		return msg
	}
	return prefix + s
}

// fatalError is an error that ended the agent's turn, classified: transient when nothing more
// specific is known.
func fatalError(msg string, status int) Event {
	class, status := classify(status, msg)
	if class == "" {
		class = ClassTransient
	}
	return Event{Type: TypeError, Message: readable(msg), Source: SourceAgent, Fatal: true, Class: class, Status: status}
}

// retryNotice is the warning for a model request the agent retries: attempt from 1, classified
// like a fatal error (transient when nothing more specific is known).
func retryNotice(msg string, status, attempt int) Event {
	ev := fatalError(msg, status)
	ev.Fatal, ev.Attempt = false, attempt
	return ev
}

// RetryNotice is retryNotice for a message read off a terminal agent's screen, which names no
// status.
func RetryNotice(msg string, attempt int) Event { return retryNotice(oneLine(msg), 0, attempt) }

// GaveUp is the error event of a failure an agent gave up on and lives on after (a terminal
// agent's screen says so, then waits for input): classified, not fatal.
func GaveUp(msg string) Event {
	ev := fatalError(oneLine(msg), 0)
	ev.Fatal = false
	return ev
}

// failureMessageMax bounds each message the evidence keeps.
const failureMessageMax = 512

// oneLine returns the first non-blank line of s (lines end at \n or \r), trimmed and cut to
// failureMessageMax bytes (at a rune boundary), as a string of its own.
func oneLine(s string) string {
	whole := s
	for s != "" {
		line := s
		if i := strings.IndexAny(s, "\r\n"); i >= 0 {
			line, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		if len(line) > failureMessageMax {
			cut := failureMessageMax
			for cut > 0 && !utf8.RuneStart(line[cut]) {
				cut--
			}
			return line[:cut] + "…"
		}
		if len(line) == len(whole) {
			return line // s was one line already: nothing to let go of
		}
		return strings.Clone(line)
	}
	return ""
}

// exitMeaning is what an agent's exit code stands for in its own terms.
type exitMeaning struct {
	class, text string
	hint        bool // text says what to do: it beats the agent's own stderr as the message
}

// evidence gathers, in bounded memory, what one run showed about why it may fail; End turns it
// into the run's Failure. Every message it keeps is one line of at most failureMessageMax bytes.
type evidence struct {
	fatal   Failure // the last fatal error of the stream
	retry   Failure // the last retry notice
	stderr  Failure // the last stderr line that names a class
	errLine string  // the first stderr line that opens with "error", "fatal" or "panic"
	last    string  // the last stderr line that mentions a failure
}

// sawEvents records the failure evidence of the events a decoder emits: a fatal error, a retry
// notice; a successful result clears the fatal error (stdin mode: a later turn went well).
func (v *evidence) sawEvents(events []Event) {
	for i := range events {
		e := &events[i]
		switch {
		case e.Type == TypeError && e.Fatal:
			v.fatal = Failure{e.Class, oneLine(e.Message)}
		case e.Type == TypeError && e.Attempt > 0:
			v.retry = Failure{e.Class, oneLine(e.Message)}
		case e.Type == TypeResult && e.OK:
			v.fatal = Failure{}
		}
	}
}

// DecodeStderr implements Decoder for the agents whose stderr only explains a failure: the line
// is kept as evidence and means no event.
func (v *evidence) DecodeStderr(dst []Event, line []byte) []Event {
	v.stderrLine(line)
	return dst
}

// failureWords mark a stderr line that says something went wrong, among the warnings and notes
// agents also write there.
var failureWords = []string{"error", "fail", "fatal", "panic", "exception", "denied", "not found",
	"invalid", "unable", "cannot", "could not", "refus"}

// stderrLine records one line of the agent's stderr (terminal colours removed). Indented lines
// are skipped: they detail the line above (stack frames, the fields of an error object,
// "  status: 429").
func (v *evidence) stderrLine(line []byte) {
	line = line[:min(len(line), classifyMax)]
	if len(line) > 0 && (line[0] == ' ' || line[0] == '\t') {
		return
	}
	t := strings.TrimSpace(stripANSI(line))
	if t == "" {
		return
	}
	if class, _ := classify(0, t); class != "" {
		v.stderr = Failure{class, oneLine(t)}
	}
	lower := strings.ToLower(t)
	for _, p := range []string{"error", "fatal", "panic"} {
		if v.errLine == "" && strings.HasPrefix(lower, p) {
			v.errLine = oneLine(t)
		}
	}
	if strings.HasPrefix(lower, "warn") {
		return // "WARNING: proceeding, even though we could not …"
	}
	for _, w := range failureWords {
		if strings.Contains(lower, w) {
			v.last = oneLine(t)
			break
		}
	}
}

// stripANSI returns b as a string without terminal escape sequences (CSI "ESC [ … final" and
// OSC "ESC ] … BEL"): Gemini colours its fatal messages even on a pipe.
func stripANSI(b []byte) string {
	if bytes.IndexByte(b, 0x1b) < 0 {
		return string(b)
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != 0x1b || i+1 >= len(b) {
			out = append(out, b[i])
			continue
		}
		switch b[i+1] {
		case '[':
			i += 2
			for i < len(b) && (b[i] < 0x40 || b[i] > 0x7e) {
				i++
			}
		case ']':
			i += 2
			for i < len(b) && b[i] != 0x07 {
				i++
			}
		default:
			i++
		}
	}
	return string(out)
}

// failure is the run's Failure for exit: the zero value for a clean exit, else the most
// specific evidence, in order: the stream's fatal error, an exit code whose meaning says what to
// do, a retry notice, a classified stderr line, the exit code's meaning; then, for want of a
// specific class (transient), the stream's fatal error, a retry notice, the exit code's meaning,
// the stderr, and the exit itself. meaning may be nil.
func (v *evidence) failure(exit Exit, meaning func(code int) (exitMeaning, bool)) Failure {
	if exit.Clean() {
		return Failure{}
	}
	var m exitMeaning
	var known bool
	if meaning != nil && exit.Signal == "" && exit.Code > 0 {
		m, known = meaning(exit.Code)
	}
	stderr := v.errLine
	if stderr == "" {
		stderr = v.last
	}
	byExit := Failure{m.class, m.text}
	if !m.hint && stderr != "" {
		byExit.Message = stderr
	}
	specific := func(f Failure) bool { return f.Class != "" && f.Class != ClassTransient && f.Message != "" }
	switch {
	case specific(v.fatal):
		return v.fatal
	case known && m.hint:
		return byExit
	case specific(v.retry):
		return v.retry
	case specific(v.stderr):
		return v.stderr
	case known && specific(byExit):
		return byExit
	case v.fatal.Message != "":
		return Failure{ClassTransient, v.fatal.Message}
	case v.retry.Message != "":
		return Failure{ClassTransient, v.retry.Message}
	case known:
		return Failure{ClassTransient, byExit.Message}
	case stderr != "":
		return Failure{ClassTransient, stderr}
	}
	return Failure{ClassTransient, exitText(exit)}
}

func orTransient(class string) string {
	if class == "" {
		return ClassTransient
	}
	return class
}
