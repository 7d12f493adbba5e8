package stream

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// codexServerFixtures are the app-server transcripts in testdata/codexserver (made by the root
// package's TestRealCodexAppServer with the real codex app-server): ">>> " lines agt wrote,
// "<<< " lines the server wrote.
func codexServerFixtures(t testing.TB) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join("testdata", "codexserver", "*.txt"))
	if err != nil || len(m) == 0 {
		t.Fatalf("no transcripts in testdata/codexserver: %v", err)
	}
	return m
}

// playCodexServer drives a client through a transcript: the first prompt before the handshake,
// the server's lines through Decode (a buffer clobbered after each call), and for each line the
// driver wrote, the call that makes agt write it (a prompt, a decision). Every line the client
// writes must be the transcript's: the same method and id, the same decision.
func playCodexServer(t testing.TB, data []byte) []Event {
	t.Helper()
	c := NewCodexServer("agt", "test")
	c.Sandbox = "danger-full-access"
	c.Connect("/home/dev/work", "", "")
	prompts := 0
	var sent [][]byte
	var events []Event
	var buf []byte
	for line := range bytes.Lines(data) {
		line = bytes.TrimSuffix(line, []byte("\n"))
		switch {
		case bytes.HasPrefix(line, []byte("<<< ")):
			buf = append(buf[:0], line[4:]...)
			n := len(events)
			events = c.Decode(events, buf)
			early := serialize(events[n:])
			for i := range buf {
				buf[i] = '#'
			}
			if late := serialize(events[n:]); !bytes.Equal(early, late) {
				t.Errorf("events changed when the line buffer was reused:\n%s\n%s", early, late)
			}
		case bytes.HasPrefix(line, []byte(">>> ")):
			want := gjson.ParseBytes(line[4:])
			switch {
			case want.Get("method").Str == "turn/start":
				prompts++
				c.Prompt(want.Get("params.input.0.text").Str)
			case want.Get("result.decision").Exists():
				d := want.Get("result.decision").Str
				if _, err := c.Answer(want.Get("id").Raw, strings.HasPrefix(d, "accept"), d == "acceptForSession"); err != nil {
					t.Fatal(err)
				}
			}
			sent = append(sent, c.Lines()...)
			if len(sent) == 0 {
				t.Fatalf("agt wrote nothing where the driver wrote %s", line)
			}
			got := gjson.ParseBytes(sent[0])
			sent = sent[1:]
			for _, path := range []string{"method", "id", "result.decision", "params.threadId", "params.input.0.text", "params.approvalPolicy", "params.sandbox"} {
				if g, w := got.Get(path).Raw, want.Get(path).Raw; g != w {
					t.Errorf("agt wrote %s: %s, the driver %s\n agt: %s\n driver: %s", path, g, w, got.Raw, want.Raw)
				}
			}
		}
	}
	if prompts == 0 {
		t.Fatal("the transcript holds no turn/start")
	}
	events, f := c.End(events, Exit{})
	checkFailure(t, f, Exit{})
	return events
}

// TestCodexServerGolden plays every transcript and compares the events with
// <transcript>.golden.ndjson; go test ./stream -run CodexServerGolden -u rewrites them.
func TestCodexServerGolden(t *testing.T) {
	for _, file := range codexServerFixtures(t) {
		t.Run(stem(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			events := playCodexServer(t, data)
			checkGolden(t, events, Failure{}, filepath.Join("testdata", "codexserver", stem(file)+".golden.ndjson"), "CodexServerGolden")
		})
	}
}

// codexOpen returns a client whose thread t-1 is open, and what it wrote once it was.
func codexOpen(t *testing.T) (*CodexServer, []string) {
	t.Helper()
	c := NewCodexServer("agt", "test")
	c.Connect("/w", "", "")
	c.Prompt("hi")
	c.Decode(nil, []byte(`{"id":1,"result":{"userAgent":"x"}}`))
	ev := c.Decode(nil, []byte(`{"id":2,"result":{"thread":{"id":"t-1"},"model":"gpt-5.5"}}`))
	if len(ev) != 1 || ev[0].Type != TypeSession || ev[0].SessionID != "t-1" || ev[0].Model != "gpt-5.5" || !c.Ready() {
		t.Fatalf("open: %s", serialize(ev))
	}
	var out []string
	for _, l := range c.Lines() {
		out = append(out, string(l))
	}
	return c, out
}

func TestCodexServerHandshake(t *testing.T) {
	_, out := codexOpen(t)
	methods := make([]string, len(out))
	for i, l := range out {
		methods[i] = gjson.Get(l, "method").Str
	}
	if strings.Join(methods, " ") != "initialize initialized thread/start turn/start" ||
		gjson.Get(out[2], "params.approvalPolicy").Str != "untrusted" || gjson.Get(out[2], "params.sandbox").Str != "workspace-write" ||
		gjson.Get(out[3], "params.input.0.text").Str != "hi" || gjson.Get(out[3], "params.threadId").Str != "t-1" {
		t.Errorf("wrote %q", out)
	}
}

