package fakeacp

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"agt/internal/testprog/selfexec"
)

func TestMain(m *testing.M) {
	selfexec.Main(m, Main)
}

// client runs the fake with args on pipes and returns a function that sends a line and one
// that reads the next one.
func client(t *testing.T, dir string, args ...string) (cmd *exec.Cmd, send func(string), next func() string) {
	t.Helper()
	cmd = selfexec.Command(append([]string{"-dir", dir}, args...)...)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() })
	out := bufio.NewReader(stdout)
	send = func(line string) { io.WriteString(stdin, line+"\n") }
	next = func() string {
		t.Helper()
		line, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		return strings.TrimSpace(line)
	}
	return cmd, send, next
}

func TestHandshakeAndPermission(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "turn1.jsonl"), []byte(`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}
#ask
`), 0o644)
	os.WriteFile(filepath.Join(dir, "turn1.allow.jsonl"), []byte("#end end_turn\n"), 0o644)
	_, send, next := client(t, dir)

	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}`)
	if got := next(); gjson.Get(got, "result.protocolVersion").Int() != 1 || !gjson.Get(got, "result.agentCapabilities.loadSession").Bool() {
		t.Fatalf("initialize answered %s", got)
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}`)
	if got := next(); gjson.Get(got, "result.sessionId").String() != "s-1" {
		t.Fatalf("session/new answered %s", got)
	}
	send(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s-1","prompt":[]}}`)
	if got := next(); gjson.Get(got, "params.update.content.text").String() != "hi" {
		t.Fatalf("first update %s", got)
	}
	req := next()
	if gjson.Get(req, "method").String() != "session/request_permission" || gjson.Get(req, "params.toolCall.rawInput.command").String() != "rm -rf build" {
		t.Fatalf("permission request %s", req)
	}
	send(`{"jsonrpc":"2.0","id":` + gjson.Get(req, "id").Raw + `,"result":{"outcome":{"outcome":"selected","optionId":"yes"}}}`)
	if got := next(); gjson.Get(got, "id").Int() != 2 || gjson.Get(got, "result.stopReason").String() != "end_turn" {
		t.Fatalf("the prompt's answer after allow: %s", got)
	}
	in, _ := os.ReadFile(filepath.Join(dir, "in.jsonl"))
	if n := strings.Count(string(in), "\n"); n != 4 {
		t.Errorf("in.jsonl holds %d lines, want the 4 sent:\n%s", n, in)
	}
}

func TestInitExit(t *testing.T) {
	cmd, send, _ := client(t, t.TempDir(), "-init", "exit")
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`)
	var ee *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("with -init exit: %v, want exit status 3", err)
	}
}

func TestInitGarbage(t *testing.T) {
	_, send, next := client(t, t.TempDir(), "-init", "garbage")
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`)
	if got := next(); gjson.Valid(got) {
		t.Fatalf("with -init garbage it answered JSON: %s", got)
	}
}
