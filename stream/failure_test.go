package stream

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// classify: the HTTP status decides, given or quoted in the message; words that name a class
// outright (session, auth) outrank it; other words apply only when the status says nothing.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		status int
		msg    string
		class  string
		st     int
	}{
		{401, "", ClassAuth, 401},
		{403, "", ClassAuth, 403},
		{429, "", ClassRate, 429},
		{400, "", ClassConfig, 400},
		{404, "", ClassConfig, 404},
		{500, "", ClassTransient, 500},
		{529, "", ClassTransient, 529},
		{0, "", "", 0},
		{0, "something odd happened", "", 0},
		{0, "API Error: 401 mock authentication_error", ClassAuth, 401},
		{0, "API Error: 400 mock invalid_request_error", ClassConfig, 400},
		{0, "unexpected status 401 Unauthorized: Missing bearer authentication", ClassAuth, 401},
		{0, "exceeded retry limit, last status: 429 Too Many Requests", ClassRate, 429},
		{0, `[API Error: {"error":{"code":404,"message":"models/x is not found","status":"NOT_FOUND"}}]`, ClassConfig, 404},
		{0, `[API Error: {"error":{"code": 503,"message":"unavailable"}}]`, ClassTransient, 503},
		{0, "Attempt 1 failed with status 429. Retrying with backoff...", ClassRate, 429},
		{0, "status 200 but the body was empty", "", 0},
		{0, "Not logged in · Please run /login", ClassAuth, 0},
		{0, "Invalid API key · Please run /login", ClassAuth, 0},
		{400, "API key not valid. Please pass a valid API key.", ClassAuth, 400},
		{0, "Missing environment variable: `MOCK_KEY`.", ClassAuth, 0},
		{0, "ProviderAuthError: no key", ClassAuth, 0},
		{0, "Error: No conversation found with session ID: 0000", ClassSession, 0},
		{0, "Error: thread/resume: thread/resume failed: no rollout found for thread id 01a2", ClassSession, 0},
		{0, "Error: Session not found", ClassSession, 0},
		{0, "Invalid session identifier \"x\"", ClassSession, 0},
		{0, "Error: Session ID 1b2c is already in use", ClassConfig, 0},
		{0, "error: unexpected argument '--bogus' found", ClassConfig, 0},
		{0, "error: unknown option '--bogus'", ClassConfig, 0},
		{0, "You've hit your usage limit. Try again later.", ClassRate, 0},
		{0, "Quota exceeded. Check your plan and billing details.", ClassRate, 0},
		{0, `{"type":"error","error":{"type":"rate_limit_error"}}`, ClassRate, 0},
		{0, "Model not found: anthropic/bogus", ClassConfig, 0},
		{0, "Error resuming session: No previous sessions found for this project.", ClassSession, 0},
		{0, "ERROR service=session error=ProviderModelNotFoundError Model not found: anthropic/no-such-model", ClassConfig, 0},
		{0, "The model `gpt-9` does not exist or you do not have access to it.", ClassConfig, 0},
		{0, `{"error": {"message": "bad", "type": "invalid_request_error"}}`, ClassConfig, 0},
		{0, "overloaded_error", ClassTransient, 0},
		{500, "rate_limit", ClassTransient, 500}, // the status outranks the hint
	} {
		class, st := classify(tc.status, tc.msg)
		if class != tc.class || st != tc.st {
			t.Errorf("classify(%d, %q) = %q, %d; want %q, %d", tc.status, tc.msg, class, st, tc.class, tc.st)
		}
	}
}

// readable takes the human message out of the JSON error bodies agents pass on.
func TestReadable(t *testing.T) {
	for msg, want := range map[string]string{
		`{"error": {"message": "mock bad request", "type": "invalid_request_error", "code": "bad"}}`: "mock bad request",
		`{"message":"flat"}`:        "flat",
		`{"error":"just a string"}`: "just a string",
		`[API Error: {"error":{"code":400,"message":"mock invalid argument","status":"INVALID_ARGUMENT"}}]`: "API Error: mock invalid argument",
		`[API Error: models/x is not found for API version v1beta]`:                                         "API Error: models/x is not found for API version v1beta",
		`{"error":{"code":400}}`: "{\"error\":{\"code\":400}}",
		`{not json}`:             "{not json}",
		"plain words":            "plain words",
		"Reconnecting... 1/5 (unexpected status 401)": "Reconnecting... 1/5 (unexpected status 401)",
	} {
		if got := readable(msg); got != want {
			t.Errorf("readable(%s) = %q, want %q", msg, got, want)
		}
	}
}

