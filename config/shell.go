package config

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// A Bash rule is decided on what the shell would run, not on the text of the line: the line
// is parsed as bash parses it, and every simple command is found, in every list, pipeline,
// subshell, function, compound command, command or process substitution, inside the string of
// a `bash -c`, and behind wrappers such as env, nice, timeout, xargs or sudo. What cannot be
// known without running the line (a command held in a variable, eval, a string a wrapper
// reads at run time) makes the line unsure: no rule may allow it while a rule denies parts of
// Bash, and it is asked.

// shellCmd is one program a shell line runs.
type shellCmd struct {
	assigns []string // NAME=value it is given (before it, or by env), as written
	words   []string // the program as written, then its arguments, quotes removed
	open    bool     // more arguments come only at run time (xargs, find -exec, a variable)
	through bool     // a wrapper that allow rules look through: it runs words' command and does nothing else they judge
}

// program is the command's name without its directory: "/bin/rm" and "\rm" are "rm".
func (c shellCmd) program() string { return path.Base(c.words[0]) }

// shellLine is what parsing a command line found.
type shellLine struct {
	cmds   []shellCmd
	writes bool   // a redirection writes a file (other than /dev/null)
	unsure string // why the line cannot be judged without running it; "" when it can
}

// maxShellDepth bounds the strings run by strings (bash -c "bash -c '…'").
const maxShellDepth = 8

// maxShellLine bounds the text parsed: a longer command is asked about.
const maxShellLine = 64 << 10

// parseShell finds every command src runs.
func parseShell(src string) shellLine {
	var l shellLine
	l.parse(src, 0)
	return l
}

func (l *shellLine) doubt(format string, a ...any) {
	if l.unsure == "" {
		l.unsure = fmt.Sprintf(format, a...)
	}
}

func (l *shellLine) parse(src string, depth int) {
	if depth > maxShellDepth {
		l.doubt("shell strings nested deeper than %d", maxShellDepth)
		return
	}
	if len(src) > maxShellLine {
		l.doubt("a command longer than %d bytes", maxShellLine)
		return
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		l.doubt("it does not parse: %v", err)
		return
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Stmt:
			for _, r := range n.Redirs {
				l.redirect(r)
			}
			if call, ok := n.Cmd.(*syntax.CallExpr); ok {
				l.call(call, depth)
			}
		case *syntax.DeclClause:
			l.decl(n)
		case *syntax.ArithmCmd, *syntax.ArithmExp, *syntax.LetClause:
			// Bash evaluates a variable's value as an expression, and a value such as
			// 'a[$(rm -rf ~)]' runs the command inside.
			if readsVariable(n) {
				l.doubt("arithmetic on a variable, whose value may run a command")
			}
		case *syntax.ParamExp:
			l.param(n)
		case *syntax.BinaryTest:
			if arithmeticTest(n.Op) && (readsVariable(n.X) || readsVariable(n.Y)) {
				l.doubt("arithmetic on a variable, whose value may run a command")
			}
		case *syntax.Assign:
			l.assign(n)
		}
		return true
	})
}

// call records a simple command and what it runs.
func (l *shellLine) call(call *syntax.CallExpr, depth int) {
	var assigns []string
	for _, a := range call.Assigns {
		assigns = append(assigns, assignText(a))
	}
	if len(call.Args) == 0 {
		// Assignments alone: a command of their own for allow rules, which must name them.
		l.cmds = append(l.cmds, shellCmd{words: assigns})
		return
	}
	var words []string
	open := false
	for i, w := range call.Args {
		vals, ok := wordValues(w)
		if !ok {
			if i == 0 {
				l.doubt("its command name %s is only known at run time", printWord(w))
				return
			}
			open = true // the arguments from here on are known at run time only
			break
		}
		words = append(words, vals...)
	}
	if len(words) == 0 {
		l.doubt("its command name is empty")
		return
	}
	if strings.ContainsAny(words[0], "*?[") && globbed(call.Args[0]) {
		l.doubt("its command name %q is a pattern", words[0])
		return
	}
	l.argv(assigns, words, open, depth)
}

// redirect notes a redirection that writes a file.
func (l *shellLine) redirect(r *syntax.Redirect) {
	switch r.Op {
	case syntax.RdrIn, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
		return
	case syntax.DplIn, syntax.DplOut:
		if v, ok := wordValue(r.Word); ok && (v == "-" || isNumber(v)) {
			return // a descriptor copied or closed
		}
	}
	if v, ok := wordValue(r.Word); ok && v == "/dev/null" {
		return
	}
	l.writes = true
}

