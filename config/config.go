// Package config resolves agent kinds — the built-ins (claude, codex, opencode, gemini, exec)
// and those described in agt.toml — and agt's defaults, and substitutes $AGT_* tokens in argv.
//
// Invariants: the project file (agt.toml or .agt/config.toml, found walking up from the working
// directory) overrides the user file ($XDG_CONFIG_HOME/agt/config.toml), which overrides the
// built-ins; a broken file, an unknown key or an unknown token is an error naming the file (and
// line where the parser knows it), never silently ignored.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	toml "github.com/pelletier/go-toml/v2"

	"agt/stream"
)

// Config is everything agt.toml can set, merged over the defaults.
type Config struct {
	DefaultAgent string
	IdleAfter    time.Duration
	StaleAfter   time.Duration
	StallAfter   time.Duration
	StopTimeout  time.Duration
	// ConnectTimeout bounds the wait for an ACP agent's answer to initialize.
	ConnectTimeout time.Duration
	Restart        Restart
	MaxAgents      int           // 0: no cap
	Policy         Policy        // permission requests answered without asking (allow, deny)
	MaxCost        float64       // an agent's budget in USD; 0: none
	OnState        []string      // the hook run at each change of state
	HookTimeout    time.Duration // its bound
	MaxCostTotal   float64       // the run directory's: spawn and send refuse past it; 0: none
	LogMaxSize     int64         // bytes at which events.ndjson (and a terminal agent's tty.log) rotates
	DetachKeys     string        // the keys that detach agt attach, such as "ctrl-\\"
	Notify         Notify        // [notify]: desktop, webhook, bell
	Workspace      Workspace
	Sandbox        Sandbox
	Kinds          map[string]*Kind
	Hosts          map[string]Host // the [hosts] table: machines reached over ssh
	Files          []string        // the files read, user file first

	Engines map[string]Engine // the [engines] table: agents as jobs of a cluster engine
}

// Restart is the restart policy: restart (on-failure, always, never), max_restarts and the
// backoff timings.
type Restart struct {
	Policy       string
	PolicySet    bool // a file set the policy (spawn --wait otherwise runs once)
	MaxRestarts  int
	Delay        time.Duration // the first delay; it doubles
	MaxDelay     time.Duration
	HealthyAfter time.Duration // a run this long resets the count
}

// Workspace holds the [workspace] table.
type Workspace struct {
	Mode         string     // auto, jj, git, none
	ModeSet      bool       // a file set the mode: plain commands get workspaces as it says
	Root         string     // where workspaces go; default a sibling <repo>-agt/
	BranchPrefix string     // git branch prefix, default agt/
	Setup        [][]string // commands run in a new workspace before the agent starts
	Copy         []string   // untracked files copied into a new workspace
}

// file is the shape of one config file.
type file struct {
	DefaultAgent   string              `toml:"default_agent"`
	IdleAfter      *string             `toml:"idle_after"`
	StaleAfter     *string             `toml:"stale_after"`
	StallAfter     *string             `toml:"stall_after"`
	StopTimeout    *string             `toml:"stop_timeout"`
	ConnectTimeout *string             `toml:"connect_timeout"`
	Restart        string              `toml:"restart"`
	MaxRestarts    *int                `toml:"max_restarts"`
	RestartDelay   *string             `toml:"restart_delay"`
	RestartMax     *string             `toml:"restart_max_delay"`
	HealthyAfter   *string             `toml:"healthy_after"`
	MaxAgents      *int                `toml:"max_agents"`
	Allow          []string            `toml:"allow"`
	MaxCost        *float64            `toml:"max_cost"`
	OnState        []string            `toml:"on_state"`
	HookTimeout    *string             `toml:"hook_timeout"`
	MaxCostTotal   *float64            `toml:"max_cost_total"`
	Deny           []string            `toml:"deny"`
	LogMaxSize     any                 `toml:"log_max_size"` // a size string or a number of bytes
	DetachKeys     *string             `toml:"detach_keys"`
	Notify         *notifyTable        `toml:"notify"`
	Workspace      *workspaceTable     `toml:"workspace"`
	Agents         map[string]kindFile `toml:"agents"`
	Hosts          map[string]any      `toml:"hosts"` // a destination string or a table each: see Host
	sandboxKeys
	engineKeys
}

