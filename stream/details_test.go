package stream

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// Tests of documented decoder details that the captured fixtures do not exercise. Each feeds a
// few hand-written lines (split by stdoutLines) and compares the events with the expected ones.

// ---- Gemini ----

// Gemini: usage comes from stats, "summed over stats.models when the totals are missing". Each
// model's input is its "input", or input_tokens minus cached on a build without "input".
func TestGeminiUsageFallsBackToStatsModels(t *testing.T) {
	ev := NewGemini().Decode(nil, []byte(`{"type":"result","status":"success","stats":{"duration_ms":9,"tool_calls":0,`+
		`"models":{"gemini-2.5-pro":{"total_tokens":1050,"input_tokens":1000,"output_tokens":50,"cached":300,"input":700},`+
		`"gemini-2.5-flash":{"total_tokens":220,"input_tokens":200,"output_tokens":20,"cached":40}}}}`))
	want := Usage{InputTokens: 700 + (200 - 40), OutputTokens: 50 + 20, CacheReadTokens: 300 + 40}
	if len(ev) != 2 || ev[1].Type != TypeResult || ev[1].Usage == nil || *ev[1].Usage != want || ev[1].DurationMS != 9 {
		t.Errorf("got %s, want usage %+v", serialize(ev), want)
	}
}

// Gemini: the top-level input is input_tokens minus cached on builds without "input".
func TestGeminiInputWithoutUncachedField(t *testing.T) {
	ev := NewGemini().Decode(nil, []byte(`{"type":"result","status":"success","stats":{"total_tokens":3060,"input_tokens":3000,"output_tokens":60,"cached":400,"duration_ms":215}}`))
	want := Usage{InputTokens: 2600, OutputTokens: 60, CacheReadTokens: 400}
	if len(ev) != 1 || ev[0].Usage == nil || *ev[0].Usage != want {
		t.Errorf("got %s, want usage %+v", serialize(ev), want)
	}
}

// Gemini: an assistant message without delta is a complete text by itself; it ends the chunked
// message under way (whose chunks come joined first, as one text), and is the result's text.
func TestGeminiCompleteAssistantMessage(t *testing.T) {
	lines := stdoutLines("", []byte(`{"type":"init","session_id":"s1","model":"gemini-2.5-flash"}
{"type":"message","role":"user","content":"hi"}
{"type":"message","role":"assistant","content":"Hel","delta":true}
{"type":"message","role":"assistant","content":"lo.","delta":true}
{"type":"message","role":"assistant","content":"Complete answer."}
{"type":"result","status":"success","stats":{"input":10,"output_tokens":2}}`))
	got := decodeAll(t, NewGemini(), lines, Exit{})
	want := []Event{
		{Type: TypeSession, SessionID: "s1", Model: "gemini-2.5-flash"},
		{Type: TypeText, Text: "Hello."},
		{Type: TypeText, Text: "Complete answer."},
		{Type: TypeResult, OK: true, Text: "Complete answer.", Usage: &Usage{InputTokens: 10, OutputTokens: 2}},
	}
	if !bytes.Equal(serialize(got), serialize(want)) {
		t.Errorf("got:\n%swant:\n%s", serialize(got), serialize(want))
	}
}

// Gemini: a chunked message is sent whole, once, when it ends at exit, before the failed result
// End writes for the turn the process left open.
func TestGeminiChunksFlushedAtExit(t *testing.T) {
	lines := stdoutLines("", []byte(`{"type":"init","session_id":"s1","model":"m"}
{"type":"message","role":"assistant","content":"Partial an","delta":true}
{"type":"message","role":"assistant","content":"swer","delta":true}`))
	got := decodeAll(t, NewGemini(), lines, Exit{Code: 0})
	want := []Event{
		{Type: TypeSession, SessionID: "s1", Model: "m"},
		{Type: TypeText, Text: "Partial answer"},
		{Type: TypeResult, Text: "agent exited with code 0 before the turn ended"},
	}
	if !bytes.Equal(serialize(got), serialize(want)) {
		t.Errorf("got:\n%swant:\n%s", serialize(got), serialize(want))
	}
}

// Gemini: an error event is a warning (fatal false) whatever its severity; like any event of
// another kind it ends the chunked message under way.
func TestGeminiErrorEventIsWarning(t *testing.T) {
	lines := stdoutLines("", []byte(`{"type":"message","role":"assistant","content":"a","delta":true}
{"type":"error","timestamp":"2026-11-22T07:33:37.465Z","severity":"error","message":"Loop detected"}`))
	got := decodeAll(t, NewGemini(), lines, Exit{})
	want := []Event{
		{Type: TypeText, Text: "a"},
		{Type: TypeError, Message: "Loop detected", Source: SourceAgent, Fatal: false},
		{Type: TypeResult, Text: "agent exited with code 0 before the turn ended"},
	}
	if !bytes.Equal(serialize(got), serialize(want)) {
		t.Errorf("got:\n%swant:\n%s", serialize(got), serialize(want))
	}
}

