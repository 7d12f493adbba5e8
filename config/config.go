// Package config resolves agent kinds — the built-ins (claude, codex, opencode, gemini, exec)
// and those described in agt.toml — and agt's defaults, and substitutes $AGT_* tokens in argv.
//
// Invariants: the project file (agt.toml or .agt/config.toml, found walking up from the working
// directory) overrides the user file ($XDG_CONFIG_HOME/agt/config.toml), which overrides the
// built-ins; a broken file, an unknown key or an unknown token is an error naming the file (and
// line where the parser knows it), never silently ignored.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// Config is everything agt.toml can set, merged over the defaults.
type Config struct {
	DefaultAgent string
	IdleAfter    time.Duration
	StaleAfter   time.Duration
	StopTimeout  time.Duration
	Restart      Restart
	MaxAgents    int   // 0: no cap
	LogMaxSize   int64 // bytes at which events.ndjson rotates
	Workspace    Workspace
	Kinds        map[string]*Kind
	Files        []string // the files read, user file first
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
	Root         string     // where workspaces go; default a sibling <repo>-agt/
	BranchPrefix string     // git branch prefix, default agt/
	Setup        [][]string // commands run in a new workspace before the agent starts
	Copy         []string   // untracked files copied into a new workspace
}

// file is the shape of one config file.
type file struct {
	DefaultAgent string              `toml:"default_agent"`
	IdleAfter    duration            `toml:"idle_after"`
	StaleAfter   duration            `toml:"stale_after"`
	StopTimeout  duration            `toml:"stop_timeout"`
	Restart      string              `toml:"restart"`
	MaxRestarts  *int                `toml:"max_restarts"`
	RestartDelay duration            `toml:"restart_delay"`
	RestartMax   duration            `toml:"restart_max_delay"`
	HealthyAfter duration            `toml:"healthy_after"`
	MaxAgents    *int                `toml:"max_agents"`
	LogMaxSize   size                `toml:"log_max_size"`
	Workspace    *workspaceTable     `toml:"workspace"`
	Agents       map[string]kindFile `toml:"agents"`
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
	Format       *string           `toml:"format"`
	Stdin        *string           `toml:"stdin"`
	Env          map[string]string `toml:"env"`
	ResumePrompt *string           `toml:"resume_prompt"`
}

// size reads "64MiB", "512KiB", "1GiB" or a number of bytes.
type size struct {
	n   int64
	set bool
}

func (z *size) UnmarshalText(b []byte) error {
	s := strings.TrimSpace(string(b))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}} {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(v), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return fmt.Errorf("want a size such as 64MiB, 512KiB or a number of bytes, got %q", b)
	}
	z.n, z.set = n*mult, true
	return nil
}

func (z *size) UnmarshalTOML(v any) error {
	switch v := v.(type) {
	case int64:
		return z.UnmarshalText([]byte(strconv.FormatInt(v, 10)))
	case string:
		return z.UnmarshalText([]byte(v))
	}
	return fmt.Errorf("want a size such as \"64MiB\", got %v", v)
}

type duration struct {
	d   time.Duration
	set bool
}

func (d *duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("want a duration such as 30s or 5m, got %q", b)
	}
	if v < 0 {
		return fmt.Errorf("duration %q must not be negative", b)
	}
	d.d, d.set = v, true
	return nil
}

// Defaults of the top-level keys.
const (
	DefaultIdleAfter   = 5 * time.Second
	DefaultStaleAfter  = 10 * time.Minute
	DefaultStopTimeout = 30 * time.Second
	DefaultLogMaxSize  = 64 << 20
)

// Defaults of the restart policy (RELIABILITY.md R17).
var DefaultRestart = Restart{
	Policy: "on-failure", MaxRestarts: 5,
	Delay: time.Second, MaxDelay: 30 * time.Second, HealthyAfter: 10 * time.Minute,
}

// ProjectFiles are the names of the project file, tried in each directory walking up.
var ProjectFiles = []string{"agt.toml", filepath.Join(".agt", "config.toml")}

// Load reads the user file and the project file found from dir, over the built-ins.
func Load(dir string) (*Config, error) {
	c := &Config{
		IdleAfter: DefaultIdleAfter, StaleAfter: DefaultStaleAfter, StopTimeout: DefaultStopTimeout,
		Restart: DefaultRestart, LogMaxSize: DefaultLogMaxSize,
		Workspace: Workspace{Mode: "auto", BranchPrefix: "agt/"},
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
	md, err := toml.Decode(string(b), &f)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return fmt.Errorf("%s:%d: %s", path, pe.Position.Line, pe.Message)
		}
		return fmt.Errorf("%s: %s", path, strings.TrimPrefix(err.Error(), "toml: "))
	}
	if und := md.Undecoded(); len(und) > 0 {
		return fmt.Errorf("%s: unknown key %s", path, und[0])
	}
	c.Files = append(c.Files, path)
	if f.DefaultAgent != "" {
		c.DefaultAgent = f.DefaultAgent
	}
	for _, kv := range []struct {
		d   duration
		dst *time.Duration
	}{
		{f.IdleAfter, &c.IdleAfter}, {f.StaleAfter, &c.StaleAfter}, {f.StopTimeout, &c.StopTimeout},
		{f.RestartDelay, &c.Restart.Delay}, {f.RestartMax, &c.Restart.MaxDelay}, {f.HealthyAfter, &c.Restart.HealthyAfter},
	} {
		if kv.d.set {
			*kv.dst = kv.d.d
		}
	}
	if f.Restart != "" {
		if !slices.Contains([]string{"on-failure", "always", "never"}, f.Restart) {
			return fmt.Errorf("%s: restart %q: want on-failure, always or never", path, f.Restart)
		}
		c.Restart.Policy, c.Restart.PolicySet = f.Restart, true
	}
	if f.MaxRestarts != nil {
		if *f.MaxRestarts < 0 {
			return fmt.Errorf("%s: max_restarts %d must not be negative", path, *f.MaxRestarts)
		}
		c.Restart.MaxRestarts = *f.MaxRestarts
	}
	if f.LogMaxSize.set {
		c.LogMaxSize = f.LogMaxSize.n
	}
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
			c.Workspace.Mode = w.Mode
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
	for name, kf := range f.Agents {
		if err := c.mergeKind(path, name, kf); err != nil {
			return err
		}
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
	if kf.Format != nil {
		if !slices.Contains(Formats, *kf.Format) {
			return fmt.Errorf("%s: [agents.%s] format %q: want one of %s", path, name, *kf.Format, strings.Join(Formats, ", "))
		}
		k.Format = *kf.Format
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
