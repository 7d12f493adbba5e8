package ctl

import (
	"encoding/binary"
	"fmt"
	mrand "math/rand/v2"
	"strings"
)

// The environment an agent starts with is the same at every start, whoever restarts it: the
// environment of agt spawn, recorded in the spec (RecordEnviron), with secrets kept by name
// alone and taken from the supervisor's environment at each start. So `agt restart` from another
// shell (another HOME, another PATH) runs the agent as the spawn did, and resumes its session.

// secretWords mark a variable whose value is a secret: it is recorded by name only.
var secretWords = []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "COOKIE", "PRIVATE"}

// IsSecret reports whether the variable name=value holds a secret: its name says so
// (ANTHROPIC_API_KEY, GITHUB_TOKEN, …), or its value is a URL with a password in it.
func IsSecret(name, value string) bool {
	upper := strings.ToUpper(name)
	for _, w := range secretWords {
		if strings.Contains(upper, w) {
			return true
		}
	}
	if i := strings.Index(value, "://"); i >= 0 {
		rest := value[i+3:]
		if at := strings.IndexByte(rest, '@'); at > 0 && strings.Contains(rest[:at], ":") {
			return true // scheme://user:password@host
		}
	}
	return false
}

// RecordEnviron is env as the spec keeps it: agt's own per-agent variables left out (each start
// sets them), secrets by name alone.
func RecordEnviron(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, value, ok := strings.Cut(kv, "=")
		switch {
		case !ok || name == "":
			continue
		case name == "AGT_INSTANCE" || name == "AGT_NAME":
			continue
		case IsSecret(name, value):
			out = append(out, name)
		default:
			out = append(out, kv)
		}
	}
	return out
}

// BaseEnviron is the environment a start begins with: the recorded one, each secret's value
// taken from lookup (the supervisor's environment); without a record (older agt), environ.
func BaseEnviron(recorded, environ []string, lookup func(string) (string, bool)) []string {
	if recorded == nil {
		return environ
	}
	env := make([]string, 0, len(recorded))
	for _, kv := range recorded {
		if strings.Contains(kv, "=") {
			env = append(env, kv)
		} else if v, ok := lookup(kv); ok {
			env = append(env, kv+"="+v)
		}
	}
	return env
}

// NewSessionID returns a random (version 4) UUID, from math/rand/v2's kernel-seeded ChaCha8
// (unlike crypto/rand, it adds no package inits to every agt start-up).
func NewSessionID() string {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], mrand.Uint64())
	binary.LittleEndian.PutUint64(b[8:], mrand.Uint64())
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