// Gemini: a failed tool_result without output carries the error object as its output, and the
// tool name of its tool_use.
func TestGeminiToolResultErrorObject(t *testing.T) {
	lines := stdoutLines("", []byte(`{"type":"tool_use","tool_name":"read_file","tool_id":"read_file__read_file_1_0","parameters":{"path":"x"}}
{"type":"tool_result","tool_id":"read_file__read_file_1_0","status":"error","error":{"type":"file_not_found","message":"no such file"}}`))
	d := NewGemini()
	got := d.Decode(nil, lines[0])
	got = d.Decode(got, lines[1])
	want := []Event{
		{Type: TypeToolUse, ID: "read_file__read_file_1_0", Tool: "read_file", Input: json.RawMessage(`{"path":"x"}`)},
		{Type: TypeToolResult, ID: "read_file__read_file_1_0", Tool: "read_file", OK: false, Output: json.RawMessage(`{"type":"file_not_found","message":"no such file"}`)},
	}
	if !bytes.Equal(serialize(got), serialize(want)) {
		t.Errorf("got:\n%swant:\n%s", serialize(got), serialize(want))
	}
}

// Gemini: End names what Gemini's exit code stands for: 41 authentication, and API errors exit
// with their HTTP status mod 256 (400 → 144, the lowest such code).
func TestGeminiExitMeaningDocumentedCodes(t *testing.T) {
	for _, tc := range []struct {
		code int
		want string
	}{
		{41, "agent exited with code 41 (authentication failed) before the turn ended"},
		{144, "agent exited with code 144 (API error, HTTP status 400) before the turn ended"},
	} {
		ev, _ := NewGemini().End(nil, Exit{Code: tc.code})
		if len(ev) != 1 || ev[0].Text != tc.want {
			t.Errorf("exit %d: got %s, want text %q", tc.code, serialize(ev), tc.want)
		}
	}
}

// ---- opencode ----

// opencodeTurn is one finished step of a turn, text included.
const opencodeTurn = `{"type":"step_start","sessionID":"ses_1","part":{"type":"step-start"}}
{"type":"text","sessionID":"ses_1","part":{"type":"text","text":"first"}}
{"type":"step_finish","sessionID":"ses_1","part":{"type":"step-finish","reason":"tool-calls","cost":0.5,"tokens":{"input":100,"output":10,"reasoning":5,"cache":{"read":20,"write":30}}}}`

const opencodeDone = `{"type":"done","sessionID":"ses_1","reason":"idle","rejected":[]}`

// opencode: done (newer builds) is the turn's result, written at the done line with the turn's
// sums; End then has nothing left to write, whatever the exit.
func TestOpencodeDoneWritesResult(t *testing.T) {
	d := NewOpencode()
	for _, l := range stdoutLines("", []byte(opencodeTurn)) {
		d.Decode(nil, l)
	}
	cost := 0.5
	want := []Event{{Type: TypeResult, OK: true, Text: "first", Steps: 1, CostUSD: &cost,
		Usage: &Usage{InputTokens: 100, OutputTokens: 15, CacheReadTokens: 20, CacheWriteTokens: 30}}}
	if got := d.Decode(nil, []byte(opencodeDone)); !bytes.Equal(serialize(got), serialize(want)) {
		t.Errorf("done gave:\n%swant:\n%s", serialize(got), serialize(want))
	}
	if got, _ := d.End(nil, Exit{Code: -1, Signal: "SIGTERM"}); len(got) != 0 {
		t.Errorf("End after done gave %s, want nothing", serialize(got))
	}
}

// opencode: a done with no turn open (a second done) writes nothing.
func TestOpencodeDoneWithoutOpenTurn(t *testing.T) {
	lines := stdoutLines("", []byte(opencodeTurn+"\n"+opencodeDone+"\n"+opencodeDone))
	got := decodeAll(t, NewOpencode(), lines, Exit{})
	results := 0
	for _, e := range got {
		if e.Type == TypeResult {
			results++
		}
	}
	if results != 1 {
		t.Errorf("got %d results, want 1:\n%s", results, serialize(got))
	}
}