// The Text decoder has nothing but the exit to go by.
func TestTextFailure(t *testing.T) {
	for _, tc := range []struct {
		exit Exit
		want Failure
	}{
		{Exit{}, Failure{}},
		{Exit{Code: 3}, Failure{ClassTransient, "exit code 3"}},
		{Exit{Code: 137}, Failure{ClassTransient, "exit code 137 (128+SIGKILL)"}},
		{Exit{Code: -1, Signal: "SIGTERM"}, Failure{ClassTransient, "killed by SIGTERM"}},
	} {
		d := ForFormat("text")
		if ev := d.DecodeStderr(nil, []byte("error: boom")); len(ev) != 0 {
			t.Errorf("DecodeStderr gave %s", serialize(ev))
		}
		if _, f := d.End(nil, tc.exit); f != tc.want {
			t.Errorf("exit %+v: %+v, want %+v", tc.exit, f, tc.want)
		}
	}
}

// run is one process of an agent: its stdout, its stderr and how it ended.
type run struct {
	stdout, stderr string
	exit           Exit
}

func (r run) decode(t *testing.T, d Decoder) ([]Event, Failure) {
	t.Helper()
	return decodeRun(t, d, stdoutLines("", []byte(r.stdout)), stdoutLines("", []byte(r.stderr)), r.exit)
}

// fatalOf returns the class and status of the fatal error among events.
func fatalOf(events []Event) (class string, status int) {
	for _, e := range events {
		if e.Type == TypeError && e.Fatal {
			return e.Class, e.Status
		}
	}
	return "", 0
}

