package stream

import (
	"bytes"
	"strings"
)

// opencode says nothing on its stdout until a step of its turn is over: not while it starts (its
// boot, its configuration, its session: many seconds on a busy machine), not while it retries a
// model request that failed (a 429, a 500), for as long as its backoff lasts. Its log on stderr
// (--print-logs) says what it does, a line an entry:
//
//	timestamp=… level=INFO run=… message=created id=ses_de73e3bbcffeI5hpXgPYEVzahW slug=clever-circuit version=1.18.33 …
//	timestamp=… level=ERROR run=… message="stream error" providerID=anthropic modelID=… session.id=… small=false agent=build mode=primary error.error="AI_APICallError: Number of request tokens has exceeded your per-minute rate limit"
//
// The session it created is a session event, at once; a failed model request is a retry
// notice (small=true is a side request, the title, which fails the same way but holds no turn
// up). Its other INFO entries are routine: no event of their own (stderr.log keeps them).

// opencodeRoutine reports whether a stderr line is a routine entry of opencode's log: INFO or
// DEBUG.
func opencodeRoutine(line []byte) bool {
	if !bytes.HasPrefix(line, []byte("timestamp=")) {
		return false
	}
	i := bytes.IndexByte(line, ' ')
	return i > 0 && (bytes.HasPrefix(line[i:], []byte(" level=INFO ")) || bytes.HasPrefix(line[i:], []byte(" level=DEBUG ")))
}

// opencodeCreated reads the session id of a log entry that says opencode created its session.
func opencodeCreated(line []byte) string {
	if !opencodeRoutine(line) {
		return ""
	}
	_, rest, ok := bytes.Cut(line[:min(len(line), classifyMax)], []byte(" message=created id="))
	if !ok {
		return ""
	}
	if i := bytes.IndexByte(rest, ' '); i >= 0 {
		rest = rest[:i]
	}
	if len(rest) == 0 || len(rest) > 128 || bytes.ContainsAny(rest, "\"\\") {
		return ""
	}
	return string(rest)
}

// opencodeStreamError reads such a line: the error's message, and whether the line is one.
func opencodeStreamError(line []byte) (msg string, ok bool) {
	line = line[:min(len(line), classifyMax)]
	if !bytes.Contains(line, []byte(`message="stream error"`)) || !bytes.Contains(line, []byte(" small=false")) {
		return "", false
	}
	_, rest, found := bytes.Cut(line, []byte(` error.error="`))
	if !found {
		return "stream error", true
	}
	msg = string(rest)
	if i := strings.LastIndexByte(msg, '"'); i >= 0 {
		msg = msg[:i]
	}
	msg = strings.ReplaceAll(msg, `\"`, `"`)
	for _, p := range []string{"AI_APICallError: ", "AI_RetryError: "} {
		msg = strings.TrimPrefix(msg, p)
	}
	if msg == "" {
		msg = "stream error"
	}
	return oneLine(msg), true
}

// opencodeRetry is the retry notice of an opencode stderr line that reports a failed model
// request, attempt the turn's count of them; ok false for any other line, and for a failure no
// retry cures (a bad key, a model that does not exist), which ends the turn instead.
func opencodeRetry(line []byte, attempt int) (ev Event, ok bool) {
	msg, ok := opencodeStreamError(line)
	if !ok {
		return Event{}, false
	}
	ev = retryNotice(msg, 0, attempt)
	if ev.Class == ClassAuth || ev.Class == ClassConfig {
		return Event{}, false
	}
	return ev, true
}
