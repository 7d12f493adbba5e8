package config

import (
	"path/filepath"
	"slices"
	"testing"
)

func TestSandboxKeys(t *testing.T) {
	home := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "cfg"))
	write(t, filepath.Join(home, "cfg", "agt", "config.toml"), `
sandbox = "bwrap"
sandbox_ro = ["~/notes?"]
`)
	proj := filepath.Join(home, "proj")
	write(t, filepath.Join(proj, "agt.toml"), `
sandbox_rw = ["~/.cache/go-build/"]
[agents.claude]
sandbox_net = "none"
sandbox_rw = ["/data"]
sandbox_args = []
[agents.codex]
sandbox = "none"
`)
	c, err := Load(proj)
	if err != nil {
		t.Fatal(err)
	}
	claude := c.SandboxFor(c.Kinds["claude"])
	want := Sandbox{Tool: "bwrap", Net: "none",
		RW: []string{"~/.cache/go-build/", "${CLAUDE_CONFIG_DIR:-~/.claude}/", "~/.claude.json?", "/data"},
		RO: []string{"~/.gitconfig?", "${XDG_CONFIG_HOME:-~/.config}/git?", "~/notes?"}}
	if claude.Tool != want.Tool || claude.Net != want.Net || !slices.Equal(claude.RW, want.RW) || !slices.Equal(claude.RO, want.RO) {
		t.Errorf("claude's sandbox = %+v\nwant %+v", claude, want)
	}
	// sandbox_args = [] turns the built-in's off: no skip-permissions flag in a sandbox.
	if k := c.Kinds["claude"]; k.SandboxArgs == nil || len(k.SandboxArgs) != 0 {
		t.Errorf("claude's sandbox_args = %q, want none", k.SandboxArgs)
	}
	if s := c.SandboxFor(c.Kinds["codex"]); s.Tool != "" || s.Net != "" {
		t.Errorf("codex's sandbox = %+v, want none (sandbox = \"none\")", s)
	}
	if s := c.SandboxFor(c.Kinds["gemini"]); s.Tool != "bwrap" || !slices.Contains(s.RW, "~/.gemini/") {
		t.Errorf("gemini's sandbox = %+v, want bwrap from the user file, with its own paths", s)
	}
	// The built-ins are untouched by what a file added to a kind.
	if b := Builtins()["claude"]; slices.Contains(b.SandboxRW, "/data") || len(b.SandboxArgs) != 1 {
		t.Errorf("a built-in changed: %+v", b)
	}
}

func TestTemplateSandbox(t *testing.T) {
	k := Builtins()["claude"]
	for _, tt := range []struct {
		x    Extras
		want bool
	}{
		{Extras{Sandbox: true}, true},
		{Extras{}, false},
		{Extras{Sandbox: true, Plan: true}, false}, // plan mode stays plan mode
	} {
		argv, err := k.Template(false, tt.x)
		if err != nil {
			t.Fatal(err)
		}
		if got := slices.Contains(argv, "--dangerously-skip-permissions"); got != tt.want {
			t.Errorf("%+v: skip-permissions %v in %q, want %v", tt.x, got, argv, tt.want)
		}
	}
}