// opencode: after done, the next event starts a new turn of the same process with fresh sums;
// without a done of its own, End writes its result.
func TestOpencodeNewTurnAfterDone(t *testing.T) {
	lines := stdoutLines("", []byte(opencodeTurn+"\n"+opencodeDone+`
{"type":"step_start","sessionID":"ses_1","part":{"type":"step-start"}}
{"type":"text","sessionID":"ses_1","part":{"type":"text","text":"second"}}
{"type":"step_finish","sessionID":"ses_1","part":{"type":"step-finish","reason":"stop","cost":0.25,"tokens":{"input":7,"output":1,"reasoning":0,"cache":{"read":0,"write":0}}}}`))
	got := decodeAll(t, NewOpencode(), lines, Exit{})
	first, second := 0.5, 0.25
	want := []Event{
		{Type: TypeSession, SessionID: "ses_1"},
		{Type: TypeText, Text: "first"},
		{Type: TypeResult, OK: true, Text: "first", Steps: 1, CostUSD: &first,
			Usage: &Usage{InputTokens: 100, OutputTokens: 15, CacheReadTokens: 20, CacheWriteTokens: 30}},
		{Type: TypeText, Text: "second"},
		{Type: TypeResult, OK: true, Text: "second", Steps: 1, CostUSD: &second, Usage: &Usage{InputTokens: 7, OutputTokens: 1}},
	}
	if !bytes.Equal(serialize(got), serialize(want)) {
		t.Errorf("got:\n%swant:\n%s", serialize(got), serialize(want))
	}
}

// opencode: a done after an error event writes a failed result with the error's text.
func TestOpencodeDoneAfterError(t *testing.T) {
	d := NewOpencode()
	d.Decode(nil, []byte(`{"type":"step_start","sessionID":"ses_1","part":{"type":"step-start"}}`))
	d.Decode(nil, []byte(`{"type":"error","sessionID":"ses_1","error":{"name":"APIError","data":{"message":"boom"}}}`))
	want := []Event{{Type: TypeResult, OK: false, Text: "APIError: boom", Usage: &Usage{}}}
	if got := d.Decode(nil, []byte(opencodeDone)); !bytes.Equal(serialize(got), serialize(want)) {
		t.Errorf("done gave:\n%swant:\n%s", serialize(got), serialize(want))
	}
}

// opencode without done: End writes the result, ok when no error came and either the last step
// finished with reason stop or the process exited 0.
func TestOpencodeEndResultOK(t *testing.T) {
	const start = `{"type":"step_start","sessionID":"ses_1","part":{"type":"step-start"}}`
	const stop = `{"type":"step_finish","sessionID":"ses_1","part":{"type":"step-finish","reason":"stop","tokens":{"input":1}}}`
	const toolCalls = `{"type":"step_finish","sessionID":"ses_1","part":{"type":"step-finish","reason":"tool-calls","tokens":{"input":1}}}`
	const failure = `{"type":"error","sessionID":"ses_1","error":{"name":"APIError","data":{"message":"boom"}}}`
	for _, tc := range []struct {
		name     string
		lines    string
		exit     Exit
		ok       bool
		wantText string
	}{
		{"last step stop, killed afterwards", start + "\n" + stop, Exit{Code: -1, Signal: "SIGTERM"}, true, ""},
		{"last step tool-calls, exit 0", start + "\n" + toolCalls, Exit{}, true, ""},
		{"final step_finish missing, exit 0", start, Exit{}, true, ""},
		{"last step tool-calls, exit 1", start + "\n" + toolCalls, Exit{Code: 1}, false, "agent exited with code 1 before the turn ended"},
		{"error, exit 0", start + "\n" + stop + "\n" + failure, Exit{}, false, "APIError: boom"},
	} {
		got := decodeAll(t, NewOpencode(), stdoutLines("", []byte(tc.lines)), tc.exit)
		last := got[len(got)-1]
		if last.Type != TypeResult || last.OK != tc.ok || last.Text != tc.wantText {
			t.Errorf("%s: got %s, want ok %v text %q", tc.name, last.AppendJSON(nil), tc.ok, tc.wantText)
		}
	}
}

// opencode: cost and tokens are sums over the turn's steps; reasoning tokens count as output;
// cost is null when no step reported one; steps counts the step_finish events.
func TestOpencodeStepSums(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines string
		cost  string // "null" or the number
		usage Usage
		steps int
	}{
		{"two steps, one without cost", `{"type":"step_finish","sessionID":"ses_1","part":{"reason":"tool-calls","cost":0.5,"tokens":{"input":100,"output":10,"reasoning":5,"cache":{"read":20,"write":30}}}}
{"type":"step_finish","sessionID":"ses_1","part":{"reason":"stop","tokens":{"input":7,"output":1,"reasoning":2,"cache":{"read":3,"write":4}}}}`,
			"0.5", Usage{InputTokens: 107, OutputTokens: 18, CacheReadTokens: 23, CacheWriteTokens: 34}, 2},
		{"two steps with cost", `{"type":"step_finish","sessionID":"ses_1","part":{"reason":"tool-calls","cost":0.5,"tokens":{"input":1}}}
{"type":"step_finish","sessionID":"ses_1","part":{"reason":"stop","cost":0.25,"tokens":{"input":1}}}`,
			"0.75", Usage{InputTokens: 2}, 2},
		{"no step reported a cost", `{"type":"step_finish","sessionID":"ses_1","part":{"reason":"stop","tokens":{"input":1,"output":2}}}`,
			"null", Usage{InputTokens: 1, OutputTokens: 2}, 1},
	} {
		got := decodeAll(t, NewOpencode(), stdoutLines("", []byte(tc.lines)), Exit{})
		last := got[len(got)-1]
		cost := "null"
		if last.CostUSD != nil {
			cost = strconv.FormatFloat(*last.CostUSD, 'g', -1, 64)
		}
		if last.Type != TypeResult || cost != tc.cost || *last.Usage != tc.usage || last.Steps != tc.steps {
			t.Errorf("%s: got %s, want cost %s usage %+v steps %d", tc.name, last.AppendJSON(nil), tc.cost, tc.usage, tc.steps)
		}
	}
}

