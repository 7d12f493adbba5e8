package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"agt/state"
)

// Resolve makes the sandbox of an agent from its settings: the tool, the network, and the
// paths its kind and agt.toml declare it reads and writes (rw) or only reads (ro), resolved
// in the agent's environment (getenv):
//
//   - ~ at the start is $HOME; ${VAR} is the variable, ${VAR:-DEFAULT} the default when it is
//     unset or empty (such as ${CODEX_HOME:-~/.codex});
//   - a trailing / marks a directory, made (0700) when it does not exist yet, so that what
//     the agent keeps there outlives the sandbox; left out when it cannot be, its parent and
//     its home missing (a home is never made);
//   - a trailing ? marks a path bound only when it exists;
//   - any other path must exist.
func Resolve(tool, net string, rw, ro []string, getenv func(string) string) (*state.Sandbox, error) {
	if tool != Bwrap {
		return nil, fmt.Errorf("sandbox %q: want %s", tool, Bwrap)
	}
	if net == "" {
		net = NetOn
	}
	if net != NetOn && net != NetNone {
		return nil, fmt.Errorf("sandbox network %q: want %s or %s", net, NetOn, NetNone)
	}
	s := &state.Sandbox{Tool: tool}
	if net == NetNone {
		s.Net = NetNone
	}
	for _, list := range []struct {
		key   string
		decl  []string
		paths *[]string
	}{{"sandbox_rw", rw, &s.RW}, {"sandbox_ro", ro, &s.RO}} {
		for _, d := range list.decl {
			p, err := resolveOne(d, getenv)
			if err != nil {
				return nil, fmt.Errorf("%s path %q: %w", list.key, d, err)
			}
			if p != "" {
				*list.paths = append(*list.paths, p)
			}
		}
	}
	return s, nil
}

// resolveOne resolves one declared path; "" when it is optional and missing.
func resolveOne(decl string, getenv func(string) string) (string, error) {
	spec := decl
	optional := strings.HasSuffix(spec, "?")
	spec = strings.TrimSuffix(spec, "?")
	dir := strings.HasSuffix(spec, "/") && len(spec) > 1
	p, err := ExpandPath(spec, getenv)
	if err != nil {
		return "", err
	}
	_, err = os.Stat(p)
	switch {
	case err == nil:
		return p, nil
	case optional:
		return "", nil // missing, or out of reach: nothing to bind
	case !errors.Is(err, os.ErrNotExist):
		return "", err
	case dir:
		if !makeable(p, getenv("HOME")) {
			return "", nil // its home is missing too: the agent keeps it in the sandbox's
		}
		if err := os.MkdirAll(p, 0o700); err != nil {
			return "", err
		}
		return p, nil
	}
	return "", fmt.Errorf("%s does not exist; make it, or end the path with ? to bind it only when it exists", p)
}

// makeable reports whether a declared directory that does not exist is to be made: when its
// parent exists, or when it lies in a home that exists (its missing parents are made too).
// Never a home itself, nor anything above one: a HOME that does not exist stays so.
func makeable(dir, home string) bool {
	if fi, err := os.Stat(filepath.Dir(dir)); err == nil && fi.IsDir() {
		return true
	}
	if home == "" || !isWithin(dir, filepath.Clean(home)) {
		return false
	}
	fi, err := os.Stat(home)
	return err == nil && fi.IsDir()
}

// ExpandPath expands ~ and ${VAR} / ${VAR:-DEFAULT} in a declared path, which must then be
// absolute. A $ not followed by { is kept as it is.
func ExpandPath(p string, getenv func(string) string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] != '$' || i+1 >= len(p) || p[i+1] != '{' {
			b.WriteByte(p[i])
			continue
		}
		end := strings.IndexByte(p[i:], '}')
		if end < 0 {
			return "", errors.New("unclosed ${")
		}
		name, def, hasDef := strings.Cut(p[i+2:i+end], ":-")
		if !validName(name) {
			return "", fmt.Errorf("bad variable name %q", name)
		}
		v := getenv(name)
		switch {
		case v == "" && hasDef:
			v = def
		case v == "":
			// Never "/" and what follows: an unset variable names nothing.
			return "", fmt.Errorf("$%s is not set; give a default, as in ${%s:-~/…}", name, name)
		}
		b.WriteString(v)
		i += end
	}
	s := b.String()
	if s == "~" || strings.HasPrefix(s, "~/") {
		home := getenv("HOME")
		if home == "" {
			return "", errors.New("~ needs $HOME, which is not set")
		}
		s = home + s[1:]
	}
	if !filepath.IsAbs(s) {
		return "", fmt.Errorf("%q is not an absolute path (start it with / or ~/)", s)
	}
	return filepath.Clean(s), nil
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
