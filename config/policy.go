package config

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/tidwall/gjson"
)

// Policy answers permission requests by itself: agt.toml's allow and deny rules, in Claude's rule
// syntax. A rule is a tool name ("Read": any use of it) or a tool name with a specifier
// ("Bash(git status)", "Bash(npm run test:*)", "Edit(src/**)"). The specifier is matched against
// the request's main input: the command for Bash, the path for file tools, the URL for WebFetch,
// the pattern for Grep and Glob. It matches exactly, or with a trailing ":*" as a prefix, and "*"
// matches any run of characters. A Bash command that joins, redirects or substitutes commands is
// allowed only by a rule that names it exactly, and denied by a rule that covers any part. Deny wins over allow; a request no rule matches is
// asked.
type Policy struct {
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
	// Dir is where relative paths of file rules start ("Read(./.env)"): the agent's directory.
	Dir string `json:"-"`
}

// Decide returns "allow" or "deny" and the rule that decided, or "" when no rule matches.
func (p Policy) Decide(tool string, input []byte) (decision, rule string) {
	for _, r := range p.Deny {
		if p.ruleMatches(r, tool, input, true) {
			return "deny", r
		}
	}
	for _, r := range p.Allow {
		if p.ruleMatches(r, tool, input, false) {
			return "allow", r
		}
	}
	return "", ""
}

// Empty reports whether the policy has no rule.
func (p Policy) Empty() bool { return len(p.Allow) == 0 && len(p.Deny) == 0 }

// ParseRule splits a rule into its tool name and specifier ("" for none).
func ParseRule(rule string) (tool, spec string, err error) {
	rule = strings.TrimSpace(rule)
	open := strings.IndexByte(rule, '(')
	if open < 0 {
		tool = rule
	} else {
		if !strings.HasSuffix(rule, ")") {
			return "", "", fmt.Errorf("rule %q: want Tool or Tool(specifier)", rule)
		}
		tool, spec = rule[:open], rule[open+1:len(rule)-1]
		if spec == "" {
			return "", "", fmt.Errorf("rule %q: an empty specifier; write %s alone for any use", rule, tool)
		}
	}
	if tool == "" || strings.ContainsAny(tool, " ()*") {
		return "", "", fmt.Errorf("rule %q: want a tool name such as Bash, Read or Edit", rule)
	}
	return tool, spec, nil
}

// ruleMatches reports whether rule covers the request. A deny rule covers a compound Bash
// command when it covers any of its parts; an allow rule only when it names it exactly.
func (p Policy) ruleMatches(rule, tool string, input []byte, deny bool) bool {
	rt, spec, err := ParseRule(rule)
	if err != nil || rt != tool {
		return false
	}
	if spec == "" {
		return true
	}
	subject, ok := ruleSubject(tool, input)
	if !ok {
		return false // a specifier needs something to match
	}
	if fileTool(tool) {
		// Paths as the file system sees them: "src/../../.bashrc" is not under src, and
		// "//.env" is ".env". A rule's relative path starts at the agent's directory.
		if !filepath.IsAbs(spec) && p.Dir != "" {
			spec = filepath.Join(p.Dir, spec)
		}
		if !filepath.IsAbs(subject) && p.Dir != "" {
			subject = filepath.Join(p.Dir, subject)
		}
		subject = filepath.Clean(subject)
	}
	if spec == subject {
		return true
	}
	if tool == "Bash" && strings.ContainsAny(subject, shellOperators) {
		if !deny {
			// "Bash(git status:*)" must not allow "git status; rm -rf ~".
			return false
		}
		// Every command the line runs, from wherever it starts: "(rm -rf ~)", "{ rm x; }",
		// "echo $(rm x)" all run rm.
		for _, part := range strings.FieldsFunc(subject, func(r rune) bool { return strings.ContainsRune(shellOperators, r) }) {
			if specMatches(spec, strings.TrimSpace(part)) {
				return true
			}
		}
	}
	return specMatches(spec, subject)
}

// specMatches matches a rule's specifier: a trailing ":*" is a prefix, "*" any run of characters.
func specMatches(spec, subject string) bool {
	if prefix, ok := strings.CutSuffix(spec, ":*"); ok {
		return strings.HasPrefix(subject, prefix)
	}
	return globMatch(spec, subject)
}

// shellOperators join, group, negate, redirect or substitute commands.
const shellOperators = ";&|<>$`\n(){}!"

// fileTool reports whether a tool's rule specifier is a path.
func fileTool(tool string) bool {
	switch tool {
	case "Read", "Edit", "Write", "MultiEdit", "NotebookEdit":
		return true
	}
	return false
}

// ruleSubject is the input a rule's specifier is matched against.
func ruleSubject(tool string, input []byte) (string, bool) {
	var keys []string
	switch tool {
	case "Bash":
		keys = []string{"command"}
	case "Read", "Edit", "Write", "MultiEdit", "NotebookEdit":
		keys = []string{"file_path", "notebook_path", "path"}
	case "WebFetch":
		keys = []string{"url"}
	case "Grep", "Glob":
		keys = []string{"pattern"}
	default:
		keys = []string{"command", "file_path", "path", "url", "pattern"}
	}
	for _, k := range keys {
		if v := gjson.GetBytes(input, k); v.Type == gjson.String {
			return strings.TrimSpace(v.Str), true
		}
	}
	return "", false
}

// globMatch matches s against a pattern where "*" matches any run of characters, "/" included.
func globMatch(pattern, s string) bool {
	if !strings.Contains(pattern, "*") {
		return pattern == s
	}
	// path.Match's "*" stops at "/": split on "*" and match the pieces in order instead.
	parts := strings.Split(pattern, "*")
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return strings.HasSuffix(s, last) && len(s) >= len(last)
}
