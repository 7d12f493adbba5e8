package supervisor

import (
	"os"
	"path/filepath"
	"strings"

	"agt/config"
	"agt/sandbox"
	"agt/spawn/ctl"
)

// agentEnv is the spawn's environment (see baseEnviron), then the kind's and the --env values,
// then the agt variables, which nothing may override.
func (s *supervisor) agentEnv(vals map[string]string) []string {
	env := append(ctl.BaseEnviron(s.spec.Environ, os.Environ(), os.LookupEnv), s.spec.Env...)
	for _, t := range config.Tokens {
		if v := vals[t]; v != "" {
			env = append(env, t+"="+v)
		}
	}
	return append(env, "AGT_INSTANCE="+s.instance)
}

// agentGetenv looks a variable up in the environment the agent starts with (agt's own variables
// aside): where the agent finds its configuration.
// The environment is built at the first look: on the path of every spawn, most kinds never look.
func (s *supervisor) agentGetenv() func(string) string {
	var env []string
	return func(name string) string {
		if env == nil {
			env = append(ctl.BaseEnviron(s.spec.Environ, os.Environ(), os.LookupEnv), s.spec.Env...)
		}
		for i := len(env) - 1; i >= 0; i-- { // the last one wins, as in the agent
			if k, v, _ := strings.Cut(env[i], "="); k == name {
				return v
			}
		}
		return ""
	}
}

// sessionSaved reports whether the agent saved session id where its kind keeps sessions (spec
// SessionFile, a glob with $AGT_SESSION_ID, ~ and ${VAR:-default}, in the agent's environment):
// a resume can take it up even though agt saw no reply (a terminal agent shows its replies on
// its screen alone).
func (s *supervisor) sessionSaved(id string) bool {
	tmpl := s.spec.SessionFile
	if tmpl == "" || id == "" || strings.ContainsAny(id, `/\*?[]`) || id == "." || id == ".." {
		return false
	}
	p, err := sandbox.ExpandPath(strings.ReplaceAll(tmpl, "$AGT_SESSION_ID", id), s.agentGetenv())
	if err != nil {
		return false
	}
	m, err := filepath.Glob(p)
	return err == nil && len(m) > 0
}