// Every decoder classifies its agent's failures from what the stream, the stderr and the exit
// showed; a fatal error event of the stream carries the same class (and its status).
func TestFailureClassification(t *testing.T) {
	const claudeResult = `{"type":"result","subtype":"success","is_error":true,"num_turns":1,`
	for _, tc := range []struct {
		name   string
		new    func() Decoder
		run    run
		want   Failure
		status int // of the fatal error event, when there is one
	}{
		// Claude
		{"claude 401", NewClaude, run{stdout: claudeResult + `"api_error_status":401,"result":"Failed to authenticate. API Error: 401 x"}`, exit: Exit{Code: 1}},
			Failure{ClassAuth, "Failed to authenticate. API Error: 401 x"}, 401},
		{"claude 403", NewClaude, run{stdout: claudeResult + `"api_error_status":403,"result":"API Error: 403 permission_error"}`, exit: Exit{Code: 1}},
			Failure{ClassAuth, "API Error: 403 permission_error"}, 403},
		{"claude authentication_failed on the synthetic message", NewClaude, run{stdout: `{"type":"assistant","message":{"model":"<synthetic>","content":[{"type":"text","text":"Something"}]},"is_api_error_message":true,"error":"authentication_failed"}
` + claudeResult + `"api_error_status":null,"result":"Something"}`, exit: Exit{Code: 1}},
			Failure{ClassAuth, "Something"}, 0},
		{"claude rate_limit on the synthetic message", NewClaude, run{stdout: `{"type":"assistant","message":{"content":[]},"is_api_error_message":true,"error":"rate_limit"}
` + claudeResult + `"result":"Slow down"}`, exit: Exit{Code: 1}},
			Failure{ClassRate, "Slow down"}, 0},
		{"claude 429", NewClaude, run{stdout: claudeResult + `"api_error_status":429,"result":"API Error: 429 rate limited"}`, exit: Exit{Code: 1}},
			Failure{ClassRate, "API Error: 429 rate limited"}, 429},
		{"claude 404 model", NewClaude, run{stdout: claudeResult + `"api_error_status":404,"result":"There's an issue with the selected model (bogus). It may not exist or you may not have access to it."}`, exit: Exit{Code: 1}},
			Failure{ClassConfig, "There's an issue with the selected model (bogus). It may not exist or you may not have access to it."}, 404},
		{"claude 500", NewClaude, run{stdout: claudeResult + `"api_error_status":500,"result":"API Error: 500 boom"}`, exit: Exit{Code: 1}},
			Failure{ClassTransient, "API Error: 500 boom"}, 500},
		{"claude unknown session", NewClaude, run{stdout: `{"type":"result","subtype":"error_during_execution","is_error":true,"num_turns":0,"errors":["No conversation found with session ID: 0000"]}`,
			stderr: "No conversation found with session ID: 0000", exit: Exit{Code: 1}},
			Failure{ClassSession, "No conversation found with session ID: 0000"}, 0},
		{"claude session id in use", NewClaude, run{stderr: "Error: Session ID 5c1e is already in use.", exit: Exit{Code: 1}},
			Failure{ClassConfig, "Error: Session ID 5c1e is already in use."}, 0},
		{"claude bypass as root", NewClaude, run{stderr: "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons", exit: Exit{Code: 1}},
			Failure{ClassConfig, "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons"}, 0},
		{"claude max turns", NewClaude, run{stdout: `{"type":"result","subtype":"error_max_turns","is_error":true,"errors":["Reached maximum number of turns (1)"],"terminal_reason":"max_turns"}`, exit: Exit{Code: 1}},
			Failure{ClassConfig, "max_turns: Reached maximum number of turns (1)"}, 0},
		{"claude killed, nothing said", NewClaude, run{exit: Exit{Code: -1, Signal: "SIGKILL"}},
			Failure{ClassTransient, "killed by SIGKILL"}, 0},
		{"claude error turn then a good one, exit 0", NewClaude, run{stdout: claudeResult + `"api_error_status":429,"result":"API Error: 429"}
{"type":"result","subtype":"success","is_error":false,"result":"ok"}`},
			Failure{}, 429},
		// Codex
		{"codex 401", NewCodex, run{stdout: `{"type":"turn.failed","error":{"message":"unexpected status 401 Unauthorized: Missing bearer or basic authentication in header"}}`, exit: Exit{Code: 1}},
			Failure{ClassAuth, "unexpected status 401 Unauthorized: Missing bearer or basic authentication in header"}, 401},
		{"codex 429 after retries", NewCodex, run{stdout: `{"type":"turn.failed","error":{"message":"exceeded retry limit, last status: 429 Too Many Requests"}}`, exit: Exit{Code: 1}},
			Failure{ClassRate, "exceeded retry limit, last status: 429 Too Many Requests"}, 429},
		{"codex missing key", NewCodex, run{stdout: `{"type":"turn.failed","error":{"message":"Missing environment variable: ` + "`MOCK_KEY`" + `."}}`, exit: Exit{Code: 1}},
			Failure{ClassAuth, "Missing environment variable: `MOCK_KEY`."}, 0},
		{"codex unknown model", NewCodex, run{stdout: `{"type":"turn.failed","error":{"message":"unexpected status 404 Not Found: {\"error\":{\"code\":\"model_not_found\"}}"}}`, exit: Exit{Code: 1}},
			Failure{ClassConfig, `unexpected status 404 Not Found: {"error":{"code":"model_not_found"}}`}, 404},
		{"codex 500", NewCodex, run{stdout: `{"type":"turn.failed","error":{"message":"We're currently experiencing high demand, which may cause temporary errors."}}`, exit: Exit{Code: 1}},
			Failure{ClassTransient, "We're currently experiencing high demand, which may cause temporary errors."}, 0},
		{"codex unknown thread", NewCodex, run{stderr: "Reading additional input from stdin...\nError: thread/resume: thread/resume failed: no rollout found for thread id 01a2\n\nStack backtrace:\n   0: main", exit: Exit{Code: 1}},
			Failure{ClassSession, "Error: thread/resume: thread/resume failed: no rollout found for thread id 01a2"}, 0},
		{"codex usage error", NewCodex, run{stderr: "error: unexpected argument '--bogus' found\n\n  tip: to pass '--bogus' as a value, use '-- --bogus'\n\nUsage: codex exec [OPTIONS] [PROMPT]", exit: Exit{Code: 2}},
			Failure{ClassConfig, "error: unexpected argument '--bogus' found"}, 0},
		{"codex exit 2, stderr lost", NewCodex, run{exit: Exit{Code: 2}},
			Failure{ClassConfig, "usage error"}, 0},
		{"codex interrupted, a warning on stderr", NewCodex, run{stdout: `{"type":"turn.started"}`,
			stderr: "WARNING: proceeding, even though we could not create PATH aliases", exit: Exit{Code: 1}},
			Failure{ClassTransient, "exit code 1"}, 0},
		// opencode
		{"opencode 401", NewOpencode, run{stdout: `{"type":"error","sessionID":"ses_1","error":{"name":"APIError","data":{"message":"invalid x-api-key","statusCode":401,"isRetryable":false}}}`, exit: Exit{Code: 1}},
			Failure{ClassAuth, "APIError: invalid x-api-key"}, 401},
		{"opencode provider auth", NewOpencode, run{stdout: `{"type":"error","sessionID":"ses_1","error":{"name":"ProviderAuthError","data":{"providerID":"anthropic","message":"no credentials"}}}`, exit: Exit{Code: 1}},
			Failure{ClassAuth, "ProviderAuthError: no credentials"}, 0},
		{"opencode 429", NewOpencode, run{stdout: `{"type":"error","sessionID":"ses_1","error":{"name":"APIError","data":{"message":"slow down","statusCode":429}}}`, exit: Exit{Code: 1}},
			Failure{ClassRate, "APIError: slow down"}, 429},
		{"opencode 400", NewOpencode, run{stdout: `{"type":"error","sessionID":"ses_1","error":{"name":"APIError","data":{"message":"mock invalid_request_error","statusCode":400}}}`, exit: Exit{Code: 1}},
			Failure{ClassConfig, "APIError: mock invalid_request_error"}, 400},
		{"opencode unknown session", NewOpencode, run{stderr: "Error: Session not found", exit: Exit{Code: 1}},
			Failure{ClassSession, "Error: Session not found"}, 0},
		// Gemini
		{"gemini 401 result", NewGemini, run{stdout: `{"type":"result","status":"error","error":{"type":"unknown","message":"[API Error: {\"error\":{\"code\":401,\"message\":\"unauthenticated\"}}]"}}`, exit: Exit{Code: 145}},
			Failure{ClassAuth, "API Error: unauthenticated"}, 401},
		{"gemini invalid key comes as 400", NewGemini, run{stdout: `{"type":"result","status":"error","error":{"message":"[API Error: {\"error\":{\"code\":400,\"message\":\"API key not valid. Please pass a valid API key.\"}}]"}}`, exit: Exit{Code: 144}},
			Failure{ClassAuth, "API Error: API key not valid. Please pass a valid API key."}, 400},
		{"gemini 41", NewGemini, run{stderr: "Invalid auth method selected.", exit: Exit{Code: 41}},
			Failure{ClassAuth, "Invalid auth method selected."}, 0},
		{"opencode crash, details indented", NewOpencode, run{stderr: "YOLO mode\nTypeError: undefined is not an object\n    at run (x.js:1:2)\n  code: 'ERR_X'", exit: Exit{Code: 1}},
			Failure{ClassTransient, "TypeError: undefined is not an object"}, 0},
		{"gemini 41, nothing on stderr", NewGemini, run{exit: Exit{Code: 41}},
			Failure{ClassAuth, "authentication failed"}, 0},
		{"gemini 42", NewGemini, run{stderr: "Error: Please provide a prompt", exit: Exit{Code: 42}},
			Failure{ClassConfig, "Error: Please provide a prompt"}, 0},
		{"gemini 42 bad session", NewGemini, run{stderr: "Error resuming session: Invalid session identifier \"0000\". Use --list-sessions to see available sessions.", exit: Exit{Code: 42}},
			Failure{ClassSession, "Error resuming session: Invalid session identifier \"0000\". Use --list-sessions to see available sessions."}, 0},
		{"gemini flag conflict", NewGemini, run{stderr: "Cannot use both --yolo (-y) and --approval-mode together. Use --approval-mode=yolo instead.\nUsage: gemini [options] [command]", exit: Exit{Code: 1}},
			Failure{ClassConfig, "Cannot use both --yolo (-y) and --approval-mode together. Use --approval-mode=yolo instead."}, 0},
		{"gemini bad flag value", NewGemini, run{stderr: "An unexpected critical error occurred:Error: Invalid approval mode: plan,yolo. Valid values are: yolo, auto_edit, plan, default\n    at loadCliConfig (file:///x.js:1:2)", exit: Exit{Code: 1}},
			Failure{ClassConfig, "An unexpected critical error occurred:Error: Invalid approval mode: plan,yolo. Valid values are: yolo, auto_edit, plan, default"}, 0},
		{"gemini 44", NewGemini, run{exit: Exit{Code: 44}}, Failure{ClassConfig, "sandbox error"}, 0},
		{"gemini 52", NewGemini, run{exit: Exit{Code: 52}}, Failure{ClassConfig, "configuration error"}, 0},
		{"gemini 53", NewGemini, run{exit: Exit{Code: 53}}, Failure{ClassConfig, "session turn limit reached"}, 0},
		{"gemini 54", NewGemini, run{exit: Exit{Code: 54}}, Failure{ClassTransient, "fatal tool error"}, 0},
		{"gemini 55", NewGemini, run{stderr: "\x1b[31mGemini CLI is not running in a trusted directory. To proceed, either use `--skip-trust`, set the `GEMINI_CLI_TRUST_WORKSPACE=true` environment variable, or trust this directory in interactive mode.\x1b[0m", exit: Exit{Code: 55}},
			Failure{ClassConfig, "untrusted workspace: pass --skip-trust or set GEMINI_CLI_TRUST_WORKSPACE=true"}, 0},
		{"gemini 144", NewGemini, run{exit: Exit{Code: 144}}, Failure{ClassConfig, "API error, HTTP status 400"}, 0},
		{"gemini 145", NewGemini, run{exit: Exit{Code: 145}}, Failure{ClassAuth, "API error, HTTP status 401"}, 0},
		{"gemini 147", NewGemini, run{exit: Exit{Code: 147}}, Failure{ClassAuth, "API error, HTTP status 403"}, 0},
		{"gemini 148", NewGemini, run{exit: Exit{Code: 148}}, Failure{ClassConfig, "API error, HTTP status 404"}, 0},
		{"gemini 173", NewGemini, run{exit: Exit{Code: 173}}, Failure{ClassRate, "API error, HTTP status 429"}, 0},
		{"gemini 244", NewGemini, run{exit: Exit{Code: 244}}, Failure{ClassTransient, "API error, HTTP status 500"}, 0},
		{"gemini 246", NewGemini, run{exit: Exit{Code: 246}}, Failure{ClassTransient, "API error, HTTP status 502"}, 0},
		{"gemini 247", NewGemini, run{exit: Exit{Code: 247}}, Failure{ClassTransient, "API error, HTTP status 503"}, 0},
		{"gemini killed while retrying 429", NewGemini, run{stdout: `{"type":"init","session_id":"s","model":"gemini-2.5-flash"}`,
			stderr: "Attempt 1 failed with status 429. Retrying with backoff... GaxiosError: [{\n  \"error\": {\n    at Gaxios._request (x.js:1:2)\n  status: 429\n}", exit: Exit{Code: -1, Signal: "SIGTERM"}},
			Failure{ClassRate, "Attempt 1 failed with status 429. Retrying with backoff..."}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			events, f := tc.run.decode(t, tc.new())
			checkEvents(t, events)
			if f != tc.want {
				t.Errorf("failure %+v, want %+v", f, tc.want)
			}
			class, status := fatalOf(events)
			if class != "" && !tc.run.exit.Clean() && class != tc.want.Class && tc.want.Class != "" {
				t.Errorf("fatal error of class %q, failure of class %q", class, tc.want.Class)
			}
			if status != tc.status {
				t.Errorf("fatal error with status %d, want %d", status, tc.status)
			}
		})
	}
}

