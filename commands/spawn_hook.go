package commands

import (
	"errors"
	"fmt"
	"os/exec"
)

// checkHook refuses a spawn whose on_state hook cannot start: the supervisor would only log
// the failure in supervisor.log, at every change of state, where nobody looks. It looks the
// program up as the supervisor will, from this directory and with this $PATH.
func checkHook(argv []string) error {
	if len(argv) == 0 {
		return nil
	}
	if _, err := exec.LookPath(argv[0]); err != nil {
		why := "executable not found in $PATH"
		if !errors.Is(err, exec.ErrNotFound) {
			why = err.Error()
		}
		return fmt.Errorf("on_state hook %s: %s; install it, or change on_state in agt.toml", argv[0], why)
	}
	return nil
}
