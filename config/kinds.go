package config

import (
	"fmt"
	"os/exec"
	"slices"
	"sort"
	"strings"

	"agt/stream"
)

// Formats a kind's stdout can be in: those package stream has a decoder for.
var Formats = stream.Formats()

// FormatACP is the Agent Client Protocol: agt is the client, over the agent's stdin and stdout.
const FormatACP = "acp"

// FormatCodexServer is Codex's app-server protocol (codex app-server): agt is its client too.
const FormatCodexServer = "codex-app-server"

// Stdin modes: "none" gives the agent /dev/null (Codex and opencode hang on an open pipe);
// "prompt" gives it the prompt as a file it reads to the end, which keeps the prompt out of the
// process table (argv is readable by every local user); "stream-json" keeps a pipe open and
// writes the prompt to it as a Claude stream-json user message, so the agent serves turn after
// turn and waits for input between them. "acp" is no mode to choose: every kind whose format is
// a protocol (acp, codex-app-server: stream.IsProtocol) has it (the protocol's pipe, kept open;
// prompts and answers are its requests).
var StdinModes = []string{"none", "prompt", "stream-json"}

// Stdin modes by name.
const (
	StdinNone       = "none"
	StdinPrompt     = "prompt"
	StdinStreamJSON = "stream-json"
	StdinACP        = "acp"
)

// StdinConverses reports whether a stdin mode is a conversation on a pipe kept open: messages
// and permission answers are written there.
func StdinConverses(stdin string) bool { return stdin == StdinStreamJSON || stdin == StdinACP }

// Kind describes one kind of agent: how to start it, how to resume its session, how it takes
// the prompt and what its output looks like. Argv templates hold $AGT_* tokens (see Tokens),
// substituted without a shell, and at most one $AGT_ARGS element, where the model, plan and
// --arg arguments go (at the end when there is none).
type Kind struct {
	Name        string   `json:"name"`
	DisplayName string   `json:"display_name"`
	Start       []string `json:"start"`
	Resume      []string `json:"resume,omitempty"`
	ModelArgs   []string `json:"model_args,omitempty"`
	PlanArgs    []string `json:"plan_args,omitempty"`
	// AutoArgs let the agent use its tools unattended (Gemini offers no shell tool headless
	// without them); given unless --plan, whose plan_args take their place.
	AutoArgs []string `json:"auto_args,omitempty"`
	// ConverseArgs make the agent a conversation: turn after turn as user messages on stdin
	// (stdin becomes stream-json), permission requests asked there. Converse makes every spawn
	// of the kind one.
	ConverseArgs []string          `json:"converse_args,omitempty"`
	Converse     bool              `json:"converse,omitempty"`
	Format       string            `json:"format"`
	Stdin        string            `json:"stdin"`
	Env          map[string]string `json:"env,omitempty"`
	ResumePrompt string            `json:"resume_prompt,omitempty"`
	Builtin      bool              `json:"builtin"`
	// SessionUUID: agt gives the agent a fresh UUID as $AGT_SESSION_ID at spawn, so its
	// session is known before it speaks (Claude's --session-id).
	SessionUUID bool `json:"session_uuid,omitempty"`
	// ConverseStart, when set, is what a conversation of the kind runs instead: a program
	// that speaks the protocol ConverseFormat on its stdin and stdout (Codex's app-server),
	// through which prompts, permission answers and resumes go. One-shot runs keep Start.
	ConverseStart  []string `json:"converse_start,omitempty"`
	ConverseFormat string   `json:"converse_format,omitempty"`
	// SessionFile is where the agent saves its session $AGT_SESSION_ID: a glob with ~ and
	// ${VAR:-default} as in sandbox paths. A restart resumes a session whose file is there,
	// though agt saw no reply in it (a terminal agent's replies are on its screen alone).
	SessionFile string `json:"session_file,omitempty"`
	// ForgetsInterrupted: the agent keeps nothing of a turn that agt interrupted, not even its
	// prompt (gemini --acp): agt sends that prompt again, before the next message.
	ForgetsInterrupted bool `json:"forgets_interrupted,omitempty"`
	// Install is the command that installs the kind's program, for the error when it is missing.
	Install string `json:"install,omitempty"`
	// TTY runs every spawn of the kind on a terminal of its own (spawn --tty): the agent's own
	// full-screen interface, for agt attach. TTYStart and TTYResume are its argv there (the
	// interactive program, no output format); without them, Start and Resume.
	TTY       bool     `json:"tty,omitempty"`
	TTYStart  []string `json:"tty_start,omitempty"`
	TTYResume []string `json:"tty_resume,omitempty"`
	// InputScreen and PermissionScreen are regular expressions over the last lines of a
	// terminal agent's screen: when it falls quiet showing one, it waits for input or for a
	// permission instead of plain quiet.
	InputScreen      string `json:"input_screen,omitempty"`
	PermissionScreen string `json:"permission_screen,omitempty"`
	// BusyScreen, RetryScreen and ErrorScreen are regular expressions over the whole screen:
	// one that shows the agent at work though its screen stands still but for a spinner
	// (running, however long it is quiet; stalled past stall_after); one that shows it
	// retrying a failed model request (running, reason retrying; its groups
	// msg and attempt, when it has them, the message and the attempt), and one that shows a
	// failure the agent gave up on (its group msg the message: an error event, and the status's
	// error, while the screen shows it).
	BusyScreen  string `json:"busy_screen,omitempty"`
	RetryScreen string `json:"retry_screen,omitempty"`
	ErrorScreen string `json:"error_screen,omitempty"`
	// Sandbox and SandboxNet, when set, override the top-level sandbox and sandbox_net for
	// the kind (see Config). SandboxRW and SandboxRO are the paths an agent of the kind reads
	// and writes, or only reads, inside a sandbox besides its workspace, in the form
	// sandbox.Resolve takes; agt.toml adds to them. SandboxArgs are given inside a sandbox,
	// unless --plan: the flags that skip the kind's permission prompts, since the sandbox is
	// the boundary.
	Sandbox     string   `json:"sandbox,omitempty"`
	SandboxNet  string   `json:"sandbox_net,omitempty"`
	SandboxRW   []string `json:"sandbox_rw,omitempty"`
	SandboxRO   []string `json:"sandbox_ro,omitempty"`
	SandboxArgs []string `json:"sandbox_args,omitempty"`
}

