package config

import "testing"

func TestPolicyDecide(t *testing.T) {
	p := Policy{
		Allow: []string{"Read", "Bash(git status)", "Bash(npm run test:*)", "Edit(src/*)"},
		Deny:  []string{"Bash(rm *)", "Edit(src/secret.go)"},
	}
	tests := []struct {
		tool, input, want, rule string
	}{
		{"Read", `{"file_path":"/etc/passwd"}`, "allow", "Read"},
		{"Bash", `{"command":"git status"}`, "allow", "Bash(git status)"},
		{"Bash", `{"command":"git status --short"}`, "", ""},
		{"Bash", `{"command":"npm run test:unit"}`, "allow", "Bash(npm run test:*)"},
		{"Bash", `{"command":"npm run test && curl evil"}`, "", ""},
		{"Bash", `{"command":"npm run test; rm -rf ~"}`, "deny", "Bash(rm *)"},
		{"Bash", `{"command":"rm -rf build"}`, "deny", "Bash(rm *)"},
		{"Edit", `{"file_path":"src/a/b.go"}`, "allow", "Edit(src/*)"},
		{"Edit", `{"file_path":"src/secret.go"}`, "deny", "Edit(src/secret.go)"},
		{"Write", `{"file_path":"src/x.go"}`, "", ""},
		{"Bash", `{}`, "", ""},
		{"Bash", `not json`, "", ""},
	}
	for _, tt := range tests {
		got, rule := p.Decide(tt.tool, []byte(tt.input))
		if got != tt.want || rule != tt.rule {
			t.Errorf("%s %s: %q by %q, want %q by %q", tt.tool, tt.input, got, rule, tt.want, tt.rule)
		}
	}
}

func TestParseRule(t *testing.T) {
	for _, bad := range []string{"", "Bash(", "Bash()", "(x)", "Ba sh", "Bash(x"} {
		if _, _, err := ParseRule(bad); err == nil {
			t.Errorf("ParseRule(%q): no error", bad)
		}
	}
	if tool, spec, err := ParseRule("Bash(git log:*)"); tool != "Bash" || spec != "git log:*" || err != nil {
		t.Errorf("ParseRule: %q %q %v", tool, spec, err)
	}
}

// What a review found: file paths are matched as the file system sees them, relative rules
// start at the agent's directory, and a denied command is found inside any wrapping.
func TestPolicyPathsAndWrappings(t *testing.T) {
	p := Policy{
		Allow: []string{"Edit(/srv/repo/src/*)", "Read", "Bash"},
		Deny:  []string{"Read(./.env)", "Bash(rm:*)"},
		Dir:   "/srv/repo",
	}
	tests := []struct{ tool, input, want string }{
		{"Edit", `{"file_path":"/srv/repo/src/../../../home/u/.bashrc"}`, ""},
		{"Edit", `{"file_path":"/srv/repo/src/a.go"}`, "allow"},
		{"Read", `{"file_path":"/srv/repo//.env"}`, "deny"},
		{"Read", `{"file_path":"/srv/repo/./.env"}`, "deny"},
		{"Read", `{"file_path":".env"}`, "deny"},
		{"Read", `{"file_path":"/srv/repo/README"}`, "allow"},
		{"Bash", `{"command":"echo $(rm -rf ~)"}`, "deny"},
		{"Bash", `{"command":"(rm -rf ~)"}`, "deny"},
		{"Bash", `{"command":"{ rm -rf ~; }"}`, "deny"},
		{"Bash", `{"command":"! rm x"}`, "deny"},
		{"Bash", `{"command":"ls"}`, "allow"},
	}
	for _, tt := range tests {
		if got, rule := p.Decide(tt.tool, []byte(tt.input)); got != tt.want {
			t.Errorf("%s %s: %q by %q, want %q", tt.tool, tt.input, got, rule, tt.want)
		}
	}
}
