package config

import (
	"fmt"
	"slices"
	"strings"
)

// Sandbox holds the top-level sandbox keys: whether agents run in a sandbox (Tool "bwrap";
// "" or "none" not), with which network (Net "on" or "none"), and the paths every kind reads
// and writes (RW) or only reads (RO) there, besides its own.
type Sandbox struct {
	Tool string
	Net  string
	RW   []string
	RO   []string
}

// Sandbox tools and networks as agt.toml and the flags name them.
var (
	SandboxTools = []string{"bwrap", "none"}
	SandboxNets  = []string{"on", "none"}
)

// DefaultSandbox is off, and reads the user's git settings where there are some: agents commit
// in their workspaces.
func DefaultSandbox() Sandbox {
	return Sandbox{RO: []string{"~/.gitconfig?", "${XDG_CONFIG_HOME:-~/.config}/git?"}}
}

// sandboxKeys are the sandbox keys of agt.toml, at the top and in a kind's table.
type sandboxKeys struct {
	Sandbox    *string  `toml:"sandbox"`
	SandboxNet *string  `toml:"sandbox_net"`
	SandboxRW  []string `toml:"sandbox_rw"`
	SandboxRO  []string `toml:"sandbox_ro"`
}

// merge reads the sandbox keys of one file (of the kind's table when kind is set) over s;
// path lists add to what s has.
func (s *Sandbox) merge(path, kind string, f sandboxKeys) error {
	where := path
	if kind != "" {
		where = fmt.Sprintf("%s: [agents.%s]", path, kind)
	}
	if f.Sandbox != nil {
		if !slices.Contains(SandboxTools, *f.Sandbox) {
			return fmt.Errorf("%s sandbox %q: want %s", where, *f.Sandbox, strings.Join(SandboxTools, " or "))
		}
		s.Tool = *f.Sandbox
	}
	if f.SandboxNet != nil {
		if !slices.Contains(SandboxNets, *f.SandboxNet) {
			return fmt.Errorf("%s sandbox_net %q: want %s", where, *f.SandboxNet, strings.Join(SandboxNets, " or "))
		}
		s.Net = *f.SandboxNet
	}
	for _, l := range []struct {
		key   string
		paths []string
		dst   *[]string
	}{{"sandbox_rw", f.SandboxRW, &s.RW}, {"sandbox_ro", f.SandboxRO, &s.RO}} {
		for _, p := range l.paths {
			// The rest of its form is checked where it is resolved, at spawn.
			if !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "~") && !strings.HasPrefix(p, "${") {
				return fmt.Errorf("%s %s path %q: want an absolute path, ~/… or ${VAR}/…", where, l.key, p)
			}
		}
		*l.dst = slices.Concat(*l.dst, l.paths) // never into a built-in's array
	}
	return nil
}

// mergeSandbox reads a kind's sandbox keys over k.
func (k *Kind) mergeSandbox(path string, kf kindFile) error {
	s := Sandbox{Tool: k.Sandbox, Net: k.SandboxNet, RW: k.SandboxRW, RO: k.SandboxRO}
	if err := s.merge(path, k.Name, kf.sandboxKeys); err != nil {
		return err
	}
	k.Sandbox, k.SandboxNet, k.SandboxRW, k.SandboxRO = s.Tool, s.Net, s.RW, s.RO
	if kf.SandboxArgs != nil {
		k.SandboxArgs = kf.SandboxArgs // [] turns the built-in's off
	}
	return nil
}

// SandboxFor is the sandbox an agent of kind k gets from agt.toml: the kind's setting over
// the top-level one, the paths of both. Tool "" means none.
func (c *Config) SandboxFor(k *Kind) Sandbox {
	s := Sandbox{Tool: c.Sandbox.Tool, Net: c.Sandbox.Net,
		RW: slices.Concat(c.Sandbox.RW, k.SandboxRW), RO: slices.Concat(c.Sandbox.RO, k.SandboxRO)}
	if k.Sandbox != "" {
		s.Tool = k.Sandbox
	}
	if k.SandboxNet != "" {
		s.Net = k.SandboxNet
	}
	if s.Tool == "none" {
		s.Tool = ""
	}
	return s
}
