package stream

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"
	"unicode/utf8"
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
	for _, s := range []string{"", "plain", "a\"b\\c\n\t\x00\x1f", "\xff\xfe", "\u2028\u2029", "héllo"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := AppendString(nil, s)
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

// AppendCost writes a cost as encoding/json writes a float64, and null for what JSON cannot
// hold; events and ps share it.
func TestAppendCost(t *testing.T) {
	for _, f := range []float64{0, 0.00846, 1.25e-3, 1e-7, 2.5e-10, 123456.789, 1e21, 3e25} {
		want, _ := json.Marshal(f)
		if got := AppendCost(nil, &f); string(got) != string(want) {
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