// OpencodeAsks is opencode's permission configuration (OPENCODE_PERMISSION) under which it asks
// before every edit, command and fetch.
const OpencodeAsks = `{"edit":"ask","bash":"ask","webfetch":"ask"}`

// Exec is the kind of any command given after --.
const Exec = "exec"

// DefaultResumePrompt is sent to kinds that need a prompt to resume a session.
const DefaultResumePrompt = "Continue where you left off."

// Builtins returns the built-in kinds, fresh each call.
func Builtins() map[string]*Kind {
	return map[string]*Kind{
		"claude": {
			Name: "claude", DisplayName: "Claude Code", Builtin: true, Format: "claude", Stdin: StdinPrompt,
			Install:   "npm i -g @anthropic-ai/claude-code",
			Start:     []string{"claude", "--output-format", "stream-json", "--verbose", "--include-partial-messages", "--session-id", "$AGT_SESSION_ID", "$AGT_ARGS", "-p"},
			Resume:    []string{"claude", "--output-format", "stream-json", "--verbose", "--include-partial-messages", "--resume", "$AGT_SESSION_ID", "$AGT_ARGS", "-p"},
			ModelArgs: []string{"--model", "$AGT_MODEL"},
			PlanArgs:  []string{"--permission-mode", "plan"},
			// The Agent SDK's recipe: user turns and permission answers on stdin.
			ConverseArgs: []string{"--input-format", "stream-json", "--permission-prompt-tool", "stdio"},
			SessionUUID:  true,
			// Where it saves them, for a resume of its TUI, which shows no reply as an event.
			SessionFile: "${CLAUDE_CONFIG_DIR:-~/.claude}/projects/*/$AGT_SESSION_ID.jsonl",
			// Its TUI opens in auto mode since 2.1.332, where it asks about nothing: in the mode
			// that asks, its permission boxes come, and the state says so (a later
			// --permission-mode, --plan's, wins).
			TTYStart:  []string{"claude", "--permission-mode", "default", "--session-id", "$AGT_SESSION_ID", "$AGT_ARGS"},
			TTYResume: []string{"claude", "--permission-mode", "default", "--resume", "$AGT_SESSION_ID", "$AGT_ARGS"},
			// Its permission box asks "Do you want to proceed?" (or to make an edit, create a
			// file) above numbered choices; its input box has "? for shortcuts" below it, or
			// (2.1.332, in auto mode; or in bypass permissions mode, in a sandbox) the mode and
			// "shift+tab to cycle".
			PermissionScreen: `Do you want to (proceed|make this edit|create|allow)`,
			InputScreen:      `\? for shortcuts|shift\+tab to cycle`,
			// 2.1.332 retries a failed request under its spinner ("✻ 401 invalid x-api-key ·
			// retrying in 8s · attempt 6/10"), and shows what it gave up on under the prompt
			// ("⎿  Invalid API key · Fix external API key", "⎿  API Error: 500 …").
			BusyScreen:  `esc to interrupt`,
			RetryScreen: `(?m)^\S+[ \x{a0}]+(?P<msg>[^\n]+?) · retrying in \d+s · attempt (?P<attempt>\d+)/\d+`,
			ErrorScreen: `(?m)^ *⎿[ \x{a0}]+(?P<msg>(?:API Error|Invalid API key|Credit balance is too low|Request timed out|Prompt is too long)[^\n]*)`,
			// Inside a sandbox: its files, and no permission prompts.
			SandboxRW: claudeFiles, SandboxArgs: []string{"--dangerously-skip-permissions"},
		},
		"codex": {
			Name: "codex", DisplayName: "Codex", Builtin: true, Format: "codex", Stdin: StdinPrompt,
			Install: "npm i -g @openai/codex",
			Start:   []string{"codex", "exec", "--json", "--skip-git-repo-check", "$AGT_ARGS"},
			// codex exec never asks (its policy is never): a conversation goes through the
			// app-server, which asks for approvals, takes a message into a running turn and
			// resumes threads.
			ConverseStart: []string{"codex", "app-server", "$AGT_ARGS"}, ConverseFormat: FormatCodexServer,
			TTYStart:  []string{"codex", "$AGT_ARGS"},
			Resume:    []string{"codex", "exec", "--json", "--skip-git-repo-check", "$AGT_ARGS", "resume", "$AGT_SESSION_ID"},
			ModelArgs: []string{"-m", "$AGT_MODEL"},
			// Inside a sandbox: its files, and no approvals (nor a sandbox of its own).
			SandboxRW: codexFiles, SandboxArgs: []string{"--dangerously-bypass-approvals-and-sandbox"},
		},
		"opencode": {
			Name: "opencode", DisplayName: "opencode", Builtin: true, Format: "opencode", Stdin: StdinPrompt,
			Install: "npm i -g opencode-ai",
			// Its log on stderr: the stream says only "Unexpected server error" for an unknown
			// model, its log says ProviderModelNotFoundError; and its stdout is silent until a
			// step ends, where its log tells of the session it opened and each model request
			// it retries (stream/opencode_log.go).
			Start:     []string{"opencode", "run", "--format", "json", "--print-logs", "--log-level", "INFO", "$AGT_ARGS"},
			TTYStart:  []string{"opencode", "$AGT_ARGS"},
			Resume:    []string{"opencode", "run", "--format", "json", "--print-logs", "--log-level", "INFO", "--session", "$AGT_SESSION_ID", "$AGT_ARGS"},
			ModelArgs: []string{"-m", "$AGT_MODEL"},
			PlanArgs:  []string{"--agent", "plan"},
			// Inside a sandbox: its files, and every permission approved.
			SandboxRW: opencodeFiles, SandboxArgs: []string{"--auto"},
		},
		"gemini": {
			Name: "gemini", DisplayName: "Gemini CLI", Builtin: true, Format: "gemini", Stdin: StdinPrompt,
			Install:   "npm i -g @google/gemini-cli",
			Start:     []string{"gemini", "-o", "stream-json", "$AGT_ARGS"},
			TTYStart:  []string{"gemini", "$AGT_ARGS"},
			Resume:    []string{"gemini", "-o", "stream-json", "--resume", "$AGT_SESSION_ID", "$AGT_ARGS"},
			ModelArgs: []string{"-m", "$AGT_MODEL"},
			PlanArgs:  []string{"--approval-mode", "plan"},
			AutoArgs:  []string{"--approval-mode", "yolo"},
			// Every agt workspace is a directory Gemini has never been told to trust.
			Env: map[string]string{"GEMINI_CLI_TRUST_WORKSPACE": "true"},
			// Inside a sandbox: its files (auto_args approve everything already).
			SandboxRW: geminiFiles,
		},
		// ACP agents: agt is the client of the protocol; sessions resume by it (session/load).
		"gemini-acp": {
			Name: "gemini-acp", DisplayName: "Gemini CLI (ACP)", Builtin: true, Format: FormatACP, Stdin: StdinACP,
			Start: []string{"gemini", "--acp", "$AGT_ARGS"}, ModelArgs: []string{"-m", "$AGT_MODEL"},
			Env:     map[string]string{"GEMINI_CLI_TRUST_WORKSPACE": "true"},
			Install: "npm i -g @google/gemini-cli", SandboxRW: geminiFiles,
			// session/cancel drops the turn's prompt from its history.
			ForgetsInterrupted: true,
		},
		"opencode-acp": {
			Name: "opencode-acp", DisplayName: "opencode (ACP)", Builtin: true, Format: FormatACP, Stdin: StdinACP,
			// Its log on stderr is where a retried model request shows (opencode_retry.go).
			Start:   []string{"opencode", "acp", "--print-logs", "--log-level", "ERROR", "$AGT_ARGS"},
			Install: "npm i -g opencode-ai",
			// opencode runs its tools without asking unless told to ask, and its ACP session has
			// no mode to set: agt answers its permissions, so it asks for each.
			Env:       map[string]string{"OPENCODE_PERMISSION": OpencodeAsks},
			SandboxRW: opencodeFiles,
		},
		"claude-acp": {
			// The adapter runs Claude Code through the Agent SDK (its own copy of the binary).
			// It was @zed-industries/claude-code-acp (binary claude-code-acp) until 0.16.2.
			Name: "claude-acp", DisplayName: "Claude Code (ACP adapter)", Builtin: true, Format: FormatACP, Stdin: StdinACP,
			Start: []string{"claude-agent-acp", "$AGT_ARGS"}, Install: "npm i -g @agentclientprotocol/claude-agent-acp",
			SandboxRW: claudeFiles,
		},
		"codex-acp": {
			Name: "codex-acp", DisplayName: "Codex (ACP adapter)", Builtin: true, Format: FormatACP, Stdin: StdinACP,
			Start: []string{"codex-acp", "$AGT_ARGS"}, Install: "npm i -g @zed-industries/codex-acp",
			SandboxRW: codexFiles,
		},
		Exec: {
			Name: Exec, DisplayName: "any command", Builtin: true, Format: "text", Stdin: "none",
		},
	}
}

