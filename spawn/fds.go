package spawn

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// closeInheritedOnExec marks every descriptor above stderr close-on-exec. Whatever the caller
// of agt left open without that flag (a shell's stray pipe, a CI runner's log) would otherwise
// pass to the supervisor and on to the agent: `$(agt spawn …)` would hang on such a pipe, and
// the agent would see descriptors that are not its own (R8).
func closeInheritedOnExec() {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		unix.CloseOnExec(fd) // fails harmlessly for the descriptor ReadDir used
	}
}
