package commands

import "testing"

func TestHostLine(t *testing.T) {
	for _, tc := range []struct {
		line  string
		names []string
		want  string
		named bool
	}{
		{"stopped s3 (killed by SIGTERM)", []string{"s3"}, "stopped box1:s3 (killed by SIGTERM)", true},
		{"s3 failed (exit code 3)", []string{"s3"}, "box1:s3 failed (exit code 3)", true},
		{"removed fix: record", []string{"fix"}, "removed box1:fix: record", true},
		{"removed record: record", []string{"record"}, "removed box1:record: record", true},
		{"allowed fix Bash (req-1)", []string{"x", "fix"}, "allowed box1:fix Bash (req-1)", true},
		{"works in /src/app-agt/fix (branch agt/fix)", []string{"fix"}, "works in /src/app-agt/fix (branch agt/fix)", false},
		{"stopped fixer", []string{"fix"}, "stopped fixer", false},
		{"stopped fix-1", []string{"fix-*"}, "stopped fix-1", false},
		{"kind  claude", nil, "kind  claude", false},
		{"name      fix", []string{"fix"}, "name      box1:fix", true},
		// The agent's own words further on stay as they are.
		{"argv      claude -p fix", []string{"fix"}, "argv      claude -p fix", false},
		{"state     failed (fix: exit code 1)", []string{"fix"}, "state     failed (fix: exit code 1)", false},
	} {
		got, named := hostLine(tc.line, "box1", tc.names)
		if got != tc.want || named != tc.named {
			t.Errorf("hostLine(%q, %q) = %q, %v; want %q, %v", tc.line, tc.names, got, named, tc.want, tc.named)
		}
	}
}