// What the built-in kinds keep in the home directory (their settings, logins and sessions),
// read-write inside a sandbox. A trailing / is a directory made when missing, so that what
// the agent keeps there outlives the sandbox; a trailing ? a file bound when it exists.
var (
	claudeFiles   = []string{"${CLAUDE_CONFIG_DIR:-~/.claude}/", "~/.claude.json?"}
	codexFiles    = []string{"${CODEX_HOME:-~/.codex}/"}
	geminiFiles   = []string{"~/.gemini/"}
	opencodeFiles = []string{"${XDG_CONFIG_HOME:-~/.config}/opencode/", "${XDG_DATA_HOME:-~/.local/share}/opencode/",
		"${XDG_STATE_HOME:-~/.local/state}/opencode/", "${XDG_CACHE_HOME:-~/.cache}/opencode/"}
)

// Tokens are the $AGT_* names agt substitutes in argv and exports to the agent.
var Tokens = []string{"AGT_NAME", "AGT_PROMPT", "AGT_PROMPT_FILE", "AGT_MODEL", "AGT_SESSION_ID", "AGT_WORKSPACE", "AGT_RUN_DIR"}

// argsToken marks where the model, plan and --arg arguments go in an argv template.
const argsToken = "$AGT_ARGS"

// Extras are the optional arguments of one spawn.
type Extras struct {
	Model    string
	Plan     bool
	Converse bool
	Sandbox  bool     // the agent runs in a sandbox: sandbox_args too, unless Plan
	Args     []string // --arg values, taken literally
}

