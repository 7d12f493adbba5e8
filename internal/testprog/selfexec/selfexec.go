// Package selfexec lets the tests of a test program run it as the scripts do, as a process of
// its own: the test binary re-executes itself, and its TestMain runs the program instead of
// the tests when the environment says so.
package selfexec

import (
	"os"
	"os/exec"
	"testing"
)

// env marks the test binary's run as the program.
const env = "AGT_TESTPROG_SELFEXEC"

// Main runs program when this process is the test binary re-executed by Command, else the
// tests. Call it from TestMain.
func Main(m *testing.M, program func()) {
	if os.Getenv(env) == "1" {
		program()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Command is the program run with args, as exec.Command makes it.
func Command(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), env+"=1")
	return cmd
}
