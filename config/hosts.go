package config

import (
	"fmt"
	"path"
	"sort"
	"strings"
)

// Host is one entry of the [hosts] table: a machine agt reaches over ssh.
//
//	[hosts]
//	box2 = "dev@box2.example.com"          # name = ssh destination
//	[hosts.box3]
//	ssh = "box3"                            # anything ssh accepts, ~/.ssh/config aliases too
//	run_dir = "/srv/agt"                    # --run-dir on the host (default: its own default)
//	agt = "~/bin/agt"                       # the agt program there (default: found on its PATH)
type Host struct {
	Name   string // the key, as commands name it (box2 in box2:fix-auth)
	SSH    string // the ssh destination
	RunDir string // the run directory on the host; "" for the host's default
	Agt    string // the agt program on the host; "" to find it
}

// Reserved host names: --host all and --host local mean these.
const (
	HostAll   = "all"
	HostLocal = "local"
)

// ValidHostName accepts what a [hosts] key may be: 1 to 63 of a-z 0-9 . _ -, starting with a
// letter or digit, and neither "all", "local" nor an engine's name. It has no ':' (HOST:NAME splits there).
func ValidHostName(name string) error {
	if name == HostAll || name == HostLocal || IsEngine(name) {
		return fmt.Errorf("host name %q is reserved: --host %s means %s", name, name, map[string]string{
			HostAll: "this machine and every configured host", HostLocal: "this machine",
			EngineSwarm: "the Docker Swarm of the docker CLI", EngineK8s: "Kubernetes Jobs"}[name])
	}
	if name == "" || len(name) > 63 || !isAlnum(name[0]) {
		return fmt.Errorf("host name %q: want 1 to 63 of a-z 0-9 . _ -, starting with a letter or digit", name)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !isAlnum(c) && c != '.' && c != '_' && c != '-' {
			return fmt.Errorf("host name %q: want 1 to 63 of a-z 0-9 . _ -, starting with a letter or digit", name)
		}
	}
	return nil
}

func isAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

// ValidDestination checks an ssh destination as agt will hand it to ssh: not empty, not
// starting with '-' (ssh would read an option), no space or control character, at most 255
// bytes. Anything else is ssh's to judge.
func ValidDestination(dest string) error {
	switch {
	case dest == "":
		return fmt.Errorf("empty ssh destination")
	case len(dest) > 255:
		return fmt.Errorf("ssh destination of %d bytes: at most 255", len(dest))
	case dest[0] == '-':
		return fmt.Errorf("ssh destination %q starts with '-'", dest)
	}
	for _, r := range dest {
		if r <= ' ' || r == 0x7f || r >= 0x80 && r < 0xa0 {
			return fmt.Errorf("ssh destination %q holds a space or control character", dest)
		}
	}
	return nil
}

// mergeHosts reads the [hosts] table of file over c's; each value is a destination string or
// a table of ssh, run_dir and agt: an entry replaces the one of
// the same name whole.
func (c *Config) mergeHosts(file string, table map[string]any) error {
	if c.Hosts == nil {
		c.Hosts = map[string]Host{}
	}
	for _, name := range sortedAnyKeys(table) {
		if err := ValidHostName(name); err != nil {
			return fmt.Errorf("%s: [hosts] %v", file, err)
		}
		h := Host{Name: name}
		switch v := table[name].(type) {
		case string:
			h.SSH = v
		case map[string]any:
			for key, val := range v {
				s, ok := val.(string)
				if !ok {
					return fmt.Errorf("%s: [hosts.%s] %s: want a string", file, name, key)
				}
				switch key {
				case "ssh":
					h.SSH = s
				case "run_dir":
					h.RunDir = s
				case "agt":
					h.Agt = s
				default:
					return fmt.Errorf("%s: [hosts.%s] unknown key %s: want ssh, run_dir or agt", file, name, key)
				}
			}
			if h.SSH == "" {
				h.SSH = name // a table without ssh: the name is the destination
			}
		default:
			return fmt.Errorf("%s: [hosts] %s: want an ssh destination (\"user@host\") or a table with ssh, run_dir and agt", file, name)
		}
		if err := ValidDestination(h.SSH); err != nil {
			return fmt.Errorf("%s: [hosts.%s] %v", file, name, err)
		}
		for _, p := range []struct{ key, v string }{{"run_dir", h.RunDir}, {"agt", h.Agt}} {
			if err := validRemotePath(p.v); err != nil {
				return fmt.Errorf("%s: [hosts.%s] %s: %v", file, name, p.key, err)
			}
		}
		c.Hosts[name] = h
	}
	return nil
}

// validRemotePath checks a path on a host: "" (none), absolute, or under the home directory
// (~/...); no control characters. Relative paths would depend on where ssh lands.
func validRemotePath(p string) error {
	if p == "" {
		return nil
	}
	for _, r := range p {
		if r < ' ' || r == 0x7f {
			return fmt.Errorf("%q holds a control character", p)
		}
	}
	if !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "~/") {
		return fmt.Errorf("%q: want an absolute path or one under ~/ on the host", p)
	}
	if path.Clean(p) == "/" || p == "~/" {
		return fmt.Errorf("%q: want a path below it", p)
	}
	return nil
}

// HostNames returns the configured host names, sorted.
func (c *Config) HostNames() []string {
	names := make([]string, 0, len(c.Hosts))
	for n := range c.Hosts {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func sortedAnyKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
