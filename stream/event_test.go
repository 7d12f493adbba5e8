package stream

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"
	"unicode/utf8"

	"agt/termsafe"
)

func TestAppendJSONFieldsPerType(t *testing.T) {
	ts := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	cost := 0.25
	code := 3
	tests := []struct {
		ev   Event
		want string
	}{
		{Event{Type: TypeOutput, Line: "a\"b\n\x00\xff"},
			`{"v":1,"ts":"2026-01-02T03:04:05.000000006Z","agent":"x","seq":7,"type":"output","line":"a\"b\n\u0000\ufffd"}`},
		{Event{Type: TypeResult, OK: true, Turns: 1},
			`{"v":1,"ts":"2026-01-02T03:04:05.000000006Z","agent":"x","seq":7,"type":"result","ok":true,"text":"","turns":1,"duration_ms":0,"cost_usd":null,"usage":{"input_tokens":0,"output_tokens":0,"cache_read_tokens":0,"cache_write_tokens":0}}`},
		{Event{Type: TypeResult, CostUSD: &cost, Usage: &Usage{InputTokens: 5}},
			`{"v":1,"ts":"2026-01-02T03:04:05.000000006Z","agent":"x","seq":7,"type":"result","ok":false,"text":"","turns":0,"duration_ms":0,"cost_usd":0.25,"usage":{"input_tokens":5,"output_tokens":0,"cache_read_tokens":0,"cache_write_tokens":0}}`},
		{Event{Type: TypeExit, Code: &code},
			`{"v":1,"ts":"2026-01-02T03:04:05.000000006Z","agent":"x","seq":7,"type":"exit","code":3,"signal":null}`},
		{Event{Type: TypeExit, Signal: "SIGKILL"},
			`{"v":1,"ts":"2026-01-02T03:04:05.000000006Z","agent":"x","seq":7,"type":"exit","code":null,"signal":"SIGKILL"}`},
		{Event{Type: TypeToolUse, ID: "t1", Tool: "Bash", Input: json.RawMessage("{\n \"cmd\": \"ls\"\n}")},
			`{"v":1,"ts":"2026-01-02T03:04:05.000000006Z","agent":"x","seq":7,"type":"tool_use","id":"t1","tool":"Bash","input":{"cmd":"ls"}}`},
		{Event{Type: TypeToolResult, ID: "t1", Output: json.RawMessage("not json")},
			`{"v":1,"ts":"2026-01-02T03:04:05.000000006Z","agent":"x","seq":7,"type":"tool_result","id":"t1","tool":"","ok":false,"output":"not json"}`},
		{Event{Type: TypeUnparsed, Raw: "zz", Truncated: true, Bytes: 10},
			`{"v":1,"ts":"2026-01-02T03:04:05.000000006Z","agent":"x","seq":7,"type":"unparsed","raw":"zz","truncated":true,"bytes":10}`},
		{Event{Type: TypeState, From: Running, To: Waiting, Reason: ReasonQuiet},
			`{"v":1,"ts":"2026-01-02T03:04:05.000000006Z","agent":"x","seq":7,"type":"state","from":"running","to":"waiting","reason":"quiet"}`},
		// The optional fields: only when set, only on their types.
		{Event{Type: TypeError, Message: "m", Source: SourceAgent, Fatal: true},
			`{"v":1,"ts":"2026-01-02T03:04:05.000000006Z","agent":"x","seq":7,"type":"error","message":"m","source":"agent","fatal":true}`},
		{Event{Type: TypeError, Message: "m", Source: SourceAgent, Fatal: true, Class: ClassAuth, Status: 401},
			`{"v":1,"ts":"2026-01-02T03:04:05.000000006Z","agent":"x","seq":7,"type":"error","message":"m","source":"agent","fatal":true,"class":"auth","status":401}`},
		{Event{Type: TypeError, Message: "m", Source: SourceAgent, Class: ClassRate, Attempt: 2},
			`{"v":1,"ts":"2026-01-02T03:04:05.000000006Z","agent":"x","seq":7,"type":"error","message":"m","source":"agent","fatal":false,"class":"rate","attempt":2}`},
		{Event{Type: TypePermission, ID: "t1", Tool: "Bash", Decision: "deny", Class: ClassAuth, Steps: 3},
			`{"v":1,"ts":"2026-01-02T03:04:05.000000006Z","agent":"x","seq":7,"type":"permission","id":"t1","tool":"Bash","input":null,"options":null,"decision":"deny"}`},
		{Event{Type: TypePermission, ID: "r1", Tool: "Bash"},
			`{"v":1,"ts":"2026-01-02T03:04:05.000000006Z","agent":"x","seq":7,"type":"permission","id":"r1","tool":"Bash","input":null,"options":null}`},
		{Event{Type: TypeResult, OK: true, Steps: 4, Status: 500, Attempt: 1, Decision: "allow"},
			`{"v":1,"ts":"2026-01-02T03:04:05.000000006Z","agent":"x","seq":7,"type":"result","ok":true,"text":"","turns":0,"steps":4,"duration_ms":0,"cost_usd":null,"usage":{"input_tokens":0,"output_tokens":0,"cache_read_tokens":0,"cache_write_tokens":0}}`},
		{Event{Type: TypeGap, Missed: 3, FromSeq: 5, ToSeq: 7, Line: "x"},
			`{"v":1,"ts":"2026-01-02T03:04:05.000000006Z","agent":"x","seq":7,"type":"gap","missed":3,"from_seq":5,"to_seq":7}`},
		{Event{Type: TypeRestart, Attempt: 0, Class: ClassAuth},
			`{"v":1,"ts":"2026-01-02T03:04:05.000000006Z","agent":"x","seq":7,"type":"restart","attempt":0,"delay_ms":0,"reason":""}`},
	}
	for _, tt := range tests {
		ev := tt.ev
		ev.V, ev.TS, ev.Agent, ev.Seq = Version, ts, "x", 7
		got := string(ev.AppendJSON(nil))
		if got != tt.want {
			t.Errorf("%s:\ngot  %s\nwant %s", tt.ev.Type, got, tt.want)
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("%s: invalid JSON", tt.ev.Type)
		}
		var back Event
		if err := json.Unmarshal([]byte(got), &back); err != nil || back.Type != tt.ev.Type || back.Seq != 7 {
			t.Errorf("%s: round trip: %v %+v", tt.ev.Type, err, back)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "a\"b\\c\n\t\x00\x1f", "\xff\xfe", "\u2028\u2029", "héllo", "\u009b2J\x7f\x1b]52;c;x\x07"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := AppendString(nil, s)
		// No byte a terminal acts on: events printed as they are reach terminals (R35).
		for _, r := range string(b) {
			if termsafe.Unsafe(r) {
				t.Fatalf("AppendString(%q) = %q keeps %U", s, b, r)
			}
		}
		var back string
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("AppendString(%q) = %s: %v", s, b, err)
		}
		if utf8.ValidString(s) && back != s {
			t.Fatalf("round trip of %q gave %q", s, back)
		}
	})
}

