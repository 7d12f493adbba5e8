package hosts

import (
	"context"
	"os"
	"os/exec"
	"strings"
)

// This is the machine agt runs on, as a place: agt runs itself as a child, so that what it
// prints is merged with the hosts' like theirs.
type This struct {
	RunDir string // --run-dir to pass on; "" for the environment's
}

// Name is "local".
func (*This) Name() string { return Local }

// Run runs this agt with call's arguments as a child process.
func (t *This) Run(ctx context.Context, call *Call) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	args := []string{"--host", Local}
	if t.RunDir != "" {
		args = append(args, "--run-dir", t.RunDir)
	}
	if call.Stream && !call.Terminal && call.Stdin == nil {
		args = append(args, "--end-on-eof")
	}
	cmd := exec.Command(exe, append(args, call.Args...)...)
	cmd.Args[0] = "agt"
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AGT_HOST=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	return runCommand(ctx, Local, cmd, call)
}
