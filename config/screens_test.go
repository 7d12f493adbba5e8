package config

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"agt/stream"
)

// TestClaudeScreens holds Claude's TUI patterns to the screens of Claude Code 2.1.332 that they
// were written from, captured under agt against the loopback mock model (its tty.log): which
// says it waits and why, which that it retries, which that it gave up on a failure.
func TestClaudeScreens(t *testing.T) {
	k := Builtins()["claude"]
	res := map[string]*regexp.Regexp{}
	for name, expr := range map[string]string{"permission": k.PermissionScreen, "busy": k.BusyScreen, "input": k.InputScreen, "retry": k.RetryScreen, "error": k.ErrorScreen} {
		res[name] = regexp.MustCompile(expr)
	}
	for _, tt := range []struct {
		file    string
		matches []string // the patterns that match, in the order permission, busy, input, retry, error
		msg     string   // the msg group of the retry or error pattern
		attempt string
	}{
		{"claude_retry_401.tty", []string{"busy", "retry"}, "401 invalid x-api-key", "6"},
		{"claude_hang.tty", []string{"busy"}, "", ""},
		{"claude_error_401.tty", []string{"input", "error"}, "Invalid API key · Fix external API key", ""},
		{"claude_permission.tty", []string{"permission"}, "", ""},
		{"claude_permission_answered.tty", []string{"input"}, "", ""},
	} {
		b, err := os.ReadFile(filepath.Join("..", "stream", "testdata", "terminal", tt.file))
		if err != nil {
			t.Fatal(err)
		}
		s := stream.NewScreen(80, 24)
		s.Write(b)
		text := s.Text()
		var got []string
		for _, name := range []string{"permission", "busy", "input", "retry", "error"} {
			if res[name].MatchString(text) {
				got = append(got, name)
			}
		}
		if strings.Join(got, " ") != strings.Join(tt.matches, " ") {
			t.Errorf("%s: %v match, want %v; the screen:\n%s", tt.file, got, tt.matches, text)
			continue
		}
		for _, name := range []string{"retry", "error"} {
			m := res[name].FindStringSubmatch(text)
			if m == nil {
				continue
			}
			if msg := m[res[name].SubexpIndex("msg")]; msg != tt.msg {
				t.Errorf("%s: %s message %q, want %q", tt.file, name, msg, tt.msg)
			}
			if i := res[name].SubexpIndex("attempt"); i > 0 && m[i] != tt.attempt {
				t.Errorf("%s: attempt %q, want %q", tt.file, m[i], tt.attempt)
			}
		}
	}
}
