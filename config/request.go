package config

import (
	"net/url"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tidwall/gjson"
)

// match is what a rule says of a request: it covers it, it does not, or that cannot be known
// without running it.
type match int

const (
	missed match = iota
	matched
	unknown
)

// request is a permission request as the rules see it: its main input parsed for its tool.
type request struct {
	tool    string
	subject string // the main input as the agent wrote it
	has     bool   // the input has one

	line *shellLine // Bash: what the command line runs

	path     string // file tools: the path resolved on disk
	lexical  string // ... and cleaned as written, relative to the agent's directory
	resolved bool   // path is known
	dir      string // the agent's directory, where relative paths of rules start

	url *url.URL // WebFetch: the parsed URL, nil when it does not parse
}

func (p Policy) request(tool string, input []byte) *request {
	r := &request{tool: tool, dir: p.Dir}
	r.subject, r.has = ruleSubject(tool, input)
	if !r.has {
		return r
	}
	switch {
	case tool == "Bash":
		l := parseShell(r.subject)
		r.line = &l
	case fileTool(tool):
		r.lexical = lexicalPath(p.Dir, r.subject)
		r.path, r.resolved = resolvePath(p.Dir, r.subject)
	case tool == "WebFetch":
		if u, err := url.Parse(r.subject); err == nil && u.Scheme != "" && u.Host != "" {
			r.url = u
		}
	}
	return r
}

// denies says whether the deny rule covers the request: unknown when it might, and only
// running it would tell.
func (r *request) denies(rule string) match {
	tool, spec, err := ParseRule(rule)
	switch {
	case err != nil || tool != r.tool:
		return missed
	case spec == "":
		return matched
	case !r.has:
		return unknown // a specifier needs something to match
	}
	switch {
	case r.line != nil:
		for _, c := range r.line.cmds {
			if denyCovers(spec, c) {
				return matched
			}
		}
		if r.line.unsure != "" {
			return unknown
		}
		return missed
	case fileTool(r.tool):
		if specMatches(r.pathSpec(spec, false), r.lexical) {
			return matched
		}
		if !r.resolved {
			return unknown
		}
		if specMatches(r.pathSpec(spec, true), r.path) {
			return matched
		}
		return missed
	case r.tool == "WebFetch":
		if r.url == nil {
			return unknown
		}
		if urlMatches(spec, r.url, true) {
			return matched
		}
		return missed
	}
	if specMatches(spec, r.subject) {
		return matched
	}
	return missed
}

// allowedBy returns the allow rules that together allow the request, none when they do not:
// one rule for most tools; for a Bash line, one for each command it runs, unless one names the
// whole line exactly.
func (r *request) allowedBy(rules []string) []string {
	var byCommand []string // Bash: a rule for each command, in order
	var covered []bool
	if r.line != nil {
		covered = make([]bool, len(r.line.cmds))
	}
	for _, rule := range rules {
		tool, spec, err := ParseRule(rule)
		if err != nil || tool != r.tool {
			continue
		}
		switch {
		case spec == "":
			return []string{rule}
		case !r.has:
		case r.line != nil:
			if !strings.Contains(spec, "*") && spec == r.subject {
				return []string{rule} // named exactly
			}
			if r.line.unsure != "" || r.line.writes {
				continue
			}
			used := false
			for i, c := range r.line.cmds {
				if !covered[i] && !c.through && allowCovers(spec, c) {
					covered[i], used = true, true
				}
			}
			if used {
				byCommand = append(byCommand, rule)
			}
		case fileTool(r.tool):
			if r.resolved && specMatches(r.pathSpec(spec, true), r.path) {
				return []string{rule}
			}
		case r.tool == "WebFetch":
			if r.url != nil && urlMatches(spec, r.url, false) {
				return []string{rule}
			}
		default:
			if specMatches(spec, r.subject) {
				return []string{rule}
			}
		}
	}
	if r.line == nil || len(byCommand) == 0 {
		return nil
	}
	for i, c := range r.line.cmds {
		if !covered[i] && !c.through {
			return nil
		}
	}
	return byCommand
}

