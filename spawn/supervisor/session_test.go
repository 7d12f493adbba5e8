package supervisor

import (
	"os"
	"path/filepath"
	"testing"

	"agt/spawn/ctl"
	"agt/state"
)

// TestSessionOnDisk: a terminal agent's session counts as saved once its file is where the
// kind keeps it (Claude's TUI shows no reply as an event): a restart resumes it. Without the
// file, the restart is fresh, and names the session it could not resume.
func TestSessionOnDisk(t *testing.T) {
	dir := t.TempDir()
	spec := state.Spec{Kind: "claude", TTY: true, Argv: []string{"claude"}, Resume: []string{"claude", "--resume", "$AGT_SESSION_ID"},
		Env: []string{"CLAUDE_CONFIG_DIR=" + dir}, SessionFile: "${CLAUDE_CONFIG_DIR:-~/.claude}/projects/*/$AGT_SESSION_ID.jsonl"}
	for _, saved := range []bool{false, true} {
		s := newTestSupervisor(t, spec)
		id := "0b5e5d54-8b0e-4bbf-9d6f-1a2b3c4d5e6f"
		s.status.SessionID = id
		if saved {
			p := filepath.Join(dir, "projects", "-work", id+".jsonl")
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("{}\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		got, resumed, unsaved := s.session(ctl.StartResume)
		switch {
		case saved && (got != id || !resumed || unsaved != ""):
			t.Errorf("saved: session %q, resumed %v, unsaved %q", got, resumed, unsaved)
		case !saved && (resumed || unsaved != id):
			t.Errorf("not saved: session %q, resumed %v, unsaved %q", got, resumed, unsaved)
		}
	}
	s := newTestSupervisor(t, spec)
	for _, id := range []string{"../x", "*", ""} {
		if s.sessionSaved(id) {
			t.Errorf("sessionSaved(%q)", id)
		}
	}
}
