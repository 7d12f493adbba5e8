package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestExpand(t *testing.T) {
	vals := map[string]string{"AGT_NAME": "fix", "AGT_PROMPT": "do it; rm -rf $HOME", "AGT_MODEL": ""}
	tests := []struct {
		in   []string
		want []string
		err  string
	}{
		{[]string{"a", "$AGT_NAME", "--name=${AGT_NAME}.x"}, []string{"a", "fix", "--name=fix.x"}, ""},
		{[]string{"$AGT_PROMPT"}, []string{"do it; rm -rf $HOME"}, ""},
		{[]string{"$HOME", "cost $$5", "$"}, []string{"$HOME", "cost $5", "$"}, ""},
		{[]string{"${AGT_NAME"}, []string{"${AGT_NAME"}, ""},
		{[]string{"$AGT_MODEL"}, []string{""}, ""},
		{[]string{"$AGT_NOPE"}, nil, "unknown token $AGT_NOPE"},
	}
	for _, tt := range tests {
		got, err := Expand(tt.in, vals)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Expand(%q): err %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Expand(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestTemplate(t *testing.T) {
	k := Builtins()["claude"]
	got, err := k.Template(false, Extras{Model: "opus", Plan: true, Args: []string{"--max-turns", "3", "$AGT_NAME"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"claude", "--output-format", "stream-json", "--verbose", "--include-partial-messages", "--session-id", "$AGT_SESSION_ID",
		"--model", "$AGT_MODEL", "--permission-mode", "plan", "--max-turns", "3", "$$AGT_NAME", "-p"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	// --arg values stay literal through Expand.
	out, err := Expand(got, map[string]string{"AGT_SESSION_ID": "s", "AGT_MODEL": "opus", "AGT_PROMPT": "p", "AGT_NAME": "n"})
	if err != nil || out[13] != "$AGT_NAME" {
		t.Errorf("expanded %q, %v", out, err)
	}
	if _, err := Builtins()["codex"].Template(false, Extras{Plan: true}); err == nil {
		t.Error("codex --plan: no error")
	}
	resume, _ := Builtins()["codex"].Template(true, Extras{Model: "m"})
	if strings.Join(resume, " ") != "codex exec --json --skip-git-repo-check -m $AGT_MODEL resume $AGT_SESSION_ID" {
		t.Errorf("codex resume: %q", resume)
	}
	// Gemini runs unattended (its shell tool needs it), unless it only plans: one approval mode.
	gemini := Builtins()["gemini"]
	auto, _ := gemini.Template(false, Extras{})
	plan, _ := gemini.Template(false, Extras{Plan: true})
	if strings.Join(auto, " ") != "gemini -o stream-json --approval-mode yolo" || strings.Join(plan, " ") != "gemini -o stream-json --approval-mode plan" {
		t.Errorf("gemini: %q, with --plan %q", auto, plan)
	}
}

func TestConverse(t *testing.T) {
	claude := Builtins()["claude"]
	for name, want := range map[string]string{"claude": ConverseStdin, "codex": ConverseStdin, "opencode": ConverseTurns, "gemini": ConverseTurns, Exec: ""} {
		if got := Builtins()[name].ConverseMode(); got != want {
			t.Errorf("%s converses %q, want %q", name, got, want)
		}
	}
	got, _ := claude.Conversing().Template(false, Extras{Converse: true})
	if s := strings.Join(got, " "); !strings.HasSuffix(s, "--input-format stream-json --permission-prompt-tool stdio -p") {
		t.Errorf("claude --converse: %s", s)
	}
	if claude.Conversing().Stdin != StdinStreamJSON || claude.Stdin != StdinPrompt {
		t.Error("Conversing changed the built-in, or not its stdin")
	}
	// Codex converses through its app-server: another argv, its protocol on stdin, the model
	// in the protocol, no flag of codex exec.
	codex := Builtins()["codex"]
	c := codex.Conversing()
	got, err := c.Template(false, Extras{Model: "gpt-5.5", Converse: true, Sandbox: true, Args: []string{"-c", "x=1"}})
	if err != nil || strings.Join(got, " ") != "codex app-server -c x=1" {
		t.Errorf("codex --converse: %q, %v", got, err)
	}
	if c.Format != FormatCodexServer || c.Stdin != StdinACP || len(c.Resume) != 0 || !c.TakesModel() {
		t.Errorf("codex --converse: format %s, stdin %s, resume %q, takes a model %v", c.Format, c.Stdin, c.Resume, c.TakesModel())
	}
	if codex.Format != "codex" || codex.Start[1] != "exec" {
		t.Error("Conversing changed the built-in codex")
	}
	if codex.OnTTY().ConverseMode() != "" {
		t.Error("codex on a terminal still converses through its app-server")
	}
}

func TestPromptWays(t *testing.T) {
	kinds := Builtins()
	for _, name := range []string{"claude", "codex", "opencode", "gemini"} {
		if k := kinds[name]; k.PromptVia() != "stdin" || !k.NeedsPrompt() || NeedsPrompt(k.Start) || NeedsPrompt(k.Resume) {
			t.Errorf("%s: the prompt goes %q; want stdin only, never argv", name, k.PromptVia())
		}
	}
	if k := kinds[Exec]; k.PromptVia() != "env" || !k.TakesPrompt() || k.NeedsPrompt() {
		t.Errorf("exec takes its prompt %q", k.PromptVia())
	}
	none := &Kind{Name: "x", Start: []string{"x"}, Stdin: StdinNone}
	if none.TakesPrompt() || none.PromptVia() != "" {
		t.Error("a kind without $AGT_PROMPT and without stdin takes a prompt")
	}
	argv := &Kind{Name: "x", Start: []string{"x", "--file", "$AGT_PROMPT_FILE"}, Stdin: StdinNone}
	if !argv.TakesPrompt() || argv.PromptVia() != "argv" {
		t.Error("a kind with $AGT_PROMPT_FILE does not take its prompt")
	}
}

func TestBuiltinsTokensAreKnown(t *testing.T) {
	for name, k := range Builtins() {
		if err := k.CheckTokens(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func write(t *testing.T, path, s string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadPrecedence(t *testing.T) {
	home := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "cfg"))
	write(t, filepath.Join(home, "cfg", "agt", "config.toml"), `
idle_after = "1s"
stale_after = "2m"
[agents.claude]
env = { FROM = "user" }
`)
	proj := filepath.Join(home, "proj")
	write(t, filepath.Join(proj, "agt.toml"), `
idle_after = "9s"
[agents.claude]
display_name = "Project Claude"
[workspace]
mode = "git"
setup = [["make", "deps"]]
`)
	c, err := Load(filepath.Join(proj, "sub", "dir"))
	if err != nil {
		t.Fatal(err)
	}
	if c.IdleAfter != 9*time.Second || c.StaleAfter != 2*time.Minute || c.StopTimeout != DefaultStopTimeout {
		t.Errorf("timings %v %v %v", c.IdleAfter, c.StaleAfter, c.StopTimeout)
	}
	k := c.Kinds["claude"]
	if k.DisplayName != "Project Claude" || k.Env["FROM"] != "user" || k.Builtin || len(k.Start) == 0 {
		t.Errorf("claude merged wrong: %+v", k)
	}
	if c.Workspace.Mode != "git" || len(c.Workspace.Setup) != 1 || c.Workspace.BranchPrefix != "agt/" {
		t.Errorf("workspace %+v", c.Workspace)
	}
	if len(c.Files) != 2 {
		t.Errorf("files %q", c.Files)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct{ file, want string }{
		{"[agents.x]\nstart = [\"a\"\n", "agt.toml:2:"},
		{"idle_after = \"soon\"\n", "want a duration"},
		{"idle_after = \"-1s\"\n", "must not be negative"},
		{"[agents.x]\nformat = \"text\"\n", "needs start"},
		{"[agents.X]\nstart = [\"a\"]\n", "a kind name is"},
		{"[agents.x]\nstart = [\"a\"]\nstdin = \"tty\"\n", `stdin "tty"`},
		{"default_agent = \"nope\"\n", `default_agent "nope" is not a kind`},
		{"[workspace]\nmode = \"svn\"\n", `workspace.mode "svn"`},
		{"[workspace]\nsetup = [[]]\n", "workspace.setup[0] is empty"},
		{"bogus = 1\n", "agt.toml:1: unknown key bogus"},
		{"\nmax_agents = \"3\"\n", "agt.toml:2: max_agents: a TOML string where an integer is wanted"},
		{"[agents]\nx = 1\n", "agt.toml:2: agents.x: a TOML integer where a table is wanted"},
		{"idle_after = \"soon\"\n", "agt.toml: idle_after: want a duration"},
		{"log_max_size = 1.5\n", "log_max_size: want a size"},
		{"log_max_size = \"1x\"\n", "log_max_size: want a size"},
		{"sandbox = \"docker\"\n", `agt.toml sandbox "docker": want bwrap or none`},
		{"sandbox_net = \"wifi\"\n", `sandbox_net "wifi": want on or none`},
		{"sandbox_rw = [\"relative/dir\"]\n", `sandbox_rw path "relative/dir": want an absolute path`},
		{"[agents.claude]\nsandbox_ro = [\"x\"]\n", `[agents.claude] sandbox_ro path "x"`},
		{"[agents.claude]\nsandbox = 1\n", "agents.claude.sandbox: a TOML integer where a string is wanted"},
		{"sandbox_paths = []\n", "unknown key sandbox_paths"},
	}
	for _, tt := range tests {
		dir := t.TempDir()
		t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "none"))
		write(t, filepath.Join(dir, "agt.toml"), tt.file)
		_, err := Load(dir)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: err %v, want %q", tt.file, err, tt.want)
		}
	}
}

func TestLogMaxSize(t *testing.T) {
	for file, want := range map[string]int64{
		"log_max_size = 4096\n":      4096,
		"log_max_size = \"64MiB\"\n": 64 << 20,
		"log_max_size = \"2 KiB\"\n": 2048,
		"":                           DefaultLogMaxSize,
	} {
		dir := t.TempDir()
		t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "none"))
		write(t, filepath.Join(dir, "agt.toml"), file)
		c, err := Load(dir)
		if err != nil || c.LogMaxSize != want {
			t.Errorf("%q: LogMaxSize %d, %v; want %d", file, c.LogMaxSize, err, want)
		}
	}
}

// A hook's path with a slash is relative to the file that names it, as workspace.root is: the
// same hook runs from any directory of the project. A bare name stays for $PATH.
func TestOnStateRelativeToFile(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	proj := t.TempDir()
	write(t, filepath.Join(proj, "agt.toml"), "on_state = [\"./hooks/notify\", \"./arg\"]\n")
	c, err := Load(filepath.Join(proj, "sub", "dir"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Join(proj, "hooks", "notify"), "./arg"}; !reflect.DeepEqual(c.OnState, want) {
		t.Errorf("on_state = %q, want %q", c.OnState, want)
	}
	write(t, filepath.Join(proj, "agt.toml"), "on_state = [\"notify-send\"]\n")
	if c, err = Load(proj); err != nil || c.OnState[0] != "notify-send" {
		t.Errorf("a bare name: %q, %v", c.OnState, err)
	}
}