// End leaves the decoder ready for the next run: nothing of a failed run leaks into the next.
func TestFailureResetAtEnd(t *testing.T) {
	for _, f := range formats {
		d := f.new()
		d.Decode(nil, []byte(`{"type":"result","subtype":"success","is_error":true,"status":"error","result":"Not logged in"}`))
		d.DecodeStderr(nil, []byte("Error: Session not found"))
		d.End(nil, Exit{Code: 1})
		if _, got := d.End(nil, Exit{Code: 1}); got != (Failure{ClassTransient, "exit code 1"}) {
			t.Errorf("%s: second run's failure %+v", f.name, got)
		}
	}
}

// Evidence keeps one short line per kind, whatever the agent writes.
func TestEvidenceBounded(t *testing.T) {
	d := NewCodex()
	long := "error: " + strings.Repeat("é", 100000)
	for range 1000 {
		d.DecodeStderr(nil, []byte(long))
	}
	_, f := d.End(nil, Exit{Code: 1})
	if len(f.Message) > failureMessageMax+len("…") || !strings.HasPrefix(f.Message, "error: é") || !strings.HasSuffix(f.Message, "é…") {
		t.Errorf("message of %d bytes: %.40q…", len(f.Message), f.Message)
	}
}

// Retry notices are warnings (fatal false) with attempt, status and class: Claude's
// system/api_retry, Codex's "Reconnecting... N/M (…)", Gemini's retry lines on stderr.
func TestRetryNotices(t *testing.T) {
	for _, tc := range []struct {
		name   string
		new    func() Decoder
		stdout string
		stderr string
		want   []Event
	}{
		{"claude api_retry", NewClaude, `{"type":"system","subtype":"api_retry","attempt":3,"max_retries":10,"retry_delay_ms":2000,"error_status":429,"error":"rate_limit"}`, "",
			[]Event{{Type: TypeError, Source: SourceAgent, Message: "API request failed (429 rate_limit), retry 3/10 in 2000 ms", Class: ClassRate, Status: 429, Attempt: 3}}},
		{"claude api_retry with a fractional delay", NewClaude, `{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":561.2983430880136,"error_status":401,"error":"authentication_failed"}`, "",
			[]Event{{Type: TypeError, Source: SourceAgent, Message: "API request failed (401 authentication_failed), retry 1/10 in 561 ms", Class: ClassAuth, Status: 401, Attempt: 1}}},
		{"claude api_retry without status", NewClaude, `{"type":"system","subtype":"api_retry","attempt":1,"error":"server_error"}`, "",
			[]Event{{Type: TypeError, Source: SourceAgent, Message: "API request failed (server_error), retry 1", Class: ClassTransient, Attempt: 1}}},
		{"codex reconnecting", NewCodex, `{"type":"error","message":"Reconnecting... 2/5 (stream disconnected before completion: error sending request)"}`, "",
			[]Event{{Type: TypeError, Source: SourceAgent, Message: "Reconnecting... 2/5 (stream disconnected before completion: error sending request)", Class: ClassTransient, Attempt: 2}}},
		{"codex waiting for the network", NewCodex, `{"type":"error","message":"Reconnecting... waiting for network (Connection failed: error sending request)"}`, "",
			[]Event{{Type: TypeError, Source: SourceAgent, Message: "Reconnecting... waiting for network (Connection failed: error sending request)", Class: ClassTransient, Attempt: 1}}},
		{"codex reconnecting after a 429", NewCodex, `{"type":"error","message":"Reconnecting... 1/5 (unexpected status 429 Too Many Requests: slow down)"}`, "",
			[]Event{{Type: TypeError, Source: SourceAgent, Message: "Reconnecting... 1/5 (unexpected status 429 Too Many Requests: slow down)", Class: ClassRate, Status: 429, Attempt: 1}}},
		{"codex error that is no retry", NewCodex, `{"type":"error","message":"We're currently experiencing high demand"}`, "",
			[]Event{{Type: TypeError, Source: SourceAgent, Message: "We're currently experiencing high demand"}}},
		{"gemini status", NewGemini, "", "Attempt 1 failed with status 429. Retrying with backoff... GaxiosError: [{",
			[]Event{{Type: TypeError, Source: SourceAgent, Message: "Attempt 1 failed with status 429. Retrying with backoff...", Class: ClassRate, Status: 429, Attempt: 1}}},
		{"gemini 5xx", NewGemini, "", "Attempt 2 failed with status 503. Retrying with backoff... ApiError: {\"error\":{\"code\":503}}",
			[]Event{{Type: TypeError, Source: SourceAgent, Message: "Attempt 2 failed with status 503. Retrying with backoff...", Class: ClassTransient, Status: 503, Attempt: 2}}},
		{"gemini 429 without Retry-After", NewGemini, "", "Attempt 4 failed with 429 error (no Retry-After header). Retrying with backoff... Error: got status: 429",
			[]Event{{Type: TypeError, Source: SourceAgent, Message: "Attempt 4 failed with 429 error (no Retry-After header). Retrying with backoff...", Class: ClassRate, Status: 429, Attempt: 4}}},
		{"gemini quota", NewGemini, "", "Attempt 2 failed: You have exhausted your capacity on this model. Your quota will reset after 2s.. Retrying after 5321ms...",
			[]Event{{Type: TypeError, Source: SourceAgent, Message: "Attempt 2 failed: You have exhausted your capacity on this model. Your quota will reset after 2s.. Retrying after 5321ms...", Class: ClassRate, Attempt: 2}}},
		{"gemini without status", NewGemini, "", "\x1b[33mAttempt 1 failed. Retrying with backoff... TypeError: fetch failed\x1b[0m",
			[]Event{{Type: TypeError, Source: SourceAgent, Message: "Attempt 1 failed. Retrying with backoff...", Class: ClassTransient, Attempt: 1}}},
		{"gemini last attempt is no retry", NewGemini, "", "Attempt 10 failed: quota. Max attempts reached", nil},
		{"gemini other stderr", NewGemini, "", "YOLO mode is enabled. All tool calls will be automatically approved.", nil},
		{"gemini retry in the middle of a message", NewGemini, `{"type":"message","role":"assistant","content":"Half","delta":true}`, "Attempt 1 failed. Retrying with backoff...",
			[]Event{{Type: TypeText, Text: "Half"}, {Type: TypeError, Source: SourceAgent, Message: "Attempt 1 failed. Retrying with backoff...", Class: ClassTransient, Attempt: 1}}},
	} {
		d := tc.new()
		var got []Event
		for _, l := range stdoutLines("", []byte(tc.stdout)) {
			got = d.Decode(got, l)
		}
		for _, l := range stdoutLines("", []byte(tc.stderr)) {
			got = d.DecodeStderr(got, l)
		}
		checkEvents(t, got)
		if !bytes.Equal(serialize(got), serialize(tc.want)) {
			t.Errorf("%s: got:\n%swant:\n%s", tc.name, serialize(got), serialize(tc.want))
		}
	}
}