// OnTTY returns the kind as spawn --tty runs it: its terminal argv as start and resume (no
// resume when it has only a start for the terminal), a terminal's text for output, and the
// terminal for input.
func (k *Kind) OnTTY() *Kind {
	t := *k
	if len(k.TTYStart) > 0 {
		t.Start, t.Resume = k.TTYStart, k.TTYResume
	}
	t.Format, t.Stdin, t.ConverseArgs, t.Converse, t.ConverseStart = "text", StdinNone, nil, false, nil
	t.SessionUUID = uses(t.Start, "AGT_SESSION_ID")
	return &t
}

// Template returns the argv template of a start (resume false) or a resume, with $AGT_ARGS
// replaced by the extras. Tokens are left for Expand.
func (k *Kind) Template(resume bool, x Extras) ([]string, error) {
	tmpl := k.Start
	if resume {
		tmpl = k.Resume
	}
	if len(tmpl) == 0 {
		if resume {
			return nil, fmt.Errorf("agent kind %s cannot resume a session (no resume argv)", k.Name)
		}
		return nil, fmt.Errorf("agent kind %s has no start argv; set start in agt.toml or give the command after --", k.Name)
	}
	var extra []string
	if x.Model != "" && !uses(tmpl, "AGT_MODEL") && !stream.ModelInProtocol(k.Format) {
		if len(k.ModelArgs) == 0 {
			return nil, fmt.Errorf("agent kind %s takes no --model (set model_args in agt.toml)", k.Name)
		}
		extra = append(extra, k.ModelArgs...)
	}
	if x.Plan {
		if len(k.PlanArgs) == 0 {
			return nil, fmt.Errorf("agent kind %s has no plan mode (set plan_args in agt.toml)", k.Name)
		}
		extra = append(extra, k.PlanArgs...)
	} else {
		extra = append(extra, k.AutoArgs...)
		if x.Sandbox {
			extra = append(extra, k.SandboxArgs...)
		}
	}
	if x.Converse {
		extra = append(extra, k.ConverseArgs...)
	}
	// --arg values are the user's own words: protect their $ from substitution.
	for _, a := range x.Args {
		extra = append(extra, escapeTokens(a))
	}
	i := slices.Index(tmpl, argsToken)
	if i < 0 {
		return append(slices.Clone(tmpl), extra...), nil
	}
	out := slices.Clone(tmpl[:i])
	out = append(out, extra...)
	return append(out, tmpl[i+1:]...), nil
}