// A message while a turn runs steers it; Cancel answers the pending approval cancel and
// interrupts the turn; the turn ends interrupted, and a tool it cut off gets its result.
func TestCodexServerSteerAndInterrupt(t *testing.T) {
	c, _ := codexOpen(t)
	c.Decode(nil, []byte(`{"id":3,"result":{"turn":{"id":"u-1","status":"inProgress"}}}`))
	c.Prompt("and also this")
	out := c.Lines()
	if len(out) != 1 || gjson.GetBytes(out[0], "method").Str != "turn/steer" || gjson.GetBytes(out[0], "params.expectedTurnId").Str != "u-1" {
		t.Fatalf("a message mid-turn wrote %q, want turn/steer", out)
	}
	ev := c.Decode(nil, []byte(`{"method":"item/started","params":{"item":{"type":"commandExecution","id":"call_1","command":"make","cwd":"/w","status":"inProgress"}}}`))
	ev = c.Decode(ev, []byte(`{"method":"item/commandExecution/requestApproval","id":7,"params":{"itemId":"call_1","command":"make","cwd":"/w","reason":"build"}}`))
	if len(ev) != 2 || ev[0].Type != TypeToolUse || ev[0].Tool != "Bash" || ev[1].Type != TypePermission || ev[1].ID != "7" ||
		gjson.GetBytes(ev[1].Input, "command").Str != "make" || gjson.GetBytes(ev[1].Input, "reason").Str != "build" {
		t.Fatalf("events %s", serialize(ev))
	}
	if ids := c.Cancel(); len(ids) != 1 || ids[0] != "7" {
		t.Fatalf("Cancel answered %q", ids)
	}
	out = c.Lines()
	if len(out) != 2 || gjson.GetBytes(out[0], "result.decision").Str != "cancel" || gjson.GetBytes(out[1], "method").Str != "turn/interrupt" ||
		gjson.GetBytes(out[1], "params.turnId").Str != "u-1" {
		t.Fatalf("Cancel wrote %q", out)
	}
	ev = c.Decode(nil, []byte(`{"method":"turn/completed","params":{"threadId":"t-1","turn":{"id":"u-1","status":"interrupted"}}}`))
	if len(ev) != 2 || ev[0].Type != TypeToolResult || ev[0].ID != "call_1" || ev[0].OK || ev[1].Type != TypeResult || ev[1].OK || ev[1].Text != "interrupted" {
		t.Fatalf("events %s", serialize(ev))
	}
	c.Prompt("next")
	if out = c.Lines(); len(out) != 1 || gjson.GetBytes(out[0], "method").Str != "turn/start" {
		t.Fatalf("a message between turns wrote %q, want turn/start", out)
	}
}

// Retries are retry notices (running, retrying); a failed turn is a fatal error, classified.
func TestCodexServerErrors(t *testing.T) {
	c, _ := codexOpen(t)
	ev := c.Decode(nil, []byte(`{"method":"error","params":{"error":{"message":"unexpected status 500 Internal Server Error"},"willRetry":true,"threadId":"t-1","turnId":"u"}}`))
	if len(ev) != 1 || ev[0].Type != TypeError || ev[0].Fatal || ev[0].Attempt != 1 || ev[0].Class != ClassTransient {
		t.Fatalf("a retry: %s", serialize(ev))
	}
	ev = c.Decode(nil, []byte(`{"method":"turn/completed","params":{"threadId":"t-1","turn":{"id":"u","status":"failed","error":{"message":"unexpected status 401 Unauthorized"}}}}`))
	if len(ev) != 2 || !ev[0].Fatal || ev[0].Class != ClassAuth || ev[1].Type != TypeResult || ev[1].OK {
		t.Fatalf("a failed turn: %s", serialize(ev))
	}
	if _, f := c.End(nil, Exit{Code: 1}); f.Class != ClassAuth {
		t.Errorf("End: %+v", f)
	}
}

// A thread that cannot be resumed: a new one, said so.
func TestCodexServerResumeRefused(t *testing.T) {
	c := NewCodexServer("agt", "test")
	c.Connect("/w", "", "t-0")
	c.Decode(nil, []byte(`{"id":1,"result":{}}`))
	out := c.Lines()
	if gjson.GetBytes(out[len(out)-1], "method").Str != "thread/resume" || gjson.GetBytes(out[len(out)-1], "params.threadId").Str != "t-0" {
		t.Fatalf("wrote %q", out)
	}
	ev := c.Decode(nil, []byte(`{"id":2,"error":{"code":-32600,"message":"no rollout found for thread id t-0"}}`))
	out = c.Lines()
	if len(ev) != 1 || ev[0].Class != ClassSession || len(out) != 1 || gjson.GetBytes(out[0], "method").Str != "thread/start" {
		t.Fatalf("events %s, wrote %q", serialize(ev), out)
	}
}

