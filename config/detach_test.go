package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseDetachKeys(t *testing.T) {
	for spec, want := range map[string]string{
		`ctrl-\`:        "\x1c",
		"ctrl-p,ctrl-q": "\x10\x11",
		"ctrl-P,x":      "\x10x",
		"ctrl-@,ctrl-_": "\x00\x1f",
	} {
		got, err := ParseDetachKeys(spec)
		if err != nil || string(got) != want {
			t.Errorf("ParseDetachKeys(%q) = %q, %v; want %q", spec, got, err, want)
		}
	}
	for _, spec := range []string{"", "ctrl-1", "ctrl-", "xy", "a,,b", "alt-x"} {
		if _, err := ParseDetachKeys(spec); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseDetachKeys(%q): error %v, want one line", spec, err)
		}
	}
}

func TestTTYKeys(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "none"))
	toml := `detach_keys = "ctrl-p,ctrl-q"
[agents.claude]
tty = true
[agents.mine]
start = ["mine", "--json"]
tty_start = ["mine"]
input_screen = '^> \z'
`
	if err := os.WriteFile(filepath.Join(dir, "agt.toml"), []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c.DetachKeys != "ctrl-p,ctrl-q" {
		t.Errorf("detach_keys %q", c.DetachKeys)
	}
	claude := c.Kinds["claude"].OnTTY()
	if !c.Kinds["claude"].TTY || claude.Start[0] != "claude" || claude.Format != "text" || claude.Stdin != StdinNone || !claude.SessionUUID || claude.PermissionScreen == "" {
		t.Errorf("claude on a terminal: %+v", claude)
	}
	mine := c.Kinds["mine"].OnTTY()
	if strings.Join(mine.Start, " ") != "mine" || mine.Resume != nil || mine.InputScreen != `^> \z` {
		t.Errorf("mine on a terminal: %+v", mine)
	}
	for _, bad := range []string{`detach_keys = "meta-x"`, "[agents.x]\nstart = [\"x\"]\npermission_screen = '('"} {
		os.WriteFile(filepath.Join(dir, "agt.toml"), []byte(bad), 0o600)
		if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "agt.toml") {
			t.Errorf("%s: error %v, want one naming the file", bad, err)
		}
	}
}