// opencode: a pending or running tool part gives the tool_use alone; its completion then gives
// the tool_result without a second tool_use.
func TestOpencodeRunningToolPart(t *testing.T) {
	lines := stdoutLines("", []byte(`{"type":"tool_use","sessionID":"ses_1","part":{"type":"tool","tool":"bash","callID":"call_1","state":{"status":"running","input":{"command":"sleep 1"}}}}
{"type":"tool_use","sessionID":"ses_1","part":{"type":"tool","tool":"bash","callID":"call_1","state":{"status":"completed","input":{"command":"sleep 1"},"output":"done"}}}`))
	d := NewOpencode()
	var got []Event
	for _, l := range lines {
		got = d.Decode(got, l)
	}
	want := []Event{
		{Type: TypeSession, SessionID: "ses_1"},
		{Type: TypeToolUse, ID: "call_1", Tool: "bash", Input: json.RawMessage(`{"command":"sleep 1"}`)},
		{Type: TypeToolResult, ID: "call_1", Tool: "bash", OK: true, Output: json.RawMessage(`"done"`)},
	}
	if !bytes.Equal(serialize(got), serialize(want)) {
		t.Errorf("got:\n%swant:\n%s", serialize(got), serialize(want))
	}
}

// opencode: sessionID on every line gives a session event when it first appears or changes.
func TestOpencodeSessionChange(t *testing.T) {
	lines := stdoutLines("", []byte(`{"type":"step_start","sessionID":"ses_1","part":{"type":"step-start"}}
{"type":"step_start","sessionID":"ses_1","part":{"type":"step-start"}}
{"type":"step_start","sessionID":"ses_2","part":{"type":"step-start"}}`))
	d := NewOpencode()
	var got []Event
	for _, l := range lines {
		got = d.Decode(got, l)
	}
	want := []Event{{Type: TypeSession, SessionID: "ses_1"}, {Type: TypeSession, SessionID: "ses_2"}}
	if !bytes.Equal(serialize(got), serialize(want)) {
		t.Errorf("got:\n%swant:\n%s", serialize(got), serialize(want))
	}
}

// ---- Codex ----

// Codex: the cumulative input_tokens counts cached tokens (and cache writes): the event's input
// is the uncached part; cached and written tokens have counters of their own; reasoning tokens
// are already in output_tokens.
func TestCodexUsageFields(t *testing.T) {
	ev := NewCodex().Decode(nil, []byte(`{"type":"turn.completed","usage":{"input_tokens":4000,"cached_input_tokens":1000,"cache_write_input_tokens":500,"output_tokens":240,"reasoning_output_tokens":128}}`))
	want := Usage{InputTokens: 2500, OutputTokens: 240, CacheReadTokens: 1000, CacheWriteTokens: 500}
	if len(ev) != 1 || ev[0].Usage == nil || *ev[0].Usage != want {
		t.Errorf("got %s, want usage %+v", serialize(ev), want)
	}
}

// Codex: the totals are kept per thread: a turn reports the difference from the previous
// turn.completed of the same thread, even with another thread in between; a thread seen for the
// first time reports its whole total.
func TestCodexUsagePerThread(t *testing.T) {
	d := NewCodex() // one decoder for all the turns, one process per turn
	for i, tc := range []struct {
		thread, usage string
		want          Usage
	}{
		{"thread-a", `{"input_tokens":1000,"cached_input_tokens":200,"output_tokens":50}`, Usage{InputTokens: 800, OutputTokens: 50, CacheReadTokens: 200}},
		{"thread-b", `{"input_tokens":300,"cached_input_tokens":0,"output_tokens":10}`, Usage{InputTokens: 300, OutputTokens: 10}},
		{"thread-a", `{"input_tokens":1600,"cached_input_tokens":300,"output_tokens":80}`, Usage{InputTokens: 500, OutputTokens: 30, CacheReadTokens: 100}},
		{"thread-b", `{"input_tokens":400,"cached_input_tokens":50,"output_tokens":15}`, Usage{InputTokens: 50, OutputTokens: 5, CacheReadTokens: 50}},
	} {
		lines := [][]byte{
			[]byte(`{"type":"thread.started","thread_id":"` + tc.thread + `"}`),
			[]byte(`{"type":"turn.started"}`),
			[]byte(`{"type":"turn.completed","usage":` + tc.usage + `}`),
		}
		ev := decodeAll(t, d, lines, Exit{})
		last := ev[len(ev)-1]
		if last.Type != TypeResult || *last.Usage != tc.want {
			t.Errorf("turn %d (%s): got %s, want usage %+v", i+1, tc.thread, last.AppendJSON(nil), tc.want)
		}
	}
}

