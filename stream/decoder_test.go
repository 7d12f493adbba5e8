package stream

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("u", false, "rewrite the golden files of the decoder tests")

// formats are the JSON-lines decoders under test, each with its fixtures in testdata/<name>.
var formats = []struct {
	name string
	new  func() Decoder
}{
	{"claude", NewClaude},
	{"codex", NewCodex},
	{"opencode", NewOpencode},
	{"gemini", NewGemini},
}

// fixtures lists the captures of one agent: JSON lines (.jsonl), a single JSON document (.json)
// and stdin transcripts (.txt, but not EXIT_CODES.txt).
func fixtures(t testing.TB, agent string) []string {
	t.Helper()
	var files []string
	for _, pattern := range []string{"*.jsonl", "*.json", "*.txt"} {
		m, err := filepath.Glob(filepath.Join("testdata", agent, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m {
			if filepath.Base(f) != "EXIT_CODES.txt" {
				files = append(files, f)
			}
		}
	}
	if len(files) == 0 {
		t.Fatalf("no fixtures in testdata/%s", agent)
	}
	return files
}

func stem(file string) string {
	base := filepath.Base(file)
	return strings.TrimSuffix(base, filepath.Ext(base))
}

var rcPattern = regexp.MustCompile(`\brc=(\d+)`)

// exitCodes reads an EXIT_CODES.txt: "<fixture>[.jsonl] rc=N (comment)" per line.
func exitCodes(t testing.TB, agent string) map[string]int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", agent, "EXIT_CODES.txt"))
	if err != nil {
		t.Fatal(err)
	}
	codes := make(map[string]int)
	for line := range strings.Lines(string(data)) {
		fields := strings.Fields(line)
		m := rcPattern.FindStringSubmatch(line)
		if len(fields) == 0 || m == nil {
			continue
		}
		code, err := strconv.Atoi(m[1])
		if err != nil {
			t.Fatal(err)
		}
		codes[stem(fields[0])] = code
	}
	return codes
}

// stdoutLines returns the lines the agent wrote. Transcripts (.txt) also hold what the host
// wrote to the agent's stdin (">>> ") and notes ("### "): those never reach a decoder.
func stdoutLines(file string, data []byte) [][]byte {
	var lines [][]byte
	for line := range bytes.Lines(data) {
		line = bytes.TrimSuffix(line, []byte("\n"))
		if strings.HasSuffix(file, ".txt") && (bytes.HasPrefix(line, []byte(">>> ")) || bytes.HasPrefix(line, []byte("### "))) {
			continue
		}
		lines = append(lines, line)
	}
	return lines
}

// decodeAll feeds lines to d as the supervisor does (see decodeRun) and returns the events.
func decodeAll(t testing.TB, d Decoder, lines [][]byte, exit Exit) []Event {
	t.Helper()
	events, _ := decodeRun(t, d, lines, nil, exit)
	return events
}

// decodeRun feeds stdout lines, then stderr lines, to d as the supervisor does, through one
// reused buffer that is clobbered after every call, then ends the stream. An event that kept a
// view of the buffer instead of a copy would read differently after the clobbering: that is an
// error, and so is a Failure that breaks the contract of End.
func decodeRun(t testing.TB, d Decoder, lines, stderr [][]byte, exit Exit) ([]Event, Failure) {
	t.Helper()
	var events []Event
	var buf, early []byte
	feed := func(line []byte, decode func([]Event, []byte) []Event) {
		buf = append(buf[:0], line...)
		n := len(events)
		events = decode(events, buf)
		early = append(early, serialize(events[n:])...)
		for i := range buf {
			buf[i] = '#'
		}
	}
	for _, line := range lines {
		feed(line, d.Decode)
	}
	for _, line := range stderr {
		feed(line, d.DecodeStderr)
	}
	if late := serialize(events); !bytes.Equal(early, late) {
		t.Errorf("events changed when the line buffer was reused:\nbefore:\n%s\nafter:\n%s", early, late)
	}
	events, f := d.End(events, exit)
	checkFailure(t, f, exit)
	return events, f
}

// checkFailure asserts the contract of End's Failure.
func checkFailure(t testing.TB, f Failure, exit Exit) {
	t.Helper()
	if exit.Clean() {
		if f != (Failure{}) {
			t.Errorf("clean exit gave failure %+v", f)
		}
		return
	}
	switch f.Class {
	case ClassAuth, ClassConfig, ClassRate, ClassTransient, ClassSession:
	default:
		t.Errorf("exit %+v: failure class %q", exit, f.Class)
	}
	if f.Message == "" || strings.ContainsAny(f.Message, "\r\n") || len(f.Message) > failureMessageMax+len("…") {
		t.Errorf("exit %+v: failure message %q is not one short line", exit, f.Message)
	}
}

func serialize(events []Event) []byte {
	var out []byte
	for i := range events {
		out = events[i].AppendJSON(out)
		out = append(out, '\n')
	}
	return out
}

// checkEvents asserts what holds for every event a decoder writes.
func checkEvents(t testing.TB, events []Event) {
	t.Helper()
	for i := range events {
		e := &events[i]
		if e.V != 0 || !e.TS.IsZero() || e.Agent != "" || e.Seq != 0 {
			t.Errorf("event %d: decoder set v/ts/agent/seq: %+v", i, e)
		}
		switch e.Type {
		case TypeSession, TypeText, TypeToolUse, TypeToolResult, TypePermission, TypeResult, TypeError, TypeUnparsed:
		default:
			t.Errorf("event %d: unexpected type %q", i, e.Type)
		}
		if e.Type == TypeError && e.Source != SourceAgent {
			t.Errorf("event %d: error with source %q", i, e.Source)
		}
		if e.Delta {
			t.Errorf("event %d: a delta: decoders fold chunks into whole texts", i)
		}
		if e.Turns != 0 {
			t.Errorf("event %d: decoder set turns (the supervisor counts them)", i)
		}
		if e.Type == TypeError {
			switch e.Class {
			case "", ClassAuth, ClassConfig, ClassRate, ClassTransient, ClassSession:
			default:
				t.Errorf("event %d: class %q", i, e.Class)
			}
			if e.Fatal && (e.Class == "" || e.Attempt != 0) {
				t.Errorf("event %d: fatal error without class or with attempt: %+v", i, e)
			}
			if e.Attempt < 0 || e.Attempt > 0 && e.Class == "" {
				t.Errorf("event %d: retry notice without class: %+v", i, e)
			}
		}
		if e.Decision != "" && (e.Type != TypePermission || e.Decision != "deny" && e.Decision != "allow") {
			t.Errorf("event %d: decision %q on %s", i, e.Decision, e.Type)
		}
		line := e.AppendJSON(nil)
		if !json.Valid(line) {
			t.Errorf("event %d: invalid JSON: %s", i, line)
		}
		if bytes.IndexByte(line, '\n') >= 0 {
			t.Errorf("event %d: newline in %s", i, line)
		}
	}
}

// stderrOf returns the lines of a fixture's stderr capture, <fixture>.stderr, if there is one.
func stderrOf(t testing.TB, file string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(strings.TrimSuffix(file, filepath.Ext(file)) + ".stderr")
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return stdoutLines("", data)
}

// appendFailure writes End's Failure as the last line of a golden file, when the run failed.
func appendFailure(dst []byte, f Failure) []byte {
	if f == (Failure{}) {
		return dst
	}
	dst = AppendString(append(dst, `{"failure":{"class":`...), f.Class)
	dst = AppendString(append(dst, `,"message":`...), f.Message)
	return append(dst, "}}\n"...)
}

// TestGolden decodes every fixture and compares the events with <fixture>.golden.ndjson;
// go test ./stream -run Golden -u rewrites them.
func TestGolden(t *testing.T) {
	for _, f := range formats {
		codes := exitCodes(t, f.name)
		for _, file := range fixtures(t, f.name) {
			t.Run(f.name+"/"+stem(file), func(t *testing.T) {
				data, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				events, failure := decodeRun(t, f.new(), stdoutLines(file, data), stderrOf(t, file), Exit{Code: codes[stem(file)]})
				checkGolden(t, events, failure, filepath.Join("testdata", f.name, stem(file)+".golden.ndjson"), "Golden")
			})
		}
	}
}

func TestUnreadableLines(t *testing.T) {
	lines := []string{
		"not json at all",
		"Reading additional input from stdin...",
		`{"type":"assistant","message":{"content":[{"type":"text","text":"cut`,
		`{"type":"result",}`,
		`[1,2,3]`,
		`"a string"`,
		`42`,
		`{"no_type":true}`,
		`{"type":7}`,
		`{"type":"x"} trailing`,
	}
	for _, f := range formats {
		for _, line := range lines {
			d := f.new()
			got := d.Decode(nil, []byte(line))
			if len(got) != 1 || got[0].Type != TypeUnparsed || got[0].Raw != line {
				t.Errorf("%s: %q gave %+v, want one unparsed event with the raw line", f.name, line, got)
			}
		}
		for _, line := range []string{"", "   ", "\r", "\t \t"} {
			if got := f.new().Decode(nil, []byte(line)); len(got) != 0 {
				t.Errorf("%s: blank line %q gave %+v, want nothing", f.name, line, got)
			}
		}
		if got := f.new().Decode(nil, []byte(`{"type":"some_future_event","x":1}`)); len(got) != 0 {
			t.Errorf("%s: unknown type gave %+v, want nothing", f.name, got)
		}
	}
}

func TestClaudeMalformedKnownTypes(t *testing.T) {
	for _, line := range []string{
		`{"type":"assistant"}`,
		`{"type":"assistant","message":{"content":"text"}}`,
		`{"type":"user","message":{}}`,
		`{"type":"result"}`,
		`{"type":"system","subtype":"init"}`,
		`{"type":"stream_event","event":3}`,
	} {
		got := NewClaude().Decode(nil, []byte(line))
		if len(got) != 1 || got[0].Type != TypeUnparsed {
			t.Errorf("%s gave %+v, want unparsed", line, got)
		}
	}
}

func TestClaudeToolResultContentArray(t *testing.T) {
	d := NewClaude()
	var ev []Event
	ev = d.Decode(ev, []byte(`{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"a"}}]}}`))
	ev = d.Decode(ev, []byte(`{"type":"user","message":{"role":"user","content":[{"tool_use_id":"t1","type":"tool_result","content":[{"type":"text","text":"line 1"},{"type":"text","text":"line 2"}]}]}}`))
	want := `{"v":0,"ts":"0001-01-01T00:00:00Z","agent":"","seq":0,"type":"tool_result","id":"t1","tool":"Read","ok":true,"output":[{"type":"text","text":"line 1"},{"type":"text","text":"line 2"}]}`
	if len(ev) != 2 || string(ev[1].AppendJSON(nil)) != want {
		t.Fatalf("got %s", serialize(ev))
	}
}

func TestClaudeCostWithoutPerTurnUsage(t *testing.T) {
	// Without model_usage_since_last_result the per-turn cost is the growth of total_cost_usd.
	d := NewClaude()
	var ev []Event
	ev = d.Decode(ev, []byte(`{"type":"result","subtype":"success","is_error":false,"result":"a","total_cost_usd":0.5,"usage":{"input_tokens":10,"output_tokens":2,"cache_read_input_tokens":3,"cache_creation_input_tokens":4}}`))
	ev = d.Decode(ev, []byte(`{"type":"result","subtype":"success","is_error":false,"result":"b","total_cost_usd":0.75}`))
	ev = d.Decode(ev, []byte(`{"type":"result","subtype":"success","is_error":false,"result":"c"}`))
	if len(ev) != 3 {
		t.Fatalf("got %s", serialize(ev))
	}
	if ev[0].CostUSD == nil || *ev[0].CostUSD != 0.5 || ev[1].CostUSD == nil || *ev[1].CostUSD != 0.25 || ev[2].CostUSD != nil {
		t.Errorf("costs: got %s", serialize(ev))
	}
	if *ev[0].Usage != (Usage{InputTokens: 10, OutputTokens: 2, CacheReadTokens: 3, CacheWriteTokens: 4}) {
		t.Errorf("usage: got %+v", *ev[0].Usage)
	}
}

func TestClaudeIsErrorOutranksSubtype(t *testing.T) {
	ev := NewClaude().Decode(nil, []byte(`{"type":"result","subtype":"success","is_error":true,"result":"API Error: 500"}`))
	if len(ev) != 2 || ev[0].Type != TypeError || !ev[0].Fatal || ev[1].Type != TypeResult || ev[1].OK || ev[1].Text != "API Error: 500" {
		t.Errorf("got %s", serialize(ev))
	}
	ev = NewClaude().Decode(nil, []byte(`{"type":"result","subtype":"error_during_execution","is_error":false}`))
	if len(ev) != 1 || !ev[0].OK {
		t.Errorf("got %s", serialize(ev))
	}
}

func TestCutOffBySignal(t *testing.T) {
	cases := []struct {
		new  func() Decoder
		file string
	}{
		{NewClaude, "claude/sigterm_during_tool.jsonl"},
		{NewCodex, "codex/sigint_mid_command.jsonl"},
		{NewGemini, "gemini/api_error_429_retrying_killed.jsonl"},
	}
	for _, c := range cases {
		file := filepath.Join("testdata", c.file)
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		ev := decodeAll(t, c.new(), stdoutLines(file, data), Exit{Code: -1, Signal: "SIGTERM"})
		last := ev[len(ev)-1]
		if last.Type != TypeResult || last.OK || last.Text != "agent killed by SIGTERM before the turn ended" || last.CostUSD != nil {
			t.Errorf("%s: last event %s", file, last.AppendJSON(nil))
		}
	}
	// A finished turn leaves nothing to synthesize, whatever the exit.
	d := NewClaude()
	ev := decodeAll(t, d, [][]byte{[]byte(`{"type":"result","subtype":"success","is_error":false,"result":"ok"}`)}, Exit{Code: -1, Signal: "SIGKILL"})
	if len(ev) != 1 {
		t.Errorf("got %s", serialize(ev))
	}
	// Opencode ends its turn with the process: a signal makes it a failure.
	ev = decodeAll(t, NewOpencode(), [][]byte{[]byte(`{"type":"step_start","sessionID":"ses_1","part":{"type":"step-start"}}`)}, Exit{Code: -1, Signal: "SIGTERM"})
	if last := ev[len(ev)-1]; last.Type != TypeResult || last.OK || last.Text != "agent killed by SIGTERM before the turn ended" {
		t.Errorf("opencode: got %s", serialize(ev))
	}
}

func TestCodexUsagePerTurnAcrossResume(t *testing.T) {
	// The same thread, first turn then resumed: a decoder reused for the resumed process
	// reports the second turn's own tokens, not the thread's total; so does a new decoder
	// told where the thread stood (the next supervisor, after agt restart).
	codexFile := func(name string) [][]byte {
		file := filepath.Join("testdata", "codex", name)
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		return stdoutLines(file, data)
	}
	d := NewCodex()
	first := decodeAll(t, d, codexFile("command_execution.jsonl"), Exit{})
	firstUsage := *first[len(first)-1].Usage
	if want := (Usage{InputTokens: 3000, OutputTokens: 240, CacheReadTokens: 1000}); firstUsage != want {
		t.Fatalf("first turn: usage %+v, want %+v", firstUsage, want)
	}
	thread := "01a20235-4256-7221-ade3-1d897224f571"
	total, ok := d.(SessionResumer).SessionTotal(thread)
	if !ok || total != firstUsage {
		t.Fatalf("SessionTotal after the first turn = %+v, %v; want %+v", total, ok, firstUsage)
	}
	resumed := NewCodex()
	resumed.(SessionResumer).ResumeSession(thread, total)
	fresh := NewCodex()
	want := Usage{InputTokens: 1500, OutputTokens: 120, CacheReadTokens: 500}
	for _, tc := range []struct {
		name string
		d    Decoder
		want Usage
	}{{"reused", d, want}, {"resumed", resumed, want}, {"fresh", fresh, Usage{InputTokens: 4500, OutputTokens: 360, CacheReadTokens: 1500}}} {
		ev := decodeAll(t, tc.d, codexFile("resume_second_turn.jsonl"), Exit{})
		last := ev[len(ev)-1]
		if last.Type != TypeResult || *last.Usage != tc.want {
			t.Errorf("%s decoder: got %s, want usage %+v", tc.name, last.AppendJSON(nil), tc.want)
		}
	}
}

func TestCodexWebSearchKeepsItemID(t *testing.T) {
	ev := NewCodex().Decode(nil, []byte(`{"type":"item.completed","item":{"id":"item_7","type":"web_search","id":"ws_5","query":"q"}}`))
	if len(ev) != 2 || ev[0].ID != "item_7" || ev[1].ID != "item_7" || !ev[1].OK {
		t.Errorf("got %s", serialize(ev))
	}
}

// Gemini: End names what the exit code stands for, in the cut-off result and in the Failure
// (class and, for the codes that say what to do, the message).
func TestGeminiExitMeaning(t *testing.T) {
	for _, tc := range []struct {
		code       int
		text       string
		class, msg string
	}{
		{55, "agent exited with code 55 (untrusted workspace: pass --skip-trust or set GEMINI_CLI_TRUST_WORKSPACE=true) before the turn ended",
			ClassConfig, "untrusted workspace: pass --skip-trust or set GEMINI_CLI_TRUST_WORKSPACE=true"},
		{173, "agent exited with code 173 (API error, HTTP status 429) before the turn ended", ClassRate, "API error, HTTP status 429"},
	} {
		ev, f := NewGemini().End(nil, Exit{Code: tc.code})
		if len(ev) != 1 || ev[0].Text != tc.text || f != (Failure{tc.class, tc.msg}) {
			t.Errorf("exit %d: got %s %+v", tc.code, serialize(ev), f)
		}
	}
}

// corpus repeats the stdout lines of an agent's fixtures to at least size bytes.
func corpus(b *testing.B, agent string, size int) (lines [][]byte, n int64) {
	b.Helper()
	var one [][]byte
	for _, file := range fixtures(b, agent) {
		data, err := os.ReadFile(file)
		if err != nil {
			b.Fatal(err)
		}
		one = append(one, stdoutLines(file, data)...)
	}
	for int(n) < size {
		for _, l := range one {
			lines = append(lines, l)
			n += int64(len(l)) + 1
		}
	}
	return lines, n
}

func benchmarkDecoder(b *testing.B, agent string, newDecoder func() Decoder) {
	lines, n := corpus(b, agent, 4<<20)
	b.SetBytes(n)
	b.ReportAllocs()
	d := newDecoder()
	var events []Event
	for b.Loop() {
		for _, l := range lines {
			events = d.Decode(events[:0], l)
		}
		events, _ = d.End(events[:0], Exit{})
	}
}

func BenchmarkClaude(b *testing.B)   { benchmarkDecoder(b, "claude", NewClaude) }
func BenchmarkCodex(b *testing.B)    { benchmarkDecoder(b, "codex", NewCodex) }
func BenchmarkOpencode(b *testing.B) { benchmarkDecoder(b, "opencode", NewOpencode) }
func BenchmarkGemini(b *testing.B)   { benchmarkDecoder(b, "gemini", NewGemini) }

// fuzzStderr are stderr lines of the real CLIs, seeds for the stderr side of the fuzz targets.
var fuzzStderr = []string{
	"Error: No conversation found with session ID: 00000000-0000-4000-8000-000000000000",
	"Error: thread/resume: thread/resume failed: no rollout found for thread id 01a2",
	"error: unexpected argument '--bogus' found",
	"Error: Session not found",
	"Attempt 1 failed with status 429. Retrying with backoff... GaxiosError: [{",
	"Attempt 2 failed: You have exhausted your capacity on this model.. Retrying after 5000ms...",
	"Reading additional input from stdin...",
}

// fuzzDecoder seeds a fuzz target with every fixture and every line of them, then checks that
// any input, split into lines (stdout, then stderr), decodes without panic into events that
// serialize to valid JSON, and ends with a Failure that keeps End's contract.
func fuzzDecoder(f *testing.F, agent string, newDecoder func() Decoder) {
	for _, file := range fixtures(f, agent) {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, []byte(strings.Join(fuzzStderr, "\n")), 1)
		for i, l := range stdoutLines(file, data) {
			f.Add(l, []byte(fuzzStderr[i%len(fuzzStderr)]), i)
		}
	}
	f.Fuzz(func(t *testing.T, data, stderr []byte, code int) {
		exit := Exit{Code: code % 256}
		if code < 0 {
			exit = Exit{Code: -1, Signal: "SIGTERM"}
		}
		events, _ := decodeRun(t, newDecoder(), bytes.Split(data, []byte("\n")), bytes.Split(stderr, []byte("\n")), exit)
		checkEvents(t, events)
	})
}