func FuzzCodexServer(f *testing.F) {
	for _, file := range codexServerFixtures(f) {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		addTranscript(f, data)
	}
	f.Fuzz(func(t *testing.T, data []byte, code int) {
		c := NewCodexServer("agt", "test")
		c.Connect("/w", "", "t-0")
		c.Prompt("hi")
		var events []Event
		for i, line := range bytes.Split(data, []byte("\n")) {
			events = c.Decode(events, line)
			switch (i + code) % 5 {
			case 1:
				for id := range c.asks {
					c.Answer(id, i%2 == 0, i%3 == 0)
				}
			case 2:
				c.Prompt("more")
			case 3:
				c.Cancel()
			}
			checkWritten(t, c.Lines())
		}
		exit := Exit{Code: code % 256}
		events, f := c.End(events, exit)
		checkFailure(t, f, exit)
		checkEvents(t, events)
	})
}

// An interrupt or a steer that comes before the running turn's id waits for it: the prompt
// still reaches the thread (its history keeps it), then the steer and turn/interrupt go out.
func TestCodexServerBeforeTurnID(t *testing.T) {
	c, _ := codexOpen(t) // turn/start of "hi" sent, unanswered
	if !c.Steer("more") {
		t.Fatal("Steer refused a message while a turn was being started")
	}
	if ids := c.Cancel(); len(ids) != 0 {
		t.Fatalf("Cancel answered %q", ids)
	}
	if out := c.Lines(); len(out) != 0 {
		t.Fatalf("wrote %q before the turn's id was known", out)
	}
	c.Decode(nil, []byte(`{"id":3,"result":{"turn":{"id":"u-1","status":"inProgress"}}}`))
	out := c.Lines()
	if len(out) != 2 || gjson.GetBytes(out[0], "method").Str != "turn/steer" || gjson.GetBytes(out[0], "params.input.0.text").Str != "more" ||
		gjson.GetBytes(out[1], "method").Str != "turn/interrupt" || gjson.GetBytes(out[1], "params.turnId").Str != "u-1" {
		t.Fatalf("once the turn's id came, wrote %q", out)
	}
	c.Decode(nil, []byte(`{"method":"turn/completed","params":{"turn":{"id":"u-1","status":"interrupted"}}}`))
	if c.Steer("late") || len(c.Lines()) != 0 {
		t.Error("Steer took a message with no turn running")
	}
	// A prompt held until the thread opens, then cancelled: it is sent, and interrupted.
	d := NewCodexServer("agt", "test")
	d.Connect("/w", "", "")
	d.Prompt("first")
	d.Cancel()
	d.Decode(nil, []byte(`{"id":1,"result":{}}`))
	d.Decode(nil, []byte(`{"id":2,"result":{"thread":{"id":"t-1"}}}`))
	d.Decode(nil, []byte(`{"method":"turn/started","params":{"turn":{"id":"u-9"}}}`))
	var methods []string
	for _, l := range d.Lines() {
		methods = append(methods, gjson.GetBytes(l, "method").Str)
	}
	if strings.Join(methods, " ") != "initialize initialized thread/start turn/start turn/interrupt" {
		t.Errorf("a cancelled first prompt: wrote %q", methods)
	}
}

// A resumed thread counts its tokens from where the last run left them; a new thread from zero.
func TestCodexServerResumedUsage(t *testing.T) {
	c := NewCodexServer("agt", "test")
	c.ResumeSession("t-0", Usage{InputTokens: 500, OutputTokens: 50})
	c.Connect("/w", "", "t-0")
	c.Prompt("go on")
	c.Decode(nil, []byte(`{"id":1,"result":{}}`))
	c.Decode(nil, []byte(`{"id":2,"result":{"thread":{"id":"t-0"}}}`))
	c.Decode(nil, []byte(`{"method":"thread/tokenUsage/updated","params":{"tokenUsage":{"total":{"inputTokens":600,"outputTokens":60}}}}`))
	ev := c.Decode(nil, []byte(`{"method":"turn/completed","params":{"turn":{"id":"u","status":"completed"}}}`))
	if len(ev) != 1 || ev[0].Usage == nil || ev[0].Usage.InputTokens != 100 || ev[0].Usage.OutputTokens != 10 {
		t.Fatalf("the resumed turn: %s", serialize(ev))
	}
	if total, ok := c.SessionTotal("t-0"); !ok || total.InputTokens != 600 {
		t.Errorf("SessionTotal: %+v %v", total, ok)
	}
	c.End(nil, Exit{})
	if total, ok := c.SessionTotal("t-0"); !ok || total.InputTokens != 600 {
		t.Errorf("after End: %+v %v", total, ok)
	}
}