// Codex: the per-turn figure is the difference from the previous cumulative total of the thread
// when no counter shrank; when any counter shrank the cumulative figures started over and the
// turn reports the new total whole. The first total is 700 uncached input (1000 with 200 cached
// and 100 written), 50 output, 200 cached, 100 written.
func TestCodexUsageStartsOver(t *testing.T) {
	const first = `{"type":"turn.completed","usage":{"input_tokens":1000,"cached_input_tokens":200,"cache_write_input_tokens":100,"output_tokens":50}}`
	for _, tc := range []struct {
		name, usage string
		want        Usage
	}{
		{"every counter grew: the difference", `{"input_tokens":1500,"cached_input_tokens":300,"cache_write_input_tokens":150,"output_tokens":80}`,
			Usage{InputTokens: 350, OutputTokens: 30, CacheReadTokens: 100, CacheWriteTokens: 50}},
		{"nothing changed: zero", `{"input_tokens":1000,"cached_input_tokens":200,"cache_write_input_tokens":100,"output_tokens":50}`,
			Usage{}},
		{"only output shrank: the new total", `{"input_tokens":1500,"cached_input_tokens":300,"cache_write_input_tokens":150,"output_tokens":40}`,
			Usage{InputTokens: 1050, OutputTokens: 40, CacheReadTokens: 300, CacheWriteTokens: 150}},
		{"only cache writes shrank: the new total", `{"input_tokens":1500,"cached_input_tokens":300,"cache_write_input_tokens":0,"output_tokens":80}`,
			Usage{InputTokens: 1200, OutputTokens: 80, CacheReadTokens: 300}},
		{"everything shrank: the new total", `{"input_tokens":100,"cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":5}`,
			Usage{InputTokens: 100, OutputTokens: 5}},
	} {
		lines := [][]byte{
			[]byte(`{"type":"thread.started","thread_id":"t"}`),
			[]byte(first),
			[]byte(`{"type":"turn.completed","usage":` + tc.usage + `}`),
		}
		ev := decodeAll(t, NewCodex(), lines, Exit{})
		last := ev[len(ev)-1]
		if last.Type != TypeResult || *last.Usage != tc.want {
			t.Errorf("%s: got %s, want usage %+v", tc.name, last.AppendJSON(nil), tc.want)
		}
	}
}

