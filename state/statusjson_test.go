package state

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// fullStatus sets every field of Status, so that a field the decoder forgets shows up.
func fullStatus() *Status {
	code, hcode, cost := 137, 1, 1.25e-3
	return &Status{
		V: 1, Name: "a.b_c-1", Kind: "claude", State: "failed", Reason: "gave up \"after\" 5\n\u2028",
		Since:   time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC),
		Started: time.Date(2026, 11, 22, 9, 0, 0, 0, time.FixedZone("x", 3600)),
		Updated: time.Date(2026, 11, 22, 10, 0, 1, 5, time.UTC),
		PID:     4242, SupervisorPID: 4241, Instance: "00ff", Restarts: 5, ExitCode: &code, Signal: "SIGKILL",
		SessionID: "0f1e2d3c-aaaa-bbbb-cccc-000000000000", Model: "m-1", Turns: 7, CostUSD: &cost,
		Error: "API Error: 401 \"bad key\"", Resumable: true, Doing: "Bash", MaxCost: 2.5,
		Activity:     time.Date(2026, 11, 22, 9, 59, 0, 7, time.UTC),
		Usage:        Usage{InputTokens: 1 << 40, OutputTokens: 2, CacheReadTokens: 3, CacheWriteTokens: 4},
		SessionTotal: Usage{InputTokens: 5, OutputTokens: 6, CacheReadTokens: 7, CacheWriteTokens: 8},
		LastSeq:      1<<53 + 1, Dropped: 9, Dir: "/w/ü ñ",
		Workspace: json.RawMessage(`{"type":"git","path":"/w/x","branch":"agt/x"}`),
		Group:     "x",
		History: []Exit{
			{Code: &hcode, At: time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)},
			{Signal: "SIGSEGV", At: time.Date(2026, 11, 22, 9, 40, 0, 0, time.UTC)},
		},
	}
}

// TestDecodeStatusAgrees checks the fast decoder against encoding/json on documents Status
// marshals to, compact and indented, full and empty.
func TestDecodeStatusAgrees(t *testing.T) {
	for _, in := range []*Status{fullStatus(), {}, {V: 1, State: "running"}} {
		for _, indent := range []bool{false, true} {
			var b []byte
			if indent {
				b, _ = json.MarshalIndent(in, "", "  ")
			} else {
				b, _ = json.Marshal(in)
			}
			checkDecodeAgrees(t, b)
		}
	}
	// Nulls, unknown fields and key order as another writer might produce them.
	checkDecodeAgrees(t, []byte(`{"future":{"x":[1,2]},"exit_code":null,"cost_usd":null,"usage":null,
		"history":null,"workspace":null,"name":null,"since":null,"v":1,"pid":7,"pid":8}`))
}

func checkDecodeAgrees(t *testing.T, b []byte) {
	t.Helper()
	var want, got Status
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatalf("json.Unmarshal(%s): %v", b, err)
	}
	if err := decodeStatus(b, &got); err != nil {
		t.Fatalf("decodeStatus(%s): %v", b, err)
	}
	// The raw workspace may differ in white space only.
	want.Workspace, got.Workspace = compactRaw(t, want.Workspace), compactRaw(t, got.Workspace)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decodeStatus(%s)\n got %+v\nwant %+v", b, got, want)
	}
}

func compactRaw(t *testing.T, raw json.RawMessage) json.RawMessage {
	if raw == nil {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	return b
}

func TestDecodeStatusRejects(t *testing.T) {
	for _, bad := range []string{
		``, `[]`, `"x"`, `{"v":1`, `{"v":"1"}`, `{"v":1.5}`, `{"pid":"x"}`, `{"name":7}`,
		`{"since":"yesterday"}`, `{"since":5}`, `{"exit_code":"0"}`, `{"cost_usd":"1"}`,
		`{"usage":[1]}`, `{"usage":{"input_tokens":"a"}}`, `{"history":{}}`, `{"history":[1]}`,
		`{"history":[{"code":"1"}]}`, `{"history":[{"at":"then"}]}`,
	} {
		var s Status
		if err := decodeStatus([]byte(bad), &s); err == nil {
			t.Errorf("decodeStatus(%s) = %+v, want an error", bad, s)
		}
	}
}

// FuzzDecodeStatus: any input decodes or fails without panicking, and whatever decodes
// survives a marshal and decode unchanged.
func FuzzDecodeStatus(f *testing.F) {
	full, _ := json.Marshal(fullStatus())
	f.Add(full)
	f.Add([]byte(`{"v":1,"history":[null,{}],"usage":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var s Status
		if decodeStatus(b, &s) != nil {
			return
		}
		again, err := json.Marshal(&s)
		if err != nil {
			return // a workspace that gjson took but encoding/json rejects
		}
		var s2 Status
		if err := decodeStatus(again, &s2); err != nil {
			t.Fatalf("decodeStatus of its own marshal %s: %v", again, err)
		}
		again2, _ := json.Marshal(&s2)
		if string(again) != string(again2) {
			t.Fatalf("not stable:\n%s\n%s", again, again2)
		}
	})
}

// TestFullStatusIsFull keeps fullStatus honest: a field added to Status (or Usage, or Exit)
// that fullStatus leaves zero would go unchecked by the decoder's tests.
func TestFullStatusIsFull(t *testing.T) {
	var walk func(path string, v reflect.Value)
	walk = func(path string, v reflect.Value) {
		switch v.Kind() {
		case reflect.Struct:
			if v.Type() == reflect.TypeOf(time.Time{}) {
				break
			}
			for i := 0; i < v.NumField(); i++ {
				walk(path+"."+v.Type().Field(i).Name, v.Field(i))
			}
			return
		case reflect.Slice:
			if v.Type().Elem().Kind() == reflect.Struct {
				// Each field set in some element (an exit has a code or a signal).
				for f := 0; f < v.Type().Elem().NumField(); f++ {
					set := false
					for i := 0; i < v.Len(); i++ {
						set = set || !v.Index(i).Field(f).IsZero()
					}
					if !set {
						t.Errorf("fullStatus leaves %s.%s zero", path, v.Type().Elem().Field(f).Name)
					}
				}
				return
			}
		}
		if v.IsZero() {
			t.Errorf("fullStatus leaves %s zero", path)
		}
	}
	walk("Status", reflect.ValueOf(*fullStatus()))
}
