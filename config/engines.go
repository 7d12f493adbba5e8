package config

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Engine names: agt spawn --on swarm, swarm:NAME; agt spawn --on k8s --dry-run.
const (
	EngineSwarm = "swarm"
	EngineK8s   = "k8s"
)

// EngineNames are the engines agt knows, in the order --host all lists them.
var EngineNames = []string{EngineSwarm, EngineK8s}

// IsEngine reports whether name is an engine's (and so no host's).
func IsEngine(name string) bool { return name == EngineSwarm || name == EngineK8s }

// Engine is one entry of the [engines] table: how agt runs an agent as a job of a cluster
// engine. The job runs agt spawn --wait --rm NAME -- COMMAND in Image (docs/engines.md).
//
//	[engines.swarm]
//	image = "registry.example.com/agents:1"   # the agent's CLI and a static agt
//	context = "prod"                          # docker --context; default: docker's own choice
//	memory = "2GiB"                           # reserved: --reserve-memory; a Job's requests
//	memory_limit = "4GiB"                     # the most it may use: --limit-memory; limits
//	cpus = 1.5                                # reserved CPUs: --reserve-cpu; requests
//	labels = { team = "core" }                # on the service or Job, beside agt's own
//	env = ["ANTHROPIC_API_KEY"]               # swarm: passed from here by name, never in argv
//	args = ["--constraint", "node.labels.agents==yes"]  # swarm: more docker service create words
//
//	[engines.k8s]
//	namespace = "agents"                      # the Job's namespace; default: kubectl's
//	env_from = ["agent-keys"]                 # Secrets whose keys become the job's environment
type Engine struct {
	Name        string
	Image       string
	Context     string // swarm: docker --context
	Namespace   string // k8s
	Memory      int64  // bytes reserved; 0: none
	MemoryLimit int64  // bytes at most; 0: none
	CPUs        float64
	Labels      map[string]string
	Env         []string // swarm: variable names passed from this environment
	Args        []string // swarm: more words for docker service create, before the image
	EnvFrom     []string // k8s: Secret names
	// Set says a file has an [engines.NAME] table: --host all includes the engine.
	Set bool
}

// engineKeys is the [engines] table of a file.
type engineKeys struct {
	Engines map[string]engineFile `toml:"engines"`
}

// engineFile is one [engines.NAME] table as a file writes it.
type engineFile struct {
	Image       *string           `toml:"image"`
	Context     *string           `toml:"context"`
	Namespace   *string           `toml:"namespace"`
	Memory      any               `toml:"memory"` // a size string or a number of bytes
	MemoryLimit any               `toml:"memory_limit"`
	CPUs        any               `toml:"cpus"` // a number
	Labels      map[string]string `toml:"labels"`
	Env         []string          `toml:"env"`
	Args        []string          `toml:"args"`
	EnvFrom     []string          `toml:"env_from"`
}

// Engine returns the engine called name as the files configure it (an empty one when they
// say nothing of it).
func (c *Config) Engine(name string) Engine {
	if e, ok := c.Engines[name]; ok {
		return e
	}
	return Engine{Name: name}
}

// mergeEngines reads the [engines] table of file over c's, key by key: a project file may
// set the memory of an engine whose image the user file names.
func (c *Config) mergeEngines(file string, table map[string]engineFile) error {
	if c.Engines == nil {
		c.Engines = map[string]Engine{}
	}
	names := make([]string, 0, len(table))
	for n := range table {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		if !IsEngine(name) {
			return fmt.Errorf("%s: [engines.%s]: not an engine agt knows; want %s", file, name, strings.Join(EngineNames, " or "))
		}
		f, e := table[name], c.Engine(name)
		e.Set = true
		where := fmt.Sprintf("%s: [engines.%s]", file, name)
		only := func(key, engine string, set bool) error {
			if set && name != engine {
				return fmt.Errorf("%s %s: only [engines.%s] takes it", where, key, engine)
			}
			return nil
		}
		for _, err := range []error{
			only("context", EngineSwarm, f.Context != nil), only("env", EngineSwarm, f.Env != nil),
			only("args", EngineSwarm, f.Args != nil), only("namespace", EngineK8s, f.Namespace != nil),
			only("env_from", EngineK8s, f.EnvFrom != nil),
		} {
			if err != nil {
				return err
			}
		}
		for _, s := range []struct {
			key string
			v   *string
			dst *string
		}{{"image", f.Image, &e.Image}, {"context", f.Context, &e.Context}, {"namespace", f.Namespace, &e.Namespace}} {
			if s.v == nil {
				continue
			}
			if err := engineWord(*s.v); err != nil {
				return fmt.Errorf("%s %s: %v", where, s.key, err)
			}
			*s.dst = *s.v
		}
		for _, m := range []struct {
			key string
			v   any
			dst *int64
		}{{"memory", f.Memory, &e.Memory}, {"memory_limit", f.MemoryLimit, &e.MemoryLimit}} {
			if m.v == nil {
				continue
			}
			n, err := sizeValue(m.v)
			if err != nil {
				return fmt.Errorf("%s %s: %v", where, m.key, err)
			}
			*m.dst = n
		}
		if e.Memory > 0 && e.MemoryLimit > 0 && e.MemoryLimit < e.Memory {
			return fmt.Errorf("%s memory_limit is below memory: the job could never have what it reserves", where)
		}
		if f.CPUs != nil {
			var v float64
			switch n := f.CPUs.(type) {
			case int64:
				v = float64(n)
			case float64:
				v = n
			default:
				return fmt.Errorf("%s cpus: want a number of CPUs such as 1.5, got %v", where, f.CPUs)
			}
			if v <= 0 || v > 1024 || math.IsNaN(v) {
				return fmt.Errorf("%s cpus = %v: want a number of CPUs above 0", where, v)
			}
			e.CPUs = v
		}
		if f.Labels != nil {
			for k, v := range f.Labels {
				if err := labelPart(k, true); err != nil {
					return fmt.Errorf("%s labels: %v", where, err)
				}
				if err := labelPart(v, false); err != nil {
					return fmt.Errorf("%s labels.%s: %v", where, k, err)
				}
			}
			e.Labels = f.Labels
		}
		for _, l := range []struct {
			key  string
			v    []string
			dst  *[]string
			word func(string) error
		}{{"env", f.Env, &e.Env, envName}, {"args", f.Args, &e.Args, engineArg}, {"env_from", f.EnvFrom, &e.EnvFrom, engineWord}} {
			if l.v == nil {
				continue
			}
			for _, w := range l.v {
				if err := l.word(w); err != nil {
					return fmt.Errorf("%s %s: %v", where, l.key, err)
				}
			}
			*l.dst = l.v
		}
		c.Engines[name] = e
	}
	return nil
}