// Codex: each tool item has its own tool name, input and output. command_execution is
// "command" with input {"command"} and the aggregated output as a string, ok only when the exit
// code is 0 and the status completed; file_change lists its changes and says what they did;
// mcp_tool_call is "<server>.<tool>" with the arguments, and the text of its result or its
// error; web_search gives its query, once it knows it, and its action; collab_tool_call keeps
// the item as sent.
func TestCodexToolItems(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines string
		want  []Event
	}{
		{"command, completed", `{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"ls","aggregated_output":"","exit_code":null,"status":"in_progress"}}
{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"ls","aggregated_output":"a.txt\n","exit_code":0,"status":"completed"}}`, []Event{
			{Type: TypeToolUse, ID: "item_1", Tool: "command", Input: json.RawMessage(`{"command":"ls"}`)},
			{Type: TypeToolResult, ID: "item_1", Tool: "command", OK: true, Output: json.RawMessage(`"a.txt\n"`)},
		}},
		{"command, exit code 0 but declined", `{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"rm -rf /","aggregated_output":"","exit_code":0,"status":"declined"}}`, []Event{
			{Type: TypeToolUse, ID: "item_1", Tool: "command", Input: json.RawMessage(`{"command":"rm -rf /"}`)},
			{Type: TypeToolResult, ID: "item_1", Tool: "command", OK: false, Output: json.RawMessage(`""`)},
		}},
		{"command, completed without exit code", `{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"x","aggregated_output":"o","status":"completed"}}`, []Event{
			{Type: TypeToolUse, ID: "item_1", Tool: "command", Input: json.RawMessage(`{"command":"x"}`)},
			{Type: TypeToolResult, ID: "item_1", Tool: "command", OK: false, Output: json.RawMessage(`"o"`)},
		}},
		{"file_change", `{"type":"item.started","item":{"id":"item_2","type":"file_change","changes":[{"path":"/r/hello.txt","kind":"add"},{"path":"/r/src/b.go","kind":"update","diff":"@@"}],"status":"in_progress"}}
{"type":"item.completed","item":{"id":"item_2","type":"file_change","changes":[{"path":"/r/hello.txt","kind":"add"},{"path":"/r/src/b.go","kind":"update","diff":"@@"}],"status":"completed"}}`, []Event{
			{Type: TypeToolUse, ID: "item_2", Tool: "file_change", Input: json.RawMessage(`{"changes":[{"path":"/r/hello.txt","kind":"add"},{"path":"/r/src/b.go","kind":"update"}]}`)},
			{Type: TypeToolResult, ID: "item_2", Tool: "file_change", OK: true, Output: json.RawMessage(`"add hello.txt, update b.go"`)},
		}},
		{"file_change failed", `{"type":"item.completed","item":{"id":"item_2","type":"file_change","changes":[{"path":"/r/x","kind":"delete"}],"status":"failed"}}`, []Event{
			{Type: TypeToolUse, ID: "item_2", Tool: "file_change", Input: json.RawMessage(`{"changes":[{"path":"/r/x","kind":"delete"}]}`)},
			{Type: TypeToolResult, ID: "item_2", Tool: "file_change", OK: false, Output: json.RawMessage(`"delete x"`)},
		}},
		{"mcp_tool_call", `{"type":"item.started","item":{"id":"item_4","type":"mcp_tool_call","server":"github","tool":"search_issues","arguments":{"q":"is:open"},"status":"in_progress"}}
{"type":"item.completed","item":{"id":"item_4","type":"mcp_tool_call","server":"github","tool":"search_issues","arguments":{"q":"is:open"},"result":{"content":[{"type":"text","text":"3 issues"},{"type":"image","data":"…"},{"type":"text","text":"done"}],"structured_content":null},"status":"completed"}}`, []Event{
			{Type: TypeToolUse, ID: "item_4", Tool: "github.search_issues", Input: json.RawMessage(`{"q":"is:open"}`)},
			{Type: TypeToolResult, ID: "item_4", Tool: "github.search_issues", OK: true, Output: json.RawMessage(`"3 issues\ndone"`)},
		}},
		{"mcp_tool_call failed", `{"type":"item.completed","item":{"id":"item_4","type":"mcp_tool_call","server":"github","tool":"search_issues","arguments":{},"error":{"message":"server gone"},"status":"failed"}}`, []Event{
			{Type: TypeToolUse, ID: "item_4", Tool: "github.search_issues", Input: json.RawMessage(`{}`)},
			{Type: TypeToolResult, ID: "item_4", Tool: "github.search_issues", OK: false, Output: json.RawMessage(`"server gone"`)},
		}},
		{"web_search starts twice, the first without its query", `{"type":"item.started","item":{"id":"item_1","type":"web_search","id":"ws_15","query":"","action":{"type":"other"}}}
{"type":"item.started","item":{"id":"item_1","type":"web_search","id":"ws_15","query":"golang ndjson","action":{"type":"search","query":"golang ndjson"}}}
{"type":"item.completed","item":{"id":"item_1","type":"web_search","id":"ws_15","query":"golang ndjson","action":{"type":"search","query":"golang ndjson"}}}`, []Event{
			{Type: TypeToolUse, ID: "item_1", Tool: "web_search", Input: json.RawMessage(`{"query":"golang ndjson"}`)},
			{Type: TypeToolResult, ID: "item_1", Tool: "web_search", OK: true, Output: json.RawMessage(`{"type":"search","query":"golang ndjson"}`)},
		}},
		{"collab_tool_call", `{"type":"item.started","item":{"id":"item_5","type":"collab_tool_call","tool":"spawn_agent","prompt":"p","status":"in_progress"}}
{"type":"item.completed","item":{"id":"item_5","type":"collab_tool_call","tool":"spawn_agent","prompt":"p","status":"completed"}}`, []Event{
			{Type: TypeToolUse, ID: "item_5", Tool: "spawn_agent", Input: json.RawMessage(`{"id":"item_5","type":"collab_tool_call","tool":"spawn_agent","prompt":"p","status":"in_progress"}`)},
			{Type: TypeToolResult, ID: "item_5", Tool: "spawn_agent", OK: true, Output: json.RawMessage(`{"id":"item_5","type":"collab_tool_call","tool":"spawn_agent","prompt":"p","status":"completed"}`)},
		}},
	} {
		d := NewCodex()
		var got []Event
		for _, l := range stdoutLines("", []byte(tc.lines)) {
			got = d.Decode(got, l)
		}
		if !bytes.Equal(serialize(got), serialize(tc.want)) {
			t.Errorf("%s: got:\n%swant:\n%s", tc.name, serialize(got), serialize(tc.want))
		}
	}
}

// ---- Claude ----