type workspaceTable struct {
	Mode         string     `toml:"mode"`
	Root         string     `toml:"root"`
	BranchPrefix string     `toml:"branch_prefix"`
	Setup        [][]string `toml:"setup"`
	Copy         []string   `toml:"copy"`
}

type kindFile struct {
	DisplayName  *string           `toml:"display_name"`
	Start        []string          `toml:"start"`
	Resume       []string          `toml:"resume"`
	ModelArgs    []string          `toml:"model_args"`
	PlanArgs     []string          `toml:"plan_args"`
	AutoArgs     []string          `toml:"auto_args"`
	ConverseArgs []string          `toml:"converse_args"`
	Converse     *bool             `toml:"converse"`
	Format       *string           `toml:"format"`
	Stdin        *string           `toml:"stdin"`
	Env          map[string]string `toml:"env"`
	ResumePrompt *string           `toml:"resume_prompt"`
	TTY          *bool             `toml:"tty"`
	TTYStart     []string          `toml:"tty_start"`
	TTYResume    []string          `toml:"tty_resume"`
	InputScreen  *string           `toml:"input_screen"`
	PermScreen   *string           `toml:"permission_screen"`
	sandboxKeys
	SandboxArgs []string `toml:"sandbox_args"`
	// converse_start and converse_format: a conversation runs another program, speaking a
	// protocol (Kind.ConverseStart).
	ConverseStart  []string `toml:"converse_start"`
	ConverseFormat *string  `toml:"converse_format"`
	// busy_screen, retry_screen and error_screen: Kind.BusyScreen and the rest.
	BusyScreen  *string `toml:"busy_screen"`
	RetryScreen *string `toml:"retry_screen"`
	ErrorScreen *string `toml:"error_screen"`
}

// Restart policies.
const (
	RestartOnFailure = "on-failure"
	RestartAlways    = "always"
	RestartNever     = "never"
)

// ValidRestart checks a policy name.
func ValidRestart(policy string) error {
	switch policy {
	case RestartOnFailure, RestartAlways, RestartNever:
		return nil
	}
	return fmt.Errorf("restart policy %q: want on-failure, always or never", policy)
}

// Defaults of the restart policy (RELIABILITY.md R17).
var DefaultRestart = Restart{
	Policy: RestartOnFailure, MaxRestarts: 5,
	Delay: time.Second, MaxDelay: 30 * time.Second, HealthyAfter: 10 * time.Minute,
}

// ProjectFiles are the names of the project file, tried in each directory walking up.
var ProjectFiles = []string{"agt.toml", filepath.Join(".agt", "config.toml")}