// Claude: each denial becomes a permission event with decision deny, once, whether it comes as
// system/permission_denied (with the input of its tool_use), in result.permission_denials
// (before the result), or both.
func TestClaudePermissionDenials(t *testing.T) {
	const toolUse = `{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"rm x"}}]}}`
	const systemDenied = `{"type":"system","subtype":"permission_denied","tool_name":"Bash","tool_use_id":"t1","message":"needs approval"}`
	const result = `{"type":"result","subtype":"success","is_error":false,"result":"done","num_turns":2,"permission_denials":[` +
		`{"tool_name":"Bash","tool_use_id":"t1","tool_input":{"command":"rm x"}},{"tool_name":"Write","tool_use_id":"t2","tool_input":{"file_path":"a"}}]}`
	deny1 := Event{Type: TypePermission, Decision: "deny", ID: "t1", Tool: "Bash", Input: json.RawMessage(`{"command":"rm x"}`)}
	deny2 := Event{Type: TypePermission, Decision: "deny", ID: "t2", Tool: "Write", Input: json.RawMessage(`{"file_path":"a"}`)}
	use := Event{Type: TypeToolUse, ID: "t1", Tool: "Bash", Input: json.RawMessage(`{"command":"rm x"}`)}
	res := Event{Type: TypeResult, OK: true, Text: "done", Steps: 2, Usage: &Usage{}}
	for _, tc := range []struct {
		name  string
		lines string
		want  []Event
	}{
		{"result only", toolUse + "\n" + result, []Event{use, deny1, deny2, res}},
		{"system line and result", toolUse + "\n" + systemDenied + "\n" + result, []Event{use, deny1, deny2, res}},
		{"system line only", toolUse + "\n" + systemDenied, []Event{use, deny1}},
		{"system line without its tool_use", systemDenied, []Event{{Type: TypePermission, Decision: "deny", ID: "t1", Tool: "Bash"}}},
	} {
		d := NewClaude()
		var got []Event
		for _, l := range stdoutLines("", []byte(tc.lines)) {
			got = d.Decode(got, l)
		}
		checkEvents(t, got)
		if !bytes.Equal(serialize(got), serialize(tc.want)) {
			t.Errorf("%s: got:\n%swant:\n%s", tc.name, serialize(got), serialize(tc.want))
		}
	}
	// A denial in the next turn is reported again: de-duplication is per turn.
	d := NewClaude()
	var got []Event
	for _, l := range stdoutLines("", []byte(toolUse+"\n"+result+"\n"+toolUse+"\n"+result)) {
		got = d.Decode(got, l)
	}
	if n := strings.Count(string(serialize(got)), `"decision":"deny"`); n != 4 {
		t.Errorf("two turns gave %d denials, want 4:\n%s", n, serialize(got))
	}
}

