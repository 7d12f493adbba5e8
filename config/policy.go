package config

import (
	"fmt"
	"strings"
)

// Policy answers permission requests by itself: agt.toml's allow and deny rules, in Claude's rule
// syntax. A rule is a tool name ("Read": any use of it) or a tool name with a specifier
// ("Bash(git status)", "Bash(npm run test:*)", "Edit(src/**)"). The specifier matches exactly,
// or with a trailing ":*" as a prefix, and "*" matches any run of characters. What it is
// matched against is the request's main input as the system will see it, never its text alone:
//   - Bash: every command the line runs (see parseShell), by its program's name ("/bin/rm" and
//     "\rm" are "rm"). A deny rule that covers any of them denies; an allow needs every one of
//     them allowed (or a rule naming the whole line exactly). A line that cannot be judged
//     without running it (a command in a variable, eval) is asked whenever a rule denies parts of Bash.
//   - Read, Edit, Write, MultiEdit, NotebookEdit: the path, relative to the agent's directory,
//     with symbolic links and ".." resolved as the file system will (/proc/self/cwd included).
//   - WebFetch: the parsed URL: scheme, host, port and path (see urlMatches).
//   - Grep, Glob: the pattern; other tools: the first of command, file_path, path, url, pattern.
//
// Deny wins over allow; a request no rule decides is asked.
type Policy struct {
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
	// Dir is where relative paths of file rules start ("Read(./.env)"): the agent's directory.
	Dir string `json:"-"`
}

// Decide returns "allow" or "deny" and the rule that decided (rules, comma-separated, when
// several allow the commands of one line between them), or "" when no rule decides.
func (p Policy) Decide(tool string, input []byte) (decision, rule string) {
	req := p.request(tool, input)
	unsure := false
	for _, r := range p.Deny {
		switch req.denies(r) {
		case matched:
			return "deny", r
		case unknown:
			unsure = true
		}
	}
	if unsure {
		return "", "" // a deny rule might cover it: a person decides
	}
	if rules := req.allowedBy(p.Allow); len(rules) > 0 {
		return "allow", strings.Join(rules, ", ")
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