// Load reads the user file and the project file found from dir, over the built-ins.
func Load(dir string) (*Config, error) {
	c := &Config{
		IdleAfter: DefaultIdleAfter, StaleAfter: DefaultStaleAfter, StallAfter: DefaultStallAfter, StopTimeout: DefaultStopTimeout,
		ConnectTimeout: DefaultConnectTimeout,
		Restart:        DefaultRestart, LogMaxSize: DefaultLogMaxSize,
		Workspace: Workspace{Mode: "auto", BranchPrefix: "agt/"},
		Notify:    Notify{Bell: true, MinInterval: DefaultNotifyInterval},
		Sandbox:   DefaultSandbox(),
		Kinds:     Builtins(),
	}
	var paths []string
	if p := userFile(); p != "" {
		paths = append(paths, p)
	}
	if p := findProjectFile(dir); p != "" {
		paths = append(paths, p)
	}
	for _, p := range paths {
		if err := c.merge(p); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func userFile() string {
	base := os.Getenv("XDG_CONFIG_HOME")
	if base == "" || !filepath.IsAbs(base) {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		base = filepath.Join(home, ".config")
	}
	p := filepath.Join(base, "agt", "config.toml")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

func findProjectFile(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		for _, name := range ProjectFiles {
			p := filepath.Join(d, name)
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
				return p
			}
		}
		if parent := filepath.Dir(d); parent == d {
			return ""
		}
	}
}

// merge reads one file over c.
func (c *Config) merge(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("read config %s: %w", path, err)
	}
	var f file
	dec := toml.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		var missing *toml.StrictMissingError
		if errors.As(err, &missing) && len(missing.Errors) > 0 {
			e := &missing.Errors[0]
			line, _ := e.Position()
			return fmt.Errorf("%s:%d: unknown key %s", path, line, strings.Join(e.Key(), "."))
		}
		var de *toml.DecodeError
		if errors.As(err, &de) {
			line, _ := de.Position()
			msg := strings.TrimPrefix(de.Error(), "toml: ")
			// "cannot decode TOML string into struct field config.file.X of type int", or "… into config.kindFile"
			if got, rest, ok := strings.Cut(strings.TrimPrefix(msg, "cannot decode TOML "), " into "); ok && len(de.Key()) > 0 {
				want := rest
				if _, t, ok := strings.Cut(rest, " of type "); ok {
					want = t
				}
				msg = fmt.Sprintf("%s: a TOML %s where %s is wanted", strings.Join(de.Key(), "."), got, tomlType(want))
			}
			return fmt.Errorf("%s:%d: %s", path, line, msg)
		}
		return fmt.Errorf("%s: %s", path, strings.TrimPrefix(err.Error(), "toml: "))
	}
	c.Files = append(c.Files, path)
	if f.DefaultAgent != "" {
		c.DefaultAgent = f.DefaultAgent
	}
	for _, kv := range []struct {
		key  string
		text *string
		dst  *time.Duration
	}{
		{"idle_after", f.IdleAfter, &c.IdleAfter}, {"stale_after", f.StaleAfter, &c.StaleAfter},
		{"stall_after", f.StallAfter, &c.StallAfter},
		{"hook_timeout", f.HookTimeout, &c.HookTimeout},
		{"stop_timeout", f.StopTimeout, &c.StopTimeout}, {"connect_timeout", f.ConnectTimeout, &c.ConnectTimeout},
		{"restart_delay", f.RestartDelay, &c.Restart.Delay},
		{"restart_max_delay", f.RestartMax, &c.Restart.MaxDelay}, {"healthy_after", f.HealthyAfter, &c.Restart.HealthyAfter},
	} {
		if kv.text != nil {
			d, err := parseDuration(*kv.text)
			if err != nil {
				return fmt.Errorf("%s: %s: %v", path, kv.key, err)
			}
			*kv.dst = d
		}
	}
	if err := c.Notify.merge(path, f.Notify); err != nil {
		return err
	}
	if f.DetachKeys != nil {
		if _, err := ParseDetachKeys(*f.DetachKeys); err != nil {
			return fmt.Errorf("%s: detach_keys: %v", path, err)
		}
		c.DetachKeys = *f.DetachKeys
	}
	if f.Restart != "" {
		if err := ValidRestart(f.Restart); err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
		c.Restart.Policy, c.Restart.PolicySet = f.Restart, true
	}
	if f.MaxRestarts != nil {
		if *f.MaxRestarts < 0 {
			return fmt.Errorf("%s: max_restarts %d must not be negative", path, *f.MaxRestarts)
		}
		c.Restart.MaxRestarts = *f.MaxRestarts
	}
	if f.LogMaxSize != nil {
		var n int64
		var err error
		switch v := f.LogMaxSize.(type) {
		case int64:
			n, err = parseSize(strconv.FormatInt(v, 10))
		case string:
			n, err = parseSize(v)
		default:
			err = fmt.Errorf("want a size such as \"64MiB\", got %v", v)
		}
		if err != nil {
			return fmt.Errorf("%s: log_max_size: %v", path, err)
		}
		c.LogMaxSize = n
	}
	for _, rules := range [][]string{f.Allow, f.Deny} {
		for _, r := range rules {
			if _, _, err := ParseRule(r); err != nil {
				return fmt.Errorf("%s: %v", path, err)
			}
		}
	}
	for _, kv := range []struct {
		key string
		v   *float64
		dst *float64
	}{{"max_cost", f.MaxCost, &c.MaxCost}, {"max_cost_total", f.MaxCostTotal, &c.MaxCostTotal}} {
		if kv.v != nil {
			if *kv.v < 0 || math.IsNaN(*kv.v) || math.IsInf(*kv.v, 0) {
				return fmt.Errorf("%s: %s = %v: want a number of USD, 0 or more", path, kv.key, *kv.v)
			}
			*kv.dst = *kv.v
		}
	}
	if f.OnState != nil {
		if len(f.OnState) == 0 || f.OnState[0] == "" {
			return fmt.Errorf("%s: on_state: want a command and its arguments, such as [\"notify-send\", \"agt\"]", path)
		}
		c.OnState = slices.Clone(f.OnState)
		// A path such as ./hooks/notify is the project's: relative to this file, as
		// workspace.root is, not to wherever in the project agt runs (nor to the agent's
		// workspace, where the supervisor runs it). A bare name is looked up in $PATH.
		if p := c.OnState[0]; strings.Contains(p, "/") && !filepath.IsAbs(p) {
			c.OnState[0] = filepath.Join(filepath.Dir(path), p)
		}
	}
	c.Policy.Allow = append(c.Policy.Allow, f.Allow...)
	c.Policy.Deny = append(c.Policy.Deny, f.Deny...)
	if f.MaxAgents != nil {
		if *f.MaxAgents < 0 {
			return fmt.Errorf("%s: max_agents %d must not be negative (0 means no limit)", path, *f.MaxAgents)
		}
		c.MaxAgents = *f.MaxAgents
	}
	if w := f.Workspace; w != nil {
		if w.Mode != "" {
			if !slices.Contains([]string{"auto", "jj", "git", "none"}, w.Mode) {
				return fmt.Errorf("%s: workspace.mode %q: want auto, jj, git or none", path, w.Mode)
			}
			c.Workspace.Mode, c.Workspace.ModeSet = w.Mode, true
		}
		if w.Root != "" {
			c.Workspace.Root = w.Root
			if !filepath.IsAbs(w.Root) {
				c.Workspace.Root = filepath.Join(filepath.Dir(path), w.Root)
			}
		}
		if w.BranchPrefix != "" {
			c.Workspace.BranchPrefix = w.BranchPrefix
		}
		if w.Setup != nil {
			for i, argv := range w.Setup {
				if len(argv) == 0 {
					return fmt.Errorf("%s: workspace.setup[%d] is empty: want an argv such as [\"make\", \"deps\"]", path, i)
				}
			}
			c.Workspace.Setup = w.Setup
		}
		if w.Copy != nil {
			c.Workspace.Copy = w.Copy
		}
	}
	if err := c.Sandbox.merge(path, "", f.sandboxKeys); err != nil {
		return err
	}
	for name, kf := range f.Agents {
		if err := c.mergeKind(path, name, kf); err != nil {
			return err
		}
	}
	if err := c.mergeHosts(path, f.Hosts); err != nil {
		return err
	}
	if err := c.mergeEngines(path, f.Engines); err != nil {
		return err
	}
	if c.DefaultAgent != "" {
		if _, ok := c.Kinds[c.DefaultAgent]; !ok {
			return fmt.Errorf("%s: default_agent %q is not a kind; known: %s", path, c.DefaultAgent, strings.Join(Names(c.Kinds), ", "))
		}
	}
	return nil
}