// Claude: --include-partial-messages deltas give no events; the assistant line that follows
// carries the text whole.
func TestClaudeStreamEventsFolded(t *testing.T) {
	d := NewClaude()
	var got []Event
	for _, l := range stdoutLines("", []byte(`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}}
{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lo"}}}
{"type":"assistant","message":{"content":[{"type":"text","text":"Hello"}]}}`)) {
		got = d.Decode(got, l)
	}
	want := []Event{{Type: TypeText, Text: "Hello"}}
	if !bytes.Equal(serialize(got), serialize(want)) {
		t.Errorf("got:\n%swant:\n%s", serialize(got), serialize(want))
	}
}

// Gemini: a message's chunks are held up to geminiMaxChunks, then sent early; the rest follows
// as one more text.
func TestGeminiChunksCapped(t *testing.T) {
	chunk := strings.Repeat("x", 64<<10)
	line := []byte(`{"type":"message","role":"assistant","content":"` + chunk + `","delta":true}`)
	d := NewGemini()
	var got []Event
	for range geminiMaxChunks/len(chunk) + 1 {
		got = d.Decode(got, line)
	}
	if len(got) != 1 || len(got[0].Text) != geminiMaxChunks {
		t.Fatalf("after %d bytes: %d events, the first of %d bytes", geminiMaxChunks+len(chunk), len(got), len(got[0].Text))
	}
	got, _ = d.End(got, Exit{})
	if len(got) != 3 || got[1].Type != TypeText || got[1].Text != chunk || got[2].Type != TypeResult {
		t.Errorf("at exit: %d events", len(got))
	}
}