// sizeValue reads a size as TOML gives it: "2GiB" or a number of bytes.
func sizeValue(v any) (int64, error) {
	switch v := v.(type) {
	case int64:
		return parseSize(strconv.FormatInt(v, 10))
	case string:
		return parseSize(v)
	}
	return 0, fmt.Errorf("want a size such as \"2GiB\", got %v", v)
}

// engineWord checks an image, context, namespace or Secret name: one word, printable.
func engineWord(s string) error {
	if s == "" || len(s) > 255 {
		return fmt.Errorf("want 1 to 255 characters, got %d", len(s))
	}
	if s[0] == '-' {
		return fmt.Errorf("%q starts with '-'", s)
	}
	for _, r := range s {
		if r <= ' ' || r == 0x7f || r >= 0x80 && r < 0xa0 {
			return fmt.Errorf("%q holds a space or control character", s)
		}
	}
	return nil
}

// engineArg checks a word of args: printable, any length a command line allows.
func engineArg(s string) error {
	for _, r := range s {
		if r < ' ' || r == 0x7f {
			return fmt.Errorf("%q holds a control character", s)
		}
	}
	return nil
}

// envName checks the name of an environment variable: a letter or '_', then letters, digits
// and '_' (what a shell exports), and not one of agt's.
func envName(s string) error {
	ok := s != "" && !strings.HasPrefix(s, "AGT_") && !(s[0] >= '0' && s[0] <= '9')
	for i := 0; ok && i < len(s); i++ {
		ok = isLabelAlnum(s[i]) || s[i] == '_'
	}
	if !ok {
		return fmt.Errorf("%q: want a variable name (A-Z a-z 0-9 _, not one of agt's AGT_*)", s)
	}
	return nil
}

// labelPart checks a label key (key) or value as both engines take it: a Kubernetes label
// is at most 63 of a-z A-Z 0-9 - _ . (a key may have a DNS prefix and a '/'), starting and
// ending with a letter or digit; agt's own keys (agt.*) are agt's.
func labelPart(s string, key bool) error {
	if key {
		if strings.HasPrefix(s, "agt.") || strings.HasPrefix(s, "agt/") {
			return fmt.Errorf("label %q: agt.* labels are agt's own", s)
		}
		if i := strings.LastIndexByte(s, '/'); i >= 0 {
			if !dnsSubdomain(s[:i]) {
				return fmt.Errorf("label %q: its prefix is no DNS subdomain (a-z 0-9 - ., at most 253)", s)
			}
			s = s[i+1:]
		}
		if s == "" {
			return fmt.Errorf("empty label name")
		}
	}
	if s == "" {
		return nil // an empty value is a value
	}
	ok := len(s) <= 63 && isLabelAlnum(s[0]) && isLabelAlnum(s[len(s)-1])
	for i := 0; ok && i < len(s); i++ {
		ok = isLabelAlnum(s[i]) || s[i] == '-' || s[i] == '_' || s[i] == '.'
	}
	if !ok {
		return fmt.Errorf("label %q: want at most 63 of a-z A-Z 0-9 - _ ., starting and ending with a letter or digit", s)
	}
	return nil
}

// dnsSubdomain reports whether s is a DNS subdomain as Kubernetes takes one: at most 253 of
// a-z 0-9 - ., each dot-separated part starting and ending with a letter or digit.
func dnsSubdomain(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, part := range strings.Split(s, ".") {
		ok := part != "" && part[0] != '-' && part[len(part)-1] != '-'
		for i := 0; ok && i < len(part); i++ {
			c := part[i]
			ok = c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-'
		}
		if !ok {
			return false
		}
	}
	return true
}

func isLabelAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// ValidImage checks an image reference as agt hands it to an engine's CLI: one printable
// word, not an option.
func ValidImage(image string) error { return engineWord(image) }
