package stream

import (
	"testing"
)

// One rule matches the same tool whatever the agent: each agent's call normalised.
func TestACPToolsNormalised(t *testing.T) {
	for _, tt := range []struct {
		name, call, tool, input string
	}{
		{"claude names its tool", `{"toolCallId":"t","name":"Bash","kind":"execute","title":"mkdir a","status":"in_progress","rawInput":{"command":"mkdir a"}}`,
			"Bash", `{"command":"mkdir a"}`},
		{"claude's name in _meta", `{"toolCallId":"t","_meta":{"claudeCode":{"toolName":"Write"}},"kind":"edit","title":"Write a","status":"in_progress","rawInput":{"file_path":"/w/a","content":"x"}}`,
			"Write", `{"file_path":"/w/a","content":"x"}`},
		{"gemini: a kind and the command as title", `{"toolCallId":"t","kind":"execute","title":"mkdir a","status":"in_progress"}`,
			"Bash", `{"command":"mkdir a"}`},
		{"gemini: an edit by its location", `{"toolCallId":"t","kind":"edit","title":"Writing to a","status":"in_progress","locations":[{"path":"/w/a"}]}`,
			"Edit", `{"file_path":"/w/a"}`},
		{"opencode: its own input", `{"toolCallId":"t","kind":"execute","title":"mkdir a","status":"in_progress","rawInput":{"command":"mkdir a","cwd":"/w"}}`,
			"Bash", `{"command":"mkdir a","cwd":"/w"}`},
		{"opencode: filePath", `{"toolCallId":"t","kind":"edit","title":"a","status":"in_progress","rawInput":{"filePath":"/w/a","oldString":"x"}}`,
			"Edit", `{"file_path":"/w/a","filePath":"/w/a","oldString":"x"}`},
		{"a fetch", `{"toolCallId":"t","kind":"fetch","title":"https://x","status":"in_progress","rawInput":{"url":"https://x"}}`,
			"WebFetch", `{"url":"https://x"}`},
		{"an unknown kind: its title", `{"toolCallId":"t","kind":"other","title":"frobnicate","status":"in_progress"}`,
			"frobnicate", `{"title":"frobnicate"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ev, _ := acpLines(t, NewACP("agt", "test"), sessionUpdate(`{"sessionUpdate":"tool_call",`+tt.call[1:]))
			if len(ev) != 1 || ev[0].Type != TypeToolUse || ev[0].Tool != tt.tool || string(ev[0].Input) != tt.input {
				t.Errorf("events %s\nwant tool %s input %s", serialize(ev), tt.tool, tt.input)
			}
		})
	}
}

// A finished call's output is text, however the agent sent it.
func TestACPToolOutputText(t *testing.T) {
	for _, tt := range []struct{ name, update, output string }{
		{"a string", `"rawOutput":"done"`, `"done"`},
		{"opencode's object", `"rawOutput":{"output":"a.txt\n","metadata":{"exit":0}}`, `"a.txt\n"`},
		{"content blocks", `"content":[{"type":"content","content":{"type":"text","text":"a"}},{"type":"diff","path":"/w/b","newText":"x"}]`, `"a\ndiff /w/b"`},
		{"gemini's empty content", `"content":[]`, `""`},
		{"an object of its own", `"rawOutput":{"n":1}`, `"{\"n\":1}"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ev, _ := acpLines(t, NewACP("agt", "test"),
				sessionUpdate(`{"sessionUpdate":"tool_call","toolCallId":"t","kind":"execute","title":"ls","status":"in_progress"}`),
				sessionUpdate(`{"sessionUpdate":"tool_call_update","toolCallId":"t","status":"completed",`+tt.update+`}`))
			if len(ev) != 2 || ev[1].Type != TypeToolResult || string(ev[1].Output) != tt.output {
				t.Errorf("events %s\nwant output %s", serialize(ev), tt.output)
			}
		})
	}
}

// claude-agent-acp announces a call pending and sends its input without a status: the call runs
// from then on, so the state machine's doing names it while it runs.
func TestACPToolStartsWithItsInput(t *testing.T) {
	ev, _ := acpLines(t, NewACP("agt", "test"),
		sessionUpdate(`{"sessionUpdate":"tool_call","toolCallId":"t","name":"Bash","kind":"execute","title":"Terminal","status":"pending","rawInput":{}}`),
		sessionUpdate(`{"sessionUpdate":"tool_call_update","toolCallId":"t","rawInput":{"command":"make"},"title":"make"}`))
	if len(ev) != 1 || ev[0].Type != TypeToolUse || string(ev[0].Input) != `{"command":"make"}` {
		t.Fatalf("events %s: want the tool_use once its input came", serialize(ev))
	}
	m := Machine{Mode: Turns, InputOpen: true}
	s := m.Event(Snapshot{State: Running}, &ev[0], ev[0].TS)
	if s.Doing != "Bash" {
		t.Errorf("doing %q while the tool runs", s.Doing)
	}
}
