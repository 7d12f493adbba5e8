package commands

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"

	"github.com/urfave/cli/v2"
)

// checkHook refuses a spawn whose on_state hook cannot start: the supervisor would only log
// the failure in supervisor.log, at every change of state, where nobody looks. It looks the
// program up as the supervisor will, from this directory and with this $PATH.
func checkHook(argv []string) error {
	if len(argv) == 0 {
		return nil
	}
	if _, err := exec.LookPath(argv[0]); err != nil {
		why, do := "executable not found in $PATH", "install it, or change on_state in agt.toml"
		switch {
		case errors.Is(err, fs.ErrNotExist):
			why = "no such file"
		case errors.Is(err, fs.ErrPermission):
			why, do = "not executable", "chmod +x it, or change on_state in agt.toml"
		case !errors.Is(err, exec.ErrNotFound):
			why = err.Error()
		}
		return fmt.Errorf("on_state hook %s: %s; %s", argv[0], why, do)
	}
	return nil
}

// rmNeedsWait is the usage error of spawn --rm without --wait. AGT_RM set in the environment
// (a CI job's) is named: the person did not type --rm.
func rmNeedsWait(c *cli.Context, name string) error {
	from := ""
	if os.Getenv("AGT_RM") != "" {
		from = " (AGT_RM is set in the environment: unset it for a detached spawn)"
	}
	return usagef(c, "--rm needs --wait%s: agt spawn --wait --rm %s -- COMMAND (a detached agent's record stays until 'agt rm %s')", from, name, name)
}
