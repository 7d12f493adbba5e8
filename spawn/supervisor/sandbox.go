package supervisor

import (
	"fmt"

	"github.com/tidwall/gjson"

	"agt/sandbox"
)

// sandboxed returns what to start for an agent spawned with --sandbox: bubblewrap around its
// program, argv and environment, with its workspace (else its directory) the one it may
// change and its prompt file the only one of the run directory it sees. Only the agent's tree
// is confined: the supervisor stays outside, and with it events, send, approve and attach.
// Without a sandbox, they are returned as they are.
func (s *supervisor) sandboxed(program string, argv, env []string, vals map[string]string) (string, []string, []string, error) {
	if s.spec.Sandbox == nil {
		return program, argv, env, nil
	}
	ws := gjson.GetBytes(s.spec.Workspace, "path").String()
	if ws == "" {
		ws = s.spec.Cwd
	}
	var expose []string
	if f := vals["AGT_PROMPT_FILE"]; f != "" {
		expose = append(expose, f)
	}
	p, a, e, err := sandbox.Command(s.spec.Sandbox, sandbox.Launch{
		Program: program, Argv: argv, Env: env, Dir: s.spec.Cwd, Workspace: ws,
		RunDir: s.root, Expose: expose,
	})
	if err != nil {
		return "", nil, nil, fmt.Errorf("could not start %s: %w", argv[0], err)
	}
	return p, a, e, nil
}