func FuzzClaude(f *testing.F)   { fuzzDecoder(f, "claude", NewClaude) }
func FuzzCodex(f *testing.F)    { fuzzDecoder(f, "codex", NewCodex) }
func FuzzOpencode(f *testing.F) { fuzzDecoder(f, "opencode", NewOpencode) }
func FuzzGemini(f *testing.F)   { fuzzDecoder(f, "gemini", NewGemini) }

// TestCodexSessionTotalAfterStartOver: a decoder told the thread's running total as the last
// one left it (SessionTotal, not the sum of the turns it reported) counts the next turn as that
// one would have, also after the total started over.
func TestCodexSessionTotalAfterStartOver(t *testing.T) {
	turn := func(in, cached, out int) []byte {
		return []byte(fmt.Sprintf(`{"type":"turn.completed","usage":{"input_tokens":%d,"cached_input_tokens":%d,"output_tokens":%d}}`, in, cached, out))
	}
	start := []byte(`{"type":"thread.started","thread_id":"T"}`)
	first := NewCodex()
	first.Decode(nil, start)
	first.Decode(nil, turn(3000, 1000, 240))
	first.Decode(nil, turn(600, 100, 50)) // below the last total: it started over
	total, ok := first.(SessionResumer).SessionTotal("T")
	if !ok {
		t.Fatal("no total for thread T")
	}
	next := NewCodex()
	next.(SessionResumer).ResumeSession("T", total)
	next.Decode(nil, start)
	want := first.Decode(nil, turn(1000, 300, 90))
	got := next.Decode(nil, turn(1000, 300, 90))
	if !bytes.Equal(serialize(got), serialize(want)) {
		t.Errorf("resumed decoder: %s; the one that saw it all: %s", serialize(got), serialize(want))
	}
}

// checkGolden checks events and compares them, with the failure, to the golden file; with -u it
// rewrites the file instead. run names the test to run with -u.
func checkGolden(t *testing.T, events []Event, failure Failure, golden, run string) {
	t.Helper()
	checkEvents(t, events)
	got := appendFailure(serialize(events), failure)
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./stream -run %s -u)", err, run)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("events differ from %s (rewrite with -u)\n got:\n%s\nwant:\n%s", golden, got, want)
	}
}