// Gemini: when init says "auto" (or names no model), the model that did the work is the
// stats.models key with the most tokens, sent as a session event with no session id before
// the result; a model named by init stands, and so does "auto" when no model used a token.
func TestGeminiAutoModel(t *testing.T) {
	const worked = `{"type":"result","status":"success","stats":{"models":{` +
		`"gemini-3.5-flash-lite":{"total_tokens":110,"input_tokens":100,"output_tokens":10},` +
		`"gemini-3.1-pro-preview":{"total_tokens":220,"input_tokens":200,"output_tokens":20}}}}`
	const unused = `{"type":"result","status":"error","error":{"message":"[API Error: models/gemini-3.1-pro-preview is not found]"},"stats":{"models":{` +
		`"gemini-3.5-flash-lite":{"total_tokens":0},"gemini-3.1-pro-preview":{"total_tokens":0}}}}`
	for _, tc := range []struct {
		init, result string
		want         string // the model of the late session event, "" for none
	}{
		{`{"type":"init","session_id":"s1","model":"auto"}`, worked, "gemini-3.1-pro-preview"},
		{`{"type":"init","session_id":"s1","model":"auto-gemini-3"}`, worked, "gemini-3.1-pro-preview"},
		{`{"type":"init","session_id":"s1"}`, worked, "gemini-3.1-pro-preview"},
		{`{"type":"init","session_id":"s1","model":"gemini-2.5-flash"}`, worked, ""},
		{`{"type":"init","session_id":"s1","model":"auto"}`, unused, ""},
	} {
		got := decodeAll(t, NewGemini(), stdoutLines("", []byte(tc.init+"\n"+tc.result)), Exit{})
		want := []Event{{Type: TypeSession, SessionID: "s1", Model: initModel(tc.init)}}
		if tc.want != "" {
			want = append(want, Event{Type: TypeSession, SessionID: "s1", Model: tc.want})
		}
		var sessions []Event
		for _, e := range got {
			if e.Type == TypeSession {
				sessions = append(sessions, e)
			}
		}
		if !bytes.Equal(serialize(sessions), serialize(want)) || got[len(got)-1].Type != TypeResult {
			t.Errorf("%s then %.40s…: got\n%swant sessions\n%s", tc.init, tc.result, serialize(got), serialize(want))
		}
	}
}