// Claude: the turn's cost is the sum of model_usage_since_last_result[*].costUSD; without that
// field it is total_cost_usd minus the previous result's, total_cost_usd being cumulative per
// process. Each case is a list of processes decoded in turn by one decoder; want lists the
// results' costs.
func TestClaudeTurnCost(t *testing.T) {
	for _, tc := range []struct {
		name      string
		processes []string
		want      string
	}{
		{"summed over the models of model_usage_since_last_result, not total_cost_usd", []string{
			`{"type":"result","subtype":"success","is_error":false,"total_cost_usd":9,"model_usage_since_last_result":{"claude-sonnet-4-5":{"costUSD":0.5},"claude-haiku-4-5":{"costUSD":0.25}}}`},
			"0.75"},
		{"an empty model_usage_since_last_result sums to zero", []string{
			`{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0.5,"model_usage_since_last_result":{}}`},
			"0"},
		{"the total of a result with model_usage_since_last_result counts as the previous one", []string{
			`{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0.5,"model_usage_since_last_result":{"m":{"costUSD":0.5}}}
{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0.75}`},
			"0.5 0.25"},
		{"a result without a total keeps the previous total", []string{
			`{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0.5}
{"type":"result","subtype":"success","is_error":false}
{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0.75}`},
			"0.5 null 0.25"},
		{"a total lower than the previous one is taken whole", []string{
			`{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0.75}
{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0.25}`},
			"0.75 0.25"},
		{"the next process's first total is taken whole", []string{
			`{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0.5}`,
			`{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0.75}`},
			"0.5 0.75"},
	} {
		d := NewClaude()
		var costs []string
		for _, p := range tc.processes {
			for _, e := range decodeAll(t, d, stdoutLines("", []byte(p)), Exit{}) {
				switch {
				case e.Type != TypeResult:
				case e.CostUSD == nil:
					costs = append(costs, "null")
				default:
					costs = append(costs, strconv.FormatFloat(*e.CostUSD, 'g', -1, 64))
				}
			}
		}
		if got := strings.Join(costs, " "); got != tc.want {
			t.Errorf("%s: costs %s, want %s", tc.name, got, tc.want)
		}
	}
}

// Claude: the turn's tokens are model_usage_since_last_result summed over models (it counts
// subagents) when it names any, else result.usage (main loop only).
func TestClaudeTurnTokens(t *testing.T) {
	const usage = `"usage":{"input_tokens":10,"output_tokens":2,"cache_read_input_tokens":3,"cache_creation_input_tokens":4}`
	for _, tc := range []struct {
		name, line string
		want       Usage
	}{
		{"summed over the models of model_usage_since_last_result",
			`{"type":"result","subtype":"success","is_error":false,` + usage + `,"model_usage_since_last_result":{` +
				`"claude-sonnet-4-5":{"inputTokens":1000,"outputTokens":100,"cacheReadInputTokens":300,"cacheCreationInputTokens":40,"costUSD":0.5},` +
				`"claude-haiku-4-5":{"inputTokens":200,"outputTokens":20,"cacheReadInputTokens":30,"cacheCreationInputTokens":4,"costUSD":0.25}}}`,
			Usage{InputTokens: 1200, OutputTokens: 120, CacheReadTokens: 330, CacheWriteTokens: 44}},
		{"an empty model_usage_since_last_result names no model: result.usage",
			`{"type":"result","subtype":"success","is_error":false,` + usage + `,"model_usage_since_last_result":{}}`,
			Usage{InputTokens: 10, OutputTokens: 2, CacheReadTokens: 3, CacheWriteTokens: 4}},
	} {
		ev := NewClaude().Decode(nil, []byte(tc.line))
		if len(ev) != 1 || ev[0].Type != TypeResult || *ev[0].Usage != tc.want {
			t.Errorf("%s: got %s, want usage %+v", tc.name, serialize(ev), tc.want)
		}
	}
}

// Claude: system/init gives a session only when the session, model or cwd changed (stdin mode
// repeats init at every turn).
func TestClaudeSessionOnlyWhenInitChanges(t *testing.T) {
	lines := stdoutLines("", []byte(`{"type":"system","subtype":"init","session_id":"s1","model":"m1","cwd":"/a"}
{"type":"system","subtype":"init","session_id":"s1","model":"m1","cwd":"/a"}
{"type":"system","subtype":"init","session_id":"s1","model":"m2","cwd":"/a"}
{"type":"system","subtype":"init","session_id":"s1","model":"m2","cwd":"/b"}
{"type":"system","subtype":"init","session_id":"s2","model":"m2","cwd":"/b"}`))
	d := NewClaude()
	var got []Event
	for _, l := range lines {
		got = d.Decode(got, l)
	}
	want := []Event{
		{Type: TypeSession, SessionID: "s1", Model: "m1", Cwd: "/a"},
		{Type: TypeSession, SessionID: "s1", Model: "m2", Cwd: "/a"},
		{Type: TypeSession, SessionID: "s1", Model: "m2", Cwd: "/b"},
		{Type: TypeSession, SessionID: "s2", Model: "m2", Cwd: "/b"},
	}
	if !bytes.Equal(serialize(got), serialize(want)) {
		t.Errorf("got:\n%swant:\n%s", serialize(got), serialize(want))
	}
}