// How a kind converses (ConverseMode).
const (
	ConverseStdin = "stdin" // one process; messages and permission answers on its stdin
	ConverseTurns = "turns" // a process per turn, each resuming the session with the message
)

// ConverseMode says how the kind can be a conversation: by its stdin (stream-json, or the
// converse_args that make it so), by a process per turn (it resumes a session and reads its
// prompt on stdin), or "" when it cannot.
func (k *Kind) ConverseMode() string {
	switch {
	case StdinConverses(k.Stdin) || len(k.ConverseArgs) > 0 || len(k.ConverseStart) > 0:
		return ConverseStdin
	case len(k.Resume) > 0 && (k.Stdin == StdinPrompt || NeedsPrompt(k.Resume)):
		return ConverseTurns
	}
	return ""
}

// CanConverse reports whether the kind can be a conversation at all.
func (k *Kind) CanConverse() bool { return k.ConverseMode() != "" }

// Conversing returns the kind as a spawn with --converse runs it: stdin stream-json, or its
// converse_start speaking its protocol.
func (k *Kind) Conversing() *Kind {
	if k.Stdin == StdinACP {
		return k // a conversation already
	}
	c := *k
	if len(k.ConverseStart) > 0 {
		// Another program, whose protocol carries the prompts, the answers and the resumes:
		// none of the one-shot argv's arguments apply to it.
		c.Start, c.Format, c.Stdin = k.ConverseStart, k.ConverseFormat, StdinACP
		c.Resume, c.ModelArgs, c.PlanArgs, c.AutoArgs, c.ConverseArgs, c.SandboxArgs = nil, nil, nil, nil, nil, nil
		c.SessionUUID = uses(c.Start, "AGT_SESSION_ID")
		return &c
	}
	c.Stdin = StdinStreamJSON
	return &c
}

// TakesModel reports whether the kind can be told a model: its start argv names $AGT_MODEL, or
// model_args says how.
func (k *Kind) TakesModel() bool {
	return len(k.ModelArgs) > 0 || uses(k.Start, "AGT_MODEL") || stream.ModelInProtocol(k.Format)
}