// A conversation of gemini processes (one a turn) in an auto session: the model the first turn
// learned is reported by each later turn's init, and no session event with the same model (nor
// one without the session id) follows at its end.
func TestGeminiAutoModelLaterTurns(t *testing.T) {
	d := NewGemini()
	turn := `{"type":"init","session_id":"s1","model":"auto"}` + "\n" +
		`{"type":"result","status":"success","stats":{"models":{"gemini-3.1-pro-preview":{"total_tokens":2,"input_tokens":1,"output_tokens":1}}}}`
	decodeAll(t, d, stdoutLines("", []byte(turn)), Exit{})
	var sessions []Event
	for _, e := range decodeAll(t, d, stdoutLines("", []byte(turn)), Exit{}) {
		if e.Type == TypeSession {
			sessions = append(sessions, e)
		}
	}
	if want := []Event{{Type: TypeSession, SessionID: "s1", Model: "gemini-3.1-pro-preview"}}; !bytes.Equal(serialize(sessions), serialize(want)) {
		t.Errorf("the second turn's sessions:\n%swant\n%s", serialize(sessions), serialize(want))
	}
}

func initModel(init string) string {
	var v struct{ Model string }
	_ = json.Unmarshal([]byte(init), &v)
	return v.Model
}

// Claude: the synthetic assistant message of an API error gives no text (the failed result
// repeats it) but its category classifies the failure: 2.1.330 flags it is_api_error_message,
// 2.1.197 only names the category on a message of model <synthetic>. A real message that names
// an error category keeps its text.
func TestClaudeSyntheticErrorMessage(t *testing.T) {
	const result = `{"type":"result","subtype":"success","is_error":true,"api_error_status":null,"result":"Something"}`
	for _, tc := range []struct {
		name, assistant string
		texts           int
	}{
		{"2.1.330", `{"type":"assistant","message":{"model":"<synthetic>","content":[{"type":"text","text":"Something"}]},"is_api_error_message":true,"error":"authentication_failed"}`, 0},
		{"2.1.197", `{"type":"assistant","message":{"model":"<synthetic>","content":[{"type":"text","text":"Something"}]},"error":"authentication_failed"}`, 0},
		{"a real message", `{"type":"assistant","message":{"model":"claude-opus-4-8","content":[{"type":"text","text":"Half an ans"}]},"error":"max_output_tokens"}`, 1},
	} {
		events, f := decodeRun(t, NewClaude(), stdoutLines("", []byte(tc.assistant+"\n"+result)), nil, Exit{Code: 1})
		texts := 0
		for _, e := range events {
			if e.Type == TypeText {
				texts++
			}
		}
		wantClass := ClassAuth
		if tc.texts > 0 {
			wantClass = ClassTransient
		}
		if texts != tc.texts || f.Class != wantClass {
			t.Errorf("%s: %d texts, failure %+v; want %d texts, class %s", tc.name, texts, f, tc.texts, wantClass)
		}
	}
}