// Claude: server and MCP tool blocks are tools too; a server tool result reports failure as a
// content block of type *_error.
func TestClaudeServerAndMCPToolBlocks(t *testing.T) {
	line := []byte(`{"type":"assistant","message":{"content":[` +
		`{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"q"}},` +
		`{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":{"type":"web_search_tool_result_error","error_code":"max_uses_exceeded"}},` +
		`{"type":"server_tool_use","id":"srvtoolu_2","name":"web_search","input":{"query":"r"}},` +
		`{"type":"web_search_tool_result","tool_use_id":"srvtoolu_2","content":[{"type":"web_search_result","url":"https://example.com"}]},` +
		`{"type":"mcp_tool_use","id":"mcptoolu_1","name":"search_issues","server_name":"github","input":{}}]}}`)
	got := NewClaude().Decode(nil, line)
	want := []Event{
		{Type: TypeToolUse, ID: "srvtoolu_1", Tool: "web_search", Input: json.RawMessage(`{"query":"q"}`)},
		{Type: TypeToolResult, ID: "srvtoolu_1", Tool: "web_search", OK: false, Output: json.RawMessage(`{"type":"web_search_tool_result_error","error_code":"max_uses_exceeded"}`)},
		{Type: TypeToolUse, ID: "srvtoolu_2", Tool: "web_search", Input: json.RawMessage(`{"query":"r"}`)},
		{Type: TypeToolResult, ID: "srvtoolu_2", Tool: "web_search", OK: true, Output: json.RawMessage(`[{"type":"web_search_result","url":"https://example.com"}]`)},
		{Type: TypeToolUse, ID: "mcptoolu_1", Tool: "search_issues", Input: json.RawMessage(`{}`)},
	}
	if !bytes.Equal(serialize(got), serialize(want)) {
		t.Errorf("got:\n%swant:\n%s", serialize(got), serialize(want))
	}
}

// Claude: control requests other than can_use_tool are skipped.
func TestClaudeOtherControlRequestsSkipped(t *testing.T) {
	got := NewClaude().Decode(nil, []byte(`{"type":"control_request","request_id":"r1","request":{"subtype":"hook_callback","callback_id":"c1","input":{}}}`))
	if len(got) != 0 {
		t.Errorf("got %s, want nothing", serialize(got))
	}
}

// Claude: is_error decides a result; subtype only when is_error is absent.
func TestClaudeResultOKFromSubtype(t *testing.T) {
	for line, ok := range map[string]bool{
		`{"type":"result","subtype":"success","result":"done"}`:                 true,
		`{"type":"result","subtype":"error_max_turns"}`:                         false,
		`{"type":"result","subtype":"success","is_error":true,"result":"401"}`:  false,
		`{"type":"result","subtype":"error_during_execution","is_error":false}`: true,
	} {
		ev := NewClaude().Decode(nil, []byte(line))
		last := ev[len(ev)-1]
		if last.Type != TypeResult || last.OK != ok {
			t.Errorf("%s: got %s, want a result with ok %v", line, serialize(ev), ok)
		}
	}
}

// A request answered through the control protocol is logged by whoever answers it: the denial
// that the result's permission_denials repeats is no second permission event. Each line is
// decoded from one buffer, overwritten once decoded, as the supervisor reads them: what the
// decoder keeps must be its own copy.
func TestClaudeAnsweredDenialOnce(t *testing.T) {
	d := NewClaude()
	var evs []Event
	var buf []byte
	for _, line := range []string{
		`{"type":"control_request","request_id":"req-1","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"rm x"},"tool_use_id":"toolu_1"}}`,
		`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","is_error":true,"content":"no"}]}}`,
		`{"type":"result","subtype":"success","is_error":false,"result":"ok","permission_denials":[{"tool_name":"Bash","tool_use_id":"toolu_1","tool_input":{"command":"rm x"}},{"tool_name":"Edit","tool_use_id":"toolu_2","tool_input":{}}],"session_id":"s"}`,
	} {
		buf = append(buf[:0], line...)
		evs = d.Decode(evs, buf)
		for i := range buf {
			buf[i] = '0'
		}
	}
	var ids []string
	for _, ev := range evs {
		if ev.Type == TypePermission {
			ids = append(ids, ev.ID+"/"+ev.Decision)
		}
	}
	if got := strings.Join(ids, " "); got != "req-1/ toolu_2/deny" {
		t.Errorf("permission events %q, want the request, and the denial nobody answered", got)
	}
}