// decl is declare, local, export, readonly or typeset: a command of its own for allow rules.
func (l *shellLine) decl(d *syntax.DeclClause) {
	words := []string{d.Variant.Value}
	for _, a := range d.Args {
		words = append(words, assignText(a))
		if a.Naked && a.Value != nil {
			if v, ok := wordValue(a.Value); ok && strings.HasPrefix(v, "-") && strings.Contains(v, "n") {
				// A name reference resolves its target, subscript included, when used.
				l.doubt("%s -n makes a name reference", d.Variant.Value)
			}
		}
	}
	l.cmds = append(l.cmds, shellCmd{words: words})
}

// assign doubts assignments to the variables that make bash or the loader run code.
func (l *shellLine) assign(a *syntax.Assign) {
	if a.Name == nil {
		return
	}
	if codeVariable(a.Name.Value) {
		l.doubt("it sets %s, whose value bash or the loader may run", a.Name.Value)
	}
	if a.Index != nil && readsVariable(a.Index) {
		l.doubt("arithmetic on a variable, whose value may run a command")
	}
}

// param doubts expansions that evaluate a value as code: a subscript or slice evaluated
// arithmetically, an indirect name, a prompt expansion (${x@P} runs $(…)).
func (l *shellLine) param(p *syntax.ParamExp) {
	switch {
	case p.Index != nil && !wholeArray(p.Index) && readsVariable(p.Index):
		l.doubt("arithmetic on a variable, whose value may run a command")
	case p.Slice != nil && (readsVariable(p.Slice.Offset) || readsVariable(p.Slice.Length)):
		l.doubt("arithmetic on a variable, whose value may run a command")
	case p.Excl && p.Names == 0 && (p.Index == nil || !wholeArray(p.Index)):
		l.doubt("an indirect expansion ${!%s}", litValue(p.Param))
	case p.Exp != nil && p.Exp.Op == syntax.OtherParamOps:
		l.doubt("a ${%s@…} transformation", litValue(p.Param))
	}
}

// wholeArray reports whether a subscript is [@] or [*]: every element, nothing evaluated.
func wholeArray(x syntax.ArithmExpr) bool {
	w, ok := x.(*syntax.Word)
	if !ok {
		return false
	}
	v, ok := wordValue(w)
	return ok && (v == "@" || v == "*")
}

// codeVariable reports whether assigning name can make bash or the loader run code it holds.
func codeVariable(name string) bool {
	switch name {
	case "PS4", "BASH_ENV", "ENV", "PROMPT_COMMAND", "SHELLOPTS", "BASHOPTS", "BASH_LOADABLES_PATH",
		"LD_PRELOAD", "LD_AUDIT", "LD_LIBRARY_PATH":
		return true
	}
	return strings.HasPrefix(name, "BASH_FUNC_")
}

func arithmeticTest(op syntax.BinTestOperator) bool {
	switch op {
	case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
		return true
	}
	return false
}

// readsVariable reports whether an arithmetic expression names a variable or expands one.
func readsVariable(n syntax.Node) bool {
	if n == nil {
		return false
	}
	found := false
	syntax.Walk(n, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.ParamExp, *syntax.CmdSubst:
			found = true
		case *syntax.Lit:
			if n.Value != "" && !isNumber(strings.TrimLeft(n.Value, "+-")) && !strings.HasPrefix(n.Value, "0x") && !strings.Contains(n.Value, "#") {
				found = true
			}
		}
		return !found
	})
	return found
}