// FuzzAppendCompact: on valid JSON, AppendCompact does what json.Compact does.
func FuzzAppendCompact(f *testing.F) {
	for _, s := range []string{`{"a": [1, 2,	3],` + "\n" + ` "b": "x y \" \\ z"}`, `"\\"`, ` [ ] `, `{"k":"\u2028 "}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		var want bytes.Buffer
		if err := json.Compact(&want, raw); err != nil {
			t.Fatal(err)
		}
		if got := AppendCompact(nil, raw); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("AppendCompact(%q) = %q, want %q", raw, got, want.Bytes())
		}
	})
}

// AppendCost writes a cost rounded to a millionth of a dollar as encoding/json writes a float64,
// and null for what JSON cannot hold; events and ps share it.
func TestAppendCost(t *testing.T) {
	for _, f := range []float64{0, 0.00846, 1.25e-3, 1e-7, 2.5e-10, 123456.789, 1e21, 3e25, 0.008459999999999999, -0.0000015} {
		want, _ := json.Marshal(RoundUSD(f))
		if got := AppendCost(nil, &f); string(got) != string(want) {
			t.Errorf("%v: %s, want %s", f, got, want)
		}
	}
	for f, want := range map[float64]string{0.008459999999999999: "0.00846", 1e-7: "0", 0.0000015: "0.000002", 3e25: "3e+25"} {
		if got := AppendCost(nil, &f); string(got) != want {
			t.Errorf("%v: %s, want %s", f, got, want)
		}
	}
	nan, inf := math.NaN(), math.Inf(1)
	for _, c := range []*float64{nil, &nan, &inf} {
		if got := AppendCost(nil, c); string(got) != "null" {
			t.Errorf("%v: %s, want null", c, got)
		}
	}
}

// MarshalJSON is AppendJSON, and what it writes reads back with encoding/json into the same
// fields of the event's type: the hand-written encoder agrees with the library's decoder.
func TestAppendJSONParity(t *testing.T) {
	ts := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	cost, code := 0.5, 2
	events := []Event{
		{Type: TypeSpawned, Kind: "claude", Argv: []string{"claude", "-p"}, Cwd: "/w", Workspace: json.RawMessage(`{"kind":"dir"}`), PID: 42},
		{Type: TypeState, From: Starting, To: Running, Reason: ReasonRetrying},
		{Type: TypeSession, SessionID: "s", Model: "m", Cwd: "/w"},
		{Type: TypeText, Text: "hi\n", Delta: true},
		{Type: TypeToolUse, ID: "t", Tool: "Bash", Input: json.RawMessage(`{"command":"ls"}`)},
		{Type: TypeToolResult, ID: "t", Tool: "Bash", OK: true, Output: json.RawMessage(`"a.txt"`)},
		{Type: TypePermission, ID: "t", Tool: "Bash", Input: json.RawMessage(`{}`), Options: json.RawMessage(`[1]`), Decision: "deny"},
		{Type: TypeResult, OK: true, Text: "done", Turns: 2, Steps: 3, DurationMS: 9, CostUSD: &cost, Usage: &Usage{1, 2, 3, 4}},
		{Type: TypeOutput, Line: "l", Truncated: true, Bytes: 9},
		{Type: TypeStderr, Line: "e"},
		{Type: TypeError, Message: "m", Source: SourceAgent, Fatal: true, Class: ClassConfig, Status: 404},
		{Type: TypeError, Message: "m", Source: SourceAgent, Class: ClassTransient, Status: 503, Attempt: 3},
		{Type: TypeRestart, Attempt: 1, DelayMS: 500, Reason: "r"},
		{Type: TypeExit, Code: &code},
		{Type: TypeUnparsed, Raw: "x"},
		{Type: TypeGap, Missed: 2, FromSeq: 3, ToSeq: 4},
	}
	for _, e := range events {
		e.V, e.TS, e.Agent, e.Seq = Version, ts, "a", 1
		line := e.AppendJSON(nil)
		if m, err := e.MarshalJSON(); err != nil || !bytes.Equal(m, line) {
			t.Errorf("%s: MarshalJSON %s, %v; AppendJSON %s", e.Type, m, err, line)
		}
		var back Event
		if err := json.Unmarshal(line, &back); err != nil {
			t.Fatalf("%s: %v", e.Type, err)
		}
		if again := back.AppendJSON(nil); !bytes.Equal(again, line) {
			t.Errorf("%s: read back and written again:\n%s\nfirst:\n%s", e.Type, again, line)
		}
	}
}
