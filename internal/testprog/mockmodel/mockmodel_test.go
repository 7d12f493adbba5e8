package mockmodel

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestMockModel checks the mock's answers in each API, so that a real-agent failure is the
// agent's and not the mock's.
func TestMockModel(t *testing.T) {
	m := New("", t.Logf)
	defer m.Close()
	m.Tick = 10 * time.Millisecond
	post := func(path, body string) (int, string) {
		t.Helper()
		resp, err := http.Post(m.URL()+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	anthropic := func(text string, extra string) string {
		return `{"model":"claude-x","stream":true,"tools":[{"name":"Bash"}],"messages":[` +
			`{"role":"user","content":[{"type":"text","text":"<system-reminder>ctx</system-reminder>"},{"type":"text","text":"` + text + `"}]}` + extra + `]}`
	}
	openai := `{"model":"gpt-x","stream":true,"tools":[{"type":"function","name":"exec_command"}],"input":[` +
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>x</environment_context>"}]},` +
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"please tool"}]}]}`
	gemini := `{"tools":[{"functionDeclarations":[{"name":"run_shell_command"}]}],"contents":[{"role":"user","parts":[{"text":"please echo"}]},` +
		`{"role":"model","parts":[{"text":"turn 1"}]},{"role":"user","parts":[{"text":"echo again"}]}]}`
	for _, c := range []struct {
		name, path, body string
		status           int
		want             []string // substrings of the answer, in order
	}{
		{"anthropic tool", "/v1/messages", anthropic("please tool", ""), 200,
			[]string{"event: message_start", `"name":"Bash"`, `echo agt-tool-ok`, `"stop_reason":"tool_use"`, "event: message_stop"}},
		{"anthropic tool result", "/v1/messages", anthropic("please tool",
			`,{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"agt-tool-ok"}]}`), 200,
			[]string{`"text":"The tool said: agt-tool-ok"`, `"stop_reason":"end_turn"`}},
		{"anthropic write", "/v1/messages", anthropic("please write", ""), 200,
			[]string{`"name":"Bash"`, `agt-write-1/x`, `"stop_reason":"tool_use"`}},
		{"anthropic write denied", "/v1/messages", anthropic("please write",
			`,{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"use make clean","is_error":true}]}`), 200,
			[]string{`"text":"The tool failed: use make clean"`, `"stop_reason":"end_turn"`}},
		{"anthropic plan", "/v1/messages", strings.Replace(anthropic("please plan", ""), `{"name":"Bash"}`, `{"name":"Bash"},{"name":"ExitPlanMode"}`, 1), 200,
			[]string{`"name":"ExitPlanMode"`, planText, `"stop_reason":"tool_use"`}},
		{"anthropic echo after an interrupt", "/v1/messages", anthropic("please echo",
			`,{"role":"assistant","content":[{"type":"text","text":"chunk 1"}]},{"role":"user","content":[{"type":"text","text":"[Request interrupted by user]"},{"type":"text","text":"echo again"}]}`), 200,
			[]string{`"text":"turn 2: you said echo again"`}},
		{"anthropic 401", "/v1/messages", anthropic("http401", ""), 401, []string{`"type":"authentication_error"`}},
		{"anthropic slow", "/v1/messages", anthropic("slow=50ms", ""), 200, []string{"chunk 1 of 5", "chunk 5 of 5", "message_stop"}},
		{"anthropic side", "/v1/messages", `{"model":"h","stream":false,"messages":[{"role":"user","content":"http429 title"}]}`, 429,
			[]string{`"rate_limit_error"`}},
		{"openai tool", "/v1/responses", openai, 200,
			[]string{"response.created", `"name":"exec_command"`, `\"cmd\":\"echo agt-tool-ok\"`, "response.completed", `"total_tokens":110`}},
		{"openai model", "/v1/responses", strings.Replace(openai, "gpt-x", "no-such-model", 1), 404, []string{`"code":"model_not_found"`}},
		{"gemini echo", "/v1beta/models/g:streamGenerateContent", gemini, 200,
			[]string{`data: {"candidates"`, "turn 2: you said echo again", `"finishReason":"STOP"`}},
		{"gemini router", "/v1beta/models/g:generateContent",
			`{"contents":[{"role":"user","parts":[{"text":"x"}]}],"generationConfig":{"responseMimeType":"application/json","responseJsonSchema":{"type":"OBJECT","properties":{"score":{"type":"INTEGER"}}}}}`,
			200, []string{`{\"score\":1}`}},
	} {
		status, body := post(c.path, c.body)
		if status != c.status {
			t.Errorf("%s: status %d, want %d; body:\n%s", c.name, status, c.status, body)
			continue
		}
		rest := body
		for _, w := range c.want {
			i := strings.Index(rest, w)
			if i < 0 {
				t.Errorf("%s: no %q (in order) in:\n%s", c.name, w, body)
				break
			}
			rest = rest[i+len(w):]
		}
	}

	// A hanging request ends when its client goes away; Close does not wait for it.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", m.URL()+"/v1/messages", strings.NewReader(anthropic("hang", "")))
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Errorf("hang: answered %s", resp.Status)
	}

	reqs := m.Requests()
	last := reqs[len(reqs)-1]
	if last.Scenario != "hang" || last.Status != 0 || last.Users != 1 || last.LastUser != "hang" || !last.Main {
		t.Errorf("hang: recorded as %+v", last)
	}
	if r := reqs[1]; !r.ToolResult || r.Users != 1 {
		t.Errorf("tool result: recorded as %+v", r)
	}
}

// A held gate keeps a slow answer from its last chunk until Open.
func TestMockModelGate(t *testing.T) {
	m := New("", t.Logf)
	defer m.Close()
	m.Tick = time.Millisecond
	m.Hold()
	body := `{"model":"claude-x","stream":true,"tools":[{"name":"Bash"}],"messages":[{"role":"user","content":"slow=5ms"}]}`
	done := make(chan string, 1)
	go func() {
		resp, err := http.Post(m.URL()+"/v1/messages", "application/json", strings.NewReader(body))
		if err != nil {
			done <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		done <- string(b)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if r := m.Requests(); len(r) == 1 && r[0].Sent == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the first 4 of 5 chunks never went out: %+v", m.Requests())
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case b := <-done:
		t.Fatalf("the answer ended while the gate was held:\n%s", b)
	case <-time.After(100 * time.Millisecond):
	}
	m.Open()
	if b := <-done; !strings.Contains(b, "chunk 5 of 5") || !strings.Contains(b, "message_stop") {
		t.Fatalf("after Open, the answer:\n%s", b)
	}
}
