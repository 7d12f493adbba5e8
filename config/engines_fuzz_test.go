package config

import (
	"strings"
	"testing"
	"unicode"
)

// FuzzEngineTable: what [engines.NAME] accepts is safe to put on docker's and kubectl's
// command lines and in a Job: no word that is an option, a space or a control character, no
// negative size, labels that both engines take.
func FuzzEngineTable(f *testing.F) {
	f.Add("agents:1", "2GiB", "team", "core", "ANTHROPIC_API_KEY", "--constraint")
	f.Add("--privileged", "-1", "agt.agent", "a b", "AGT_HOST", "x\n")
	f.Fuzz(func(t *testing.T, image, memory, key, value, env, arg string) {
		c := &Config{}
		table := map[string]engineFile{EngineSwarm: {Image: &image, Memory: memory, Labels: map[string]string{key: value},
			Env: []string{env}, Args: []string{arg}}}
		if err := c.mergeEngines("agt.toml", table); err != nil {
			return
		}
		e := c.Engine(EngineSwarm)
		for _, w := range []string{e.Image, key, value, env} {
			if strings.HasPrefix(w, "-") || strings.IndexFunc(w, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
				t.Fatalf("accepted %q", w)
			}
		}
		if e.Image == "" || key == "" || e.Memory < 0 || strings.HasPrefix(key, "agt.") || strings.HasPrefix(env, "AGT_") {
			t.Fatalf("accepted %+v", e)
		}
		if prefix, _, ok := strings.Cut(key, "/"); ok && strings.Trim(prefix, "abcdefghijklmnopqrstuvwxyz0123456789-.") != "" {
			t.Fatalf("accepted label key %q", key)
		}
		if strings.ContainsAny(arg, "\x00\n\r") {
			t.Fatalf("accepted arg %q", arg)
		}
	})
}