// denyCovers reports whether a deny specifier covers a command: written as the line has it,
// or by its program's name; with arguments still to come (xargs), when some could make it match.
func denyCovers(spec string, c shellCmd) bool {
	args := c.words[1:]
	texts := []string{strings.Join(c.words, " "), strings.Join(append([]string{c.program()}, args...), " ")}
	specs := []string{spec}
	// "Bash(/usr/bin/curl:*)" denies curl however it is named.
	if first, rest, _ := strings.Cut(spec, " "); strings.Contains(first, "/") && !strings.Contains(strings.TrimSuffix(first, ":*"), "*") {
		base := path.Base(strings.TrimSuffix(first, ":*"))
		if strings.HasSuffix(first, ":*") {
			base += ":*"
		}
		if rest != "" {
			base += " " + rest
		}
		specs = append(specs, base)
	}
	for _, s := range specs {
		for _, t := range texts {
			if specMatches(s, t) || (c.open && couldMatch(s, t)) {
				return true
			}
		}
	}
	return false
}

// allowCovers reports whether an allow specifier covers a command as written, its assignments
// included; with arguments still to come, only when it covers whatever they are.
func allowCovers(spec string, c shellCmd) bool {
	t := strings.Join(append(slices.Clone(c.assigns), c.words...), " ")
	if !c.open {
		return specMatches(spec, t)
	}
	if prefix, ok := strings.CutSuffix(spec, ":*"); ok {
		return strings.HasPrefix(t, prefix)
	}
	// A pattern that ends in "*" and matches both the known words alone and followed by more.
	return strings.HasSuffix(spec, "*") && globMatch(spec, t) && globMatch(spec, t+" ")
}

// couldMatch reports whether spec matches t followed by some more words.
func couldMatch(spec, t string) bool {
	first := spec
	if prefix, ok := strings.CutSuffix(spec, ":*"); ok {
		first = prefix
	} else if i := strings.IndexByte(spec, '*'); i >= 0 {
		first = spec[:i]
	}
	return strings.HasPrefix(t, first) || strings.HasPrefix(first, t)
}

// specMatches matches a rule's specifier: a trailing ":*" is a prefix, "*" any run of characters.
func specMatches(spec, subject string) bool {
	if prefix, ok := strings.CutSuffix(spec, ":*"); ok {
		return strings.HasPrefix(subject, prefix)
	}
	return globMatch(spec, subject)
}

// pathSpec is a file rule's specifier as a path: relative to the agent's directory, cleaned,
// and when resolve is set, its directory resolved on disk as the request's path is.
func (r *request) pathSpec(spec string, resolve bool) string {
	spec, prefix := strings.CutSuffix(spec, ":*")
	suffix := ""
	if prefix {
		suffix = ":*"
	}
	literal, pattern := spec, ""
	if i := strings.IndexByte(spec, '*'); i >= 0 {
		// The directory before the first "*" is a path; what follows is matched as written.
		j := strings.LastIndexByte(spec[:i], '/')
		if j < 0 {
			literal, pattern = ".", spec
		} else {
			literal, pattern = spec[:j+1], spec[j+1:]
		}
	}
	p := lexicalPath(r.dir, literal)
	if resolve {
		if rp, ok := resolvePath(r.dir, literal); ok {
			p = rp
		}
	}
	if pattern != "" {
		p = strings.TrimSuffix(p, "/") + "/" + pattern
	}
	return p + suffix
}

// lexicalPath is p relative to dir, cleaned without looking at the disk, and with a process's
// root in /proc taken as "/" (and the agent's cwd as dir): what deny rules also look at when
// the disk cannot say.
func lexicalPath(dir, p string) string {
	if !filepath.IsAbs(p) && dir != "" {
		p = filepath.Join(dir, p)
	}
	p = filepath.Clean(p)
	names := split(p)
	if len(names) >= 3 && names[0] == "proc" {
		i := 2
		if len(names) >= 5 && names[2] == "task" {
			i = 4
		}
		self := names[1] == "self" || names[1] == "thread-self"
		switch {
		case i < len(names) && names[i] == "root":
			return filepath.Join(append([]string{"/"}, names[i+1:]...)...)
		case i < len(names) && names[i] == "cwd" && self && dir != "":
			return filepath.Join(append([]string{dir}, names[i+1:]...)...)
		}
	}
	return p
}

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
