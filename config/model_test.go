package config

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestConfiguredModel(t *testing.T) {
	home := t.TempDir()
	env := map[string]string{"HOME": home}
	getenv := func(k string) string { return env[k] }
	if m := ConfiguredModel("codex", getenv); m != "" {
		t.Fatalf("codex without a config: %q", m)
	}
	write(t, filepath.Join(home, ".codex", "config.toml"), "model = \"gpt-5.5\"\n[analytics]\nenabled = false\n")
	if m := ConfiguredModel("codex", getenv); m != "gpt-5.5" {
		t.Errorf("codex from ~/.codex: %q", m)
	}
	env["CODEX_HOME"] = filepath.Join(home, "elsewhere")
	write(t, filepath.Join(home, "elsewhere", "config.toml"), "model = \"o9\"\n")
	if m := ConfiguredModel("codex", getenv); m != "o9" {
		t.Errorf("codex from $CODEX_HOME: %q", m)
	}
	write(t, filepath.Join(home, ".config", "opencode", "opencode.json"), `{"model": "anthropic/claude-sonnet-4-5"}`)
	if m := ConfiguredModel("opencode", getenv); m != "anthropic/claude-sonnet-4-5" {
		t.Errorf("opencode: %q", m)
	}
	// A FIFO where the file should be: never read (it would block).
	fifo := filepath.Join(home, "fifo")
	env["XDG_CONFIG_HOME"] = fifo
	os.MkdirAll(filepath.Join(fifo, "opencode"), 0o755)
	if err := mkfifo(filepath.Join(fifo, "opencode", "opencode.json")); err == nil {
		if m := ConfiguredModel("opencode", getenv); m != "" {
			t.Errorf("opencode from a FIFO: %q", m)
		}
	}
	if m := ConfiguredModel("claude", getenv); m != "" {
		t.Errorf("claude: %q (it says its model itself)", m)
	}
}

func mkfifo(path string) error { return syscall.Mkfifo(path, 0o600) }
