package stream

import "testing"

// opencode's log line for a failed model request: a retry notice of the turn, classified; the
// title's side request, a failure no retry cures and other lines are none.
func TestOpencodeRetry(t *testing.T) {
	const rate = `timestamp=2026-11-26T16:45:21.885Z level=ERROR run=5554eb36 message="stream error" providerID=anthropic modelID=claude-sonnet-4-5 session.id=ses_1 small=false agent=build mode=primary error.error="AI_APICallError: Number of request tokens has exceeded your per-minute rate limit"`
	ev, ok := opencodeRetry([]byte(rate), 2)
	if !ok || ev.Type != TypeError || ev.Fatal || ev.Attempt != 2 || ev.Class != ClassRate ||
		ev.Message != "Number of request tokens has exceeded your per-minute rate limit" {
		t.Errorf("a rate limit: %+v, %v", ev, ok)
	}
	for _, line := range []string{
		`timestamp=… level=ERROR message="stream error" providerID=anthropic small=true agent=title error.error="AI_RetryError: Failed after 3 attempts"`,
		`timestamp=… level=ERROR message="stream error" small=false error.error="AI_APICallError: invalid x-api-key"`,
		`timestamp=… level=ERROR message="session error" small=false`,
		`Error: stream error small=false`,
	} {
		if ev, ok := opencodeRetry([]byte(line), 1); ok {
			t.Errorf("%s: a retry %+v", line, ev)
		}
	}

	// The session it created, at once; routine entries, nothing.
	d0 := NewOpencode()
	created := `timestamp=2026-11-26T16:48:01.604Z level=INFO run=af13d94a message=created id=ses_de73e3bbcffeI5hpXgPYEVzahW slug=clever-circuit version=1.18.33 projectID=global`
	if ev := d0.DecodeStderr(nil, []byte(created)); len(ev) != 1 || ev[0].Type != TypeSession || ev[0].SessionID != "ses_de73e3bbcffeI5hpXgPYEVzahW" {
		t.Errorf("created: %s", serialize(ev))
	}
	boot := `timestamp=2026-11-26T16:47:57.161Z level=INFO run=af13d94a message=bootstrapping directory=/w`
	if ev := d0.DecodeStderr(nil, []byte(boot)); len(ev) != 0 || !d0.(LogReader).Routine([]byte(boot)) || d0.(LogReader).Routine([]byte(rate)) {
		t.Errorf("a routine entry: %s", serialize(ev))
	}
	if ev := d0.Decode(nil, []byte(`{"type":"text","sessionID":"ses_de73e3bbcffeI5hpXgPYEVzahW","part":{"text":"hi"}}`)); len(ev) != 1 || ev[0].Type != TypeText {
		t.Errorf("the session again on stdout: %s", serialize(ev))
	}

	// The decoders: opencode run's while its turn runs, ACP's while a prompt is open.
	d := NewOpencode()
	if ev := d.DecodeStderr(nil, []byte(rate)); len(ev) != 1 || ev[0].Attempt != 1 {
		t.Errorf("opencode: %s", serialize(ev))
	}
	a := NewACP("agt", "test")
	if ev := a.DecodeStderr(nil, []byte(rate)); len(ev) != 0 {
		t.Errorf("ACP with no turn: %s", serialize(ev))
	}
	acpLines(t, a) // its session open, the prompt "hi" under way
	if ev := a.DecodeStderr(nil, []byte(rate)); len(ev) != 1 || ev[0].Attempt != 1 || ev[0].Class != ClassRate {
		t.Errorf("ACP in a turn: %s", serialize(ev))
	}
}
