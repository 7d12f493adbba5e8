package stdiotap

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"agt/internal/testprog/selfexec"
)

func TestMain(m *testing.M) {
	selfexec.Main(m, Main)
}

func tap(t *testing.T, transcript string, args ...string) *exec.Cmd {
	cmd := selfexec.Command(append([]string{transcript}, args...)...)
	return cmd
}

// Both directions go through, and into the transcript, with the agent's exit code last.
func TestTranscript(t *testing.T) {
	transcript := filepath.Join(t.TempDir(), "t.txt")
	cmd := tap(t, transcript, "sh", "-c", `read line; echo "got $line"; exit 3`)
	cmd.Stdin = strings.NewReader("hello\n")
	out, err := cmd.Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("exit: %v, want the agent's 3", err)
	}
	if string(out) != "got hello\n" {
		t.Errorf("stdout %q", out)
	}
	b, _ := os.ReadFile(transcript)
	if want := ">>> hello\n<<< got hello\n### rc=3\n"; string(b) != want {
		t.Errorf("transcript:\n%s\nwant:\n%s", b, want)
	}
}

func TestUsage(t *testing.T) {
	var ee *exec.ExitError
	if err := tap(t, "only-a-file").Run(); !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("without a command: %v, want exit status 2", err)
	}
}
