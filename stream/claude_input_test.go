package stream

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// driverLines returns the lines a captured stdin transcript's driver wrote (">>> ").
func driverLines(t *testing.T, name string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "claude", name))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for line := range bytes.Lines(data) {
		if l, ok := bytes.CutPrefix(line, []byte(">>> ")); ok {
			out = append(out, l)
		}
	}
	return out
}

// sameJSON fails unless got is one JSON line (ending in its newline) equal to want as JSON,
// after the paths in drop are removed from both.
func sameJSON(t *testing.T, got, want []byte, drop ...string) {
	t.Helper()
	if !bytes.HasSuffix(got, []byte("\n")) || bytes.Count(got, []byte("\n")) != 1 {
		t.Fatalf("%q: not one line", got)
	}
	var g, w map[string]any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%q: %v", got, err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	for _, p := range drop {
		deletePath(g, p)
		deletePath(w, p)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("wrote %s\nwant  %s", got, want)
	}
}

// deletePath deletes the value at a dotted path of object keys.
func deletePath(m map[string]any, path string) {
	keys := strings.Split(path, ".")
	for _, k := range keys[:len(keys)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			return
		}
		m = next
	}
	delete(m, keys[len(keys)-1])
}

// TestClaudeInputAsCaptured: the lines agt writes are those the real CLI was driven with.
func TestClaudeInputAsCaptured(t *testing.T) {
	var c ClaudeInput
	two := driverLines(t, "stdin_stream_json_two_turns_can_use_tool.txt")
	sameJSON(t, c.Prompt("USE_TOOL WRITE please make dir"), two[0])
	sameJSON(t, c.Allow("6be4c662-5643-408e-b694-297720493432",
		json.RawMessage(`{"command": "mkdir -p newdir && touch newdir/x", "description": "List files"}`), nil, false), two[1])
	intr := driverLines(t, "stdin_interrupt_control_request.txt")
	sameJSON(t, c.Prompt("USE_TOOL SLEEP now"), intr[0])
	sameJSON(t, c.Interrupt(), intr[1], "request_id") // the id is the client's to choose
}

func TestClaudeInputAnswers(t *testing.T) {
	var c ClaudeInput
	suggestions := json.RawMessage(`[{"type":"addRules","rules":[{"toolName":"Bash"}],"behavior":"allow","destination":"localSettings"}]`)
	tests := []struct {
		name string
		line []byte
		want string
	}{
		{"deny", c.Deny("r1", `no "rm" here`),
			`{"type":"control_response","response":{"subtype":"success","request_id":"r1","response":{"behavior":"deny","message":"no \"rm\" here","interrupt":false}}}`},
		{"allow once ignores the suggestions", c.Allow("r2", json.RawMessage(`{"a":1}`), suggestions, false),
			`{"type":"control_response","response":{"subtype":"success","request_id":"r2","response":{"behavior":"allow","updatedInput":{"a":1}}}}`},
		{"allow always takes them for the session only", c.Allow("r3", json.RawMessage(`{"a":1}`), suggestions, true),
			`{"type":"control_response","response":{"subtype":"success","request_id":"r3","response":{"behavior":"allow","updatedInput":{"a":1},"updatedPermissions":[{"behavior":"allow","destination":"session","rules":[{"toolName":"Bash"}],"type":"addRules"}]}}}`},
		{"allow always without suggestions", c.Allow("r4", nil, nil, true),
			`{"type":"control_response","response":{"subtype":"success","request_id":"r4","response":{"behavior":"allow","updatedInput":{}}}}`},
		{"an input that is no JSON is sent as {}", c.Allow("r5", json.RawMessage(`{"a":`), json.RawMessage(`"not a list"`), true),
			`{"type":"control_response","response":{"subtype":"success","request_id":"r5","response":{"behavior":"allow","updatedInput":{}}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { sameJSON(t, tt.line, []byte(tt.want)) })
	}
}

// TestClaudeInputInterruptIDs: every interrupt has an id of its own.
func TestClaudeInputInterruptIDs(t *testing.T) {
	var c ClaudeInput
	a, b := gjson.GetBytes(c.Interrupt(), "request_id").Str, gjson.GetBytes(c.Interrupt(), "request_id").Str
	if a != "agt-interrupt-1" || b != "agt-interrupt-2" {
		t.Fatalf("ids %q, %q", a, b)
	}
}

// FuzzClaudeInput: whatever the agent put in a request (its id, input and suggestions) and
// whatever a person typed, every line is one JSON object that says it back.
func FuzzClaudeInput(f *testing.F) {
	f.Add("req-1", []byte(`{"command":"ls"}`), []byte(`[{"destination":"localSettings"}]`), "no\nway")
	f.Add("\u2028\x00\"", []byte(`{"a":`), []byte(`[1,{"destination":2}]`), "\xff")
	f.Fuzz(func(t *testing.T, id string, input, suggestions []byte, msg string) {
		var c ClaudeInput
		for _, line := range [][]byte{c.Prompt(msg), c.Allow(id, input, suggestions, true), c.Deny(id, msg), c.Interrupt()} {
			if !bytes.HasSuffix(line, []byte("\n")) || bytes.Count(line, []byte("\n")) != 1 {
				t.Fatalf("%q: not one line", line)
			}
			if !json.Valid(line) {
				t.Fatalf("%q: not JSON", line)
			}
		}
		for _, line := range [][]byte{c.Allow(id, input, suggestions, false), c.Deny(id, msg)} {
			if got := gjson.GetBytes(line, "response.request_id").Str; utf8.ValidString(id) && got != id {
				t.Fatalf("request_id %q, want %q", got, id)
			}
		}
	})
}