func isNumber(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// wordValues is what a word expands to when it is known before running: quotes removed, braces
// expanded (bash expands "{rm,-rf,x}" into three words, "{r..r}m" into rm). ok is false for
// anything expanded at run time: parameters, command substitutions, arithmetic, extended
// globs, and more than maxBraceWords words.
func wordValues(w *syntax.Word) ([]string, bool) {
	w = &syntax.Word{Parts: slices.Clone(w.Parts)} // SplitBraces changes the word: not the tree's
	if !syntax.SplitBraces(w) {
		v, ok := wordValue(w)
		return []string{v}, ok
	}
	return partsValues(w.Parts)
}

// maxBraceWords bounds what a brace expansion may make: more is asked about.
const maxBraceWords = 256

// partsValues is every word that parts, brace expansions among them, expand to.
func partsValues(parts []syntax.WordPart) ([]string, bool) {
	out := []string{""}
	for _, part := range parts {
		var alts []string
		switch p := part.(type) {
		case *syntax.BraceExp:
			if p.Sequence {
				var ok bool
				if alts, ok = braceSequence(p); !ok {
					return nil, false
				}
				break
			}
			for _, e := range p.Elems {
				vs, ok := partsValues(e.Parts)
				if !ok {
					return nil, false
				}
				alts = append(alts, vs...)
			}
		default:
			v, ok := wordValue(&syntax.Word{Parts: []syntax.WordPart{p}})
			if !ok {
				return nil, false
			}
			alts = []string{v}
		}
		if len(out)*len(alts) > maxBraceWords {
			return nil, false
		}
		next := make([]string, 0, len(out)*len(alts))
		for _, o := range out {
			for _, a := range alts {
				next = append(next, o+a)
			}
		}
		out = next
	}
	return out, true
}

// braceSequence is {x..y[..step]}: numbers, or single characters.
func braceSequence(b *syntax.BraceExp) ([]string, bool) {
	if len(b.Elems) < 2 {
		return nil, false
	}
	from, to := b.Elems[0].Lit(), b.Elems[1].Lit()
	step := 1
	if len(b.Elems) > 2 {
		n, err := strconv.Atoi(b.Elems[2].Lit())
		if err != nil {
			return nil, false
		}
		step = max(n, -n, 1)
	}
	x, err1 := strconv.Atoi(from)
	y, err2 := strconv.Atoi(to)
	chars := err1 != nil || err2 != nil
	if chars {
		if len(from) != 1 || len(to) != 1 {
			return nil, false
		}
		x, y = int(from[0]), int(to[0])
	}
	var out []string
	for n := x; (x <= y && n <= y) || (x > y && n >= y); {
		if len(out) == maxBraceWords {
			return nil, false
		}
		if chars {
			out = append(out, string(rune(n)))
		} else {
			out = append(out, strconv.Itoa(n))
		}
		if x <= y {
			n += step
		} else {
			n -= step
		}
	}
	return out, true
}

// wordValue is a word's value with quotes removed, when it is known without running anything.
func wordValue(w *syntax.Word) (string, bool) {
	if w == nil {
		return "", false
	}
	var b strings.Builder
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			unescape(&b, p.Value, false)
		case *syntax.SglQuoted:
			if !p.Dollar {
				b.WriteString(p.Value)
				continue
			}
			v, ok := ansiC(p.Value)
			if !ok {
				return "", false
			}
			b.WriteString(v)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				lit, ok := q.(*syntax.Lit)
				if !ok {
					return "", false
				}
				unescape(&b, lit.Value, true)
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

// unescape removes the backslashes bash removes: any before a character outside quotes, and
// inside double quotes only those before $, `, ", \ and a newline; a backslash-newline goes.
func unescape(b *strings.Builder, s string, quoted bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		next := s[i+1]
		switch {
		case next == '\n':
			i++
		case !quoted || strings.IndexByte("$`\"\\", next) >= 0:
			b.WriteByte(next)
			i++
		default:
			b.WriteByte(c)
		}
	}
}

// globbed reports whether a word has an unquoted pattern character.
func globbed(w *syntax.Word) bool {
	for _, part := range w.Parts {
		if lit, ok := part.(*syntax.Lit); ok && strings.ContainsAny(lit.Value, "*?[") {
			return true
		}
	}
	return false
}

// assignText is an assignment as written: NAME=value.
func assignText(a *syntax.Assign) string {
	var b strings.Builder
	syntax.NewPrinter().Print(&b, &syntax.CallExpr{Assigns: []*syntax.Assign{a}})
	return b.String()
}

func printWord(w *syntax.Word) string {
	var b strings.Builder
	syntax.NewPrinter().Print(&b, w)
	return b.String()
}

func litValue(l *syntax.Lit) string {
	if l == nil {
		return ""
	}
	return l.Value
}

// ansiC decodes the escapes of bash's $'…' strings: \n, \e, \x72, \0162, \u0072, \cA and the
// like. ok is false for an escape it does not know, which is then asked about.
func ansiC(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		c := s[i]
		if r := strings.IndexByte("abefnrtvE\\'\"?", c); r >= 0 {
			b.WriteByte("\a\b\x1b\f\n\r\t\v\x1b\\'\"?"[r])
			continue
		}
		digits, base, size := "", 0, 0
		switch {
		case c >= '0' && c <= '7':
			digits, base, size = "01234567", 8, 3
			i--
		case c == 'x':
			digits, base, size = "0123456789abcdefABCDEF", 16, 2
		case c == 'u':
			digits, base, size = "0123456789abcdefABCDEF", 16, 4
		case c == 'U':
			digits, base, size = "0123456789abcdefABCDEF", 16, 8
		case c == 'c' && i+1 < len(s):
			i++
			b.WriteByte(s[i] & 0x1f)
			continue
		default:
			return "", false
		}
		j := i + 1
		for j < len(s) && j < i+1+size && strings.IndexByte(digits, s[j]) >= 0 {
			j++
		}
		n, err := strconv.ParseUint(s[i+1:j], base, 32)
		if err != nil {
			return "", false
		}
		if c == 'x' || base == 8 {
			b.WriteByte(byte(n))
		} else {
			b.WriteRune(rune(n))
		}
		i = j - 1
	}
	return b.String(), true
}