// NeedsPrompt reports whether an argv template uses the prompt.
func NeedsPrompt(tmpl []string) bool { return uses(tmpl, "AGT_PROMPT") }

// NeedsPrompt reports whether the kind cannot start without a prompt: its argv uses it, or it
// reads it from stdin.
func (k *Kind) NeedsPrompt() bool { return NeedsPrompt(k.Start) || k.Stdin == StdinPrompt }

// TakesPrompt reports whether a prompt reaches the kind: in its argv or on its stdin. A plain
// command (exec) takes one in its environment ($AGT_PROMPT, $AGT_PROMPT_FILE).
func (k *Kind) TakesPrompt() bool {
	return k.Name == Exec || NeedsPrompt(k.Start) || k.Stdin == StdinPrompt || StdinConverses(k.Stdin)
}

// PromptVia says how the kind takes its prompt: "stdin", "argv", "env" (a plain command) or ""
// when it takes none.
func (k *Kind) PromptVia() string {
	switch {
	case k.Stdin == StdinPrompt || StdinConverses(k.Stdin):
		return "stdin"
	case NeedsPrompt(k.Start):
		return "argv"
	case k.Name == Exec:
		return "env"
	}
	return ""
}

// uses reports whether a template holds the token (or one it prefixes: AGT_PROMPT covers
// AGT_PROMPT_FILE).
func uses(tmpl []string, token string) bool {
	for _, a := range tmpl {
		if strings.Contains(a, "$"+token) || strings.Contains(a, "${"+token) {
			return true
		}
	}
	return false
}

// Expand substitutes the $AGT_NAME / ${AGT_NAME} tokens of each element with vals. An unknown
// $AGT_ token is an error; "$$" stands for a literal "$".
func Expand(tmpl []string, vals map[string]string) ([]string, error) {
	out := make([]string, len(tmpl))
	for i, a := range tmpl {
		s, err := expandOne(a, vals)
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

func expandOne(s string, vals map[string]string) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '$' {
			b.WriteByte('$')
			i++
			continue
		}
		name, n := tokenAt(s[i+1:])
		if !strings.HasPrefix(name, "AGT_") {
			b.WriteByte('$') // not ours: leave it as it is
			continue
		}
		v, ok := vals[name]
		if !ok {
			return "", fmt.Errorf("unknown token $%s in %q; known tokens: $%s", name, s, strings.Join(Tokens, ", $"))
		}
		b.WriteString(v)
		i += n
	}
	return b.String(), nil
}

// tokenAt reads NAME or {NAME} at the start of s, returning the name and the bytes it took.
func tokenAt(s string) (string, int) {
	if strings.HasPrefix(s, "{") {
		if j := strings.IndexByte(s, '}'); j > 0 {
			return s[1:j], j + 1
		}
		return "", 0
	}
	j := 0
	for j < len(s) && (s[j] == '_' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= '0' && s[j] <= '9') {
		j++
	}
	return s[:j], j
}

func escapeTokens(s string) string { return strings.ReplaceAll(s, "$", "$$") }

// CheckTokens reports an unknown $AGT_ token in any template of k.
func (k *Kind) CheckTokens() error {
	vals := map[string]string{}
	for _, t := range Tokens {
		vals[t] = ""
	}
	for _, tmpl := range [][]string{k.Start, k.Resume, k.ModelArgs, k.PlanArgs, k.AutoArgs, k.ConverseArgs, k.ConverseStart, k.TTYStart, k.TTYResume, k.SandboxArgs} {
		for _, a := range tmpl {
			if a == argsToken {
				continue
			}
			if _, err := expandOne(a, vals); err != nil {
				return fmt.Errorf("agent kind %s: %w", k.Name, err)
			}
		}
	}
	return nil
}

// Binary returns the program a kind runs (the first element of its start argv), "" for exec.
func (k *Kind) Binary() string {
	if len(k.Start) == 0 {
		return ""
	}
	return k.Start[0]
}

// Installed reports whether the kind's program is on PATH (true for exec, which has none).
func (k *Kind) Installed() bool {
	b := k.Binary()
	if b == "" {
		return true
	}
	_, err := exec.LookPath(b)
	return err == nil
}

// Names returns the sorted names of kinds.
func Names(kinds map[string]*Kind) []string {
	names := make([]string, 0, len(kinds))
	for n := range kinds {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