func (c *Config) mergeKind(path, name string, kf kindFile) error {
	if !validKindName(name) {
		return fmt.Errorf("%s: [agents.%s]: a kind name is 1-63 of a-z 0-9 _ -, starting with a letter", path, name)
	}
	k, ok := c.Kinds[name]
	if !ok {
		k = &Kind{Name: name, DisplayName: name, Format: "text", Stdin: "none"}
		c.Kinds[name] = k
	} else {
		copied := *k
		k = &copied
		k.Builtin = false
		c.Kinds[name] = k
	}
	if kf.DisplayName != nil {
		k.DisplayName = *kf.DisplayName
	}
	if kf.Start != nil {
		k.Start = kf.Start
		k.SessionUUID = false // the built-in's session id flag is gone with its argv
		for _, a := range kf.Start {
			if strings.Contains(a, "$AGT_SESSION_ID") || strings.Contains(a, "${AGT_SESSION_ID}") {
				k.SessionUUID = true
			}
		}
	}
	if kf.Resume != nil {
		k.Resume = kf.Resume
	}
	if kf.ModelArgs != nil {
		k.ModelArgs = kf.ModelArgs
	}
	if kf.PlanArgs != nil {
		k.PlanArgs = kf.PlanArgs
	}
	if kf.AutoArgs != nil {
		k.AutoArgs = kf.AutoArgs
	}
	if kf.ConverseArgs != nil {
		k.ConverseArgs = kf.ConverseArgs
	}
	if kf.Converse != nil {
		k.Converse = *kf.Converse
	}
	if kf.ConverseStart != nil {
		k.ConverseStart = kf.ConverseStart
	}
	if kf.ConverseFormat != nil {
		if !stream.IsProtocol(*kf.ConverseFormat) {
			return fmt.Errorf("%s: [agents.%s] converse_format %q: want a protocol agt speaks: acp, %s", path, name, *kf.ConverseFormat, FormatCodexServer)
		}
		k.ConverseFormat = *kf.ConverseFormat
	}
	if len(k.ConverseStart) > 0 && k.ConverseFormat == "" {
		return fmt.Errorf("%s: [agents.%s] converse_start needs converse_format, the protocol it speaks (acp, %s)", path, name, FormatCodexServer)
	}
	if kf.Format != nil {
		if !slices.Contains(Formats, *kf.Format) {
			return fmt.Errorf("%s: [agents.%s] format %q: want one of %s", path, name, *kf.Format, strings.Join(Formats, ", "))
		}
		k.Format = *kf.Format
	}
	if kf.Stdin != nil && stream.IsProtocol(k.Format) {
		return fmt.Errorf("%s: [agents.%s] stdin %q: an agent of format %s speaks the protocol on its stdin; drop stdin", path, name, *kf.Stdin, k.Format)
	}
	if stream.IsProtocol(k.Format) {
		k.Stdin = StdinACP
	} else if k.Stdin == StdinACP {
		k.Stdin = StdinNone // a built-in ACP kind given another format
	}
	if kf.Stdin != nil {
		if !slices.Contains(StdinModes, *kf.Stdin) {
			return fmt.Errorf("%s: [agents.%s] stdin %q: want one of %s", path, name, *kf.Stdin, strings.Join(StdinModes, ", "))
		}
		k.Stdin = *kf.Stdin
	}
	if kf.Env != nil {
		env := map[string]string{}
		for key, v := range k.Env {
			env[key] = v
		}
		for key, v := range kf.Env {
			if key == "" || strings.ContainsAny(key, "=\x00") {
				return fmt.Errorf("%s: [agents.%s] env: bad variable name %q", path, name, key)
			}
			env[key] = v
		}
		k.Env = env
	}
	if kf.ResumePrompt != nil {
		k.ResumePrompt = *kf.ResumePrompt
	}
	if kf.TTY != nil {
		k.TTY = *kf.TTY
	}
	if kf.TTYStart != nil {
		k.TTYStart, k.TTYResume = kf.TTYStart, nil // the built-in's resume goes with its start
	}
	if kf.TTYResume != nil {
		k.TTYResume = kf.TTYResume
	}
	for _, re := range []struct {
		key string
		v   *string
		dst *string
	}{{"input_screen", kf.InputScreen, &k.InputScreen}, {"permission_screen", kf.PermScreen, &k.PermissionScreen},
		{"busy_screen", kf.BusyScreen, &k.BusyScreen}, {"retry_screen", kf.RetryScreen, &k.RetryScreen},
		{"error_screen", kf.ErrorScreen, &k.ErrorScreen}} {
		if re.v == nil {
			continue
		}
		if _, err := regexp.Compile(*re.v); err != nil {
			return fmt.Errorf("%s: [agents.%s] %s: %v", path, name, re.key, err)
		}
		*re.dst = *re.v
	}
	if err := k.mergeSandbox(path, kf); err != nil {
		return err
	}
	if name != Exec && len(k.Start) == 0 {
		return fmt.Errorf("%s: [agents.%s] needs start, the argv that runs it", path, name)
	}
	if err := k.CheckTokens(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func validKindName(s string) bool {
	if s == "" || len(s) > 63 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Kind returns the named kind, or a clear error listing the known ones.
func (c *Config) Kind(name string) (*Kind, error) {
	k, ok := c.Kinds[name]
	if !ok {
		return nil, fmt.Errorf("unknown agent kind %q; known: %s\nhint: run 'agt agents' to list them, or describe it in agt.toml", name, strings.Join(Names(c.Kinds), ", "))
	}
	return k, nil
}
