package config

import (
	"path"
	"strings"
)

// A wrapper is a program that runs another one named in its arguments: env, nice, timeout,
// xargs, sudo. Its options are read as the program reads them, so that the command it runs is
// the one judged; an option it does not know, or one that makes the command unknowable before
// it runs (env -S, sudo -s), leaves the line unsure.
type wrapper struct {
	flags    string          // short options without a value
	values   string          // short options with a value ("-n 5", "-n5")
	optional string          // short options with a value only when attached ("-i{}")
	script   string          // short options whose value is a shell command (su -c, flock -c)
	doubt    string          // short options that make what runs unknowable
	long     map[string]byte // long options: a value required (=), optional (?), none (-), a shell command (c), unknowable (!)
	digits   bool            // "-10" is an option (nice)
	assigns  bool            // NAME=value words come before the command (env, sudo)
	skip     int             // words between the options and the command (timeout's duration)
	open     bool            // the command gets more arguments at run time (xargs)
	through  bool            // allow rules look through it to the command: it adds nothing they judge
	bare     string          // what it runs without a command: "" nothing, "echo" for xargs, "shell" an interactive shell
	joined   bool            // its command is its words joined into a shell command (watch, ssh)
}

var wrappers = map[string]wrapper{
	"env": {flags: "i0v", values: "uCP", doubt: "S", assigns: true, through: true,
		long: map[string]byte{"ignore-environment": '-', "null": '-', "unset": '=', "chdir": '=', "split-string": '!',
			"debug": '-', "block-signal": '?', "default-signal": '?', "ignore-signal": '?', "list-signal-handling": '-'}},
	"command": {flags: "pvV", through: true},
	"builtin": {through: true},
	"exec":    {flags: "cl", values: "a", through: true},
	"nice":    {values: "n", digits: true, through: true, long: map[string]byte{"adjustment": '='}},
	"nohup":   {through: true},
	"timeout": {flags: "v", values: "ks", skip: 1, through: true,
		long: map[string]byte{"kill-after": '=', "signal": '=', "preserve-status": '-', "foreground": '-', "verbose": '-'}},
	"xargs": {flags: "0oprtx", values: "adEILnPs", optional: "eil", open: true, through: true, bare: "echo",
		long: map[string]byte{"null": '-', "arg-file": '=', "delimiter": '=', "eof": '?', "replace": '?', "max-lines": '?',
			"max-args": '=', "max-procs": '=', "interactive": '-', "no-run-if-empty": '-', "max-chars": '=', "verbose": '-',
			"exit": '-', "open-tty": '-', "show-limits": '-', "process-slot-var": '='}},
	"sudo": {flags: "AbEHKklnPSVvB", values: "CDghprTtUuR", doubt: "ies", assigns: true,
		long: map[string]byte{"user": '=', "group": '=', "host": '=', "chdir": '=', "chroot": '=', "close-from": '=',
			"prompt": '=', "role": '=', "type": '=', "command-timeout": '=', "other-user": '=', "askpass": '-',
			"background": '-', "preserve-env": '?', "preserve-groups": '-', "set-home": '-', "login": '!', "shell": '!',
			"edit": '!', "non-interactive": '-', "stdin": '-', "reset-timestamp": '-', "remove-timestamp": '-',
			"list": '-', "validate": '-', "bell": '-'}},
	"doas":    {flags: "nL", values: "uaC", doubt: "s", bare: "shell"},
	"time":    {flags: "pvqa", values: "fo", through: true, long: map[string]byte{"format": '=', "output": '=', "append": '-', "verbose": '-', "portability": '-', "quiet": '-'}},
	"stdbuf":  {values: "ioe", through: true, long: map[string]byte{"input": '=', "output": '=', "error": '='}},
	"setsid":  {flags: "cfw", through: true, long: map[string]byte{"ctty": '-', "fork": '-', "wait": '-'}},
	"chroot":  {skip: 1, bare: "shell", long: map[string]byte{"userspec": '=', "groups": '=', "skip-chdir": '-'}},
	"ionice":  {flags: "t", values: "cnpPu", through: true, long: map[string]byte{"class": '=', "classdata": '=', "pid": '=', "pgid": '=', "uid": '=', "ignore": '-'}},
	"taskset": {flags: "acpf", skip: 1, through: true, long: map[string]byte{"all-tasks": '-', "pid": '-', "cpu-list": '-'}},
	"flock": {flags: "sxunoFe", values: "wE", script: "c", skip: 1, through: true,
		long: map[string]byte{"shared": '-', "exclusive": '-', "unlock": '-', "nonblock": '-', "close": '-', "no-fork": '-',
			"timeout": '=', "conflict-exit-code": '=', "verbose": '-', "command": 'c'}},
	"watch": {flags: "bcegtxpwr", optional: "d", values: "nq", joined: true, through: true,
		long: map[string]byte{"beep": '-', "color": '-', "no-color": '-', "differences": '?', "errexit": '-', "chgexit": '-',
			"equexit": '=', "interval": '=', "precise": '-', "no-title": '-', "no-wrap": '-', "exec": '-', "no-rerun": '-'}},
	"ssh":    {flags: "46AaCfGgKkMNnqsTtVvXxYy", values: "BbcDEeFIiJLlmOoPpQRSWw", skip: 1, joined: true, bare: "shell"},
	"strace": {flags: "cCdDfFhikqrtTvVwxyzZn", values: "abeEIoOpPsSuUX", through: true},
	"fakeroot": {flags: "uhv", values: "lisb", through: true, bare: "shell",
		long: map[string]byte{"faked": '=', "lib": '=', "unknown-is-real": '-'}},
	"eatmydata": {through: true},
	"unbuffer":  {flags: "p", through: true},
	"busybox":   {through: true},
	"su": {flags: "lmpfP", values: "sgGw", script: "c", bare: "shell",
		long: map[string]byte{"login": '-', "preserve-environment": '-', "pty": '-', "shell": '=', "group": '=',
			"supp-group": '=', "command": 'c', "session-command": 'c', "whitelist-environment": '=', "fast": '-'}},
}

// shells run the string after -c as commands, or their input when given no script.
var shells = map[string]bool{
	"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true, "ash": true,
	"rbash": true, "yash": true, "posh": true, "lksh": true, "oksh": true, "fish": true,
}

// unknowable are commands that run code they are given as text or as a file, or change what a
// name runs: what they do is only known when they run.
var unknowable = map[string]string{
	"eval":     "eval runs its arguments as commands",
	"source":   "source runs a file's commands",
	".":        ". runs a file's commands",
	"trap":     "trap runs its argument as commands",
	"alias":    "alias changes what a name runs",
	"fc":       "fc runs commands from the history",
	"enable":   "enable loads builtins",
	"bind":     "bind runs its argument as commands",
	"complete": "complete names commands to run",
	"compgen":  "compgen runs commands it is given",
}

// argv records one program with its arguments, and, for a wrapper or a shell, what it runs.
func (l *shellLine) argv(assigns, words []string, open bool, depth int) {
	cmd := shellCmd{assigns: assigns, words: words, open: open}
	name := path.Base(words[0])
	if why, ok := unknowable[name]; ok {
		l.doubt("%s", why)
	}
	switch name {
	case "hash":
		if anyOption(words[1:], 'p') {
			l.doubt("hash -p changes what a name runs")
		}
	case "mapfile", "readarray":
		if anyOption(words[1:], 'C') {
			l.doubt("%s -C runs a command", name)
		}
	case "find":
		l.cmds = append(l.cmds, cmd)
		l.findExec(words, depth)
		return
	}
	if shells[name] {
		l.shell(cmd, depth)
		return
	}
	w, ok := wrappers[name]
	if !ok {
		l.cmds = append(l.cmds, cmd)
		return
	}
	cmd.through = w.through
	l.cmds = append(l.cmds, cmd)
	l.wrapped(name, w, assigns, words, open, depth)
}

// wrapped reads a wrapper's options and records the command it runs.
// open says more words follow at run time: the command must be among those known.
func (l *shellLine) wrapped(name string, w wrapper, assigns, words []string, open bool, depth int) {
	var script []string // shell commands given as option values
	i := 1
options:
	for i < len(words) {
		a := words[i]
		switch {
		case a == "--":
			i++
			break options
		case w.assigns && strings.IndexByte(a, '=') > 0 && !strings.HasPrefix(a, "-"):
			// env and sudo take any word with a '=' as an assignment.
			if v, _, _ := strings.Cut(a, "="); codeVariable(v) {
				l.doubt("it sets %s, whose value bash or the loader may run", v)
			}
			assigns = append(assigns[:len(assigns):len(assigns)], a)
			i++
			continue
		case a == "-" && (name == "env" || name == "su"):
			i++
			continue
		case !strings.HasPrefix(a, "-") || a == "-":
			break options
		case strings.HasPrefix(a, "--"):
			key, val, hasVal := strings.Cut(a[2:], "=")
			kind, known := w.long[key]
			switch {
			case !known:
				l.doubt("%s's option --%s is not one agt knows", name, key)
				return
			case kind == '!':
				l.doubt("%s --%s runs what cannot be known before it runs", name, key)
				return
			case (kind == '=' || kind == 'c') && !hasVal:
				i++
				if i < len(words) {
					val = words[i]
				}
			}
			if kind == 'c' {
				script = append(script, val)
			}
			i++
			continue
		}
		for j := 1; j < len(a); j++ {
			c := a[j]
			switch {
			case w.digits && c >= '0' && c <= '9':
			case strings.IndexByte(w.doubt, c) >= 0:
				l.doubt("%s -%c runs what cannot be known before it runs", name, c)
				return
			case strings.IndexByte(w.flags, c) >= 0:
			case strings.IndexByte(w.optional, c) >= 0:
				j = len(a)
			case strings.IndexByte(w.values, c) >= 0 || strings.IndexByte(w.script, c) >= 0:
				val := a[j+1:]
				if val == "" {
					i++
					if i < len(words) {
						val = words[i]
					}
				}
				if strings.IndexByte(w.script, c) >= 0 {
					script = append(script, val)
				}
				j = len(a)
			default:
				l.doubt("%s's option -%c is not one agt knows", name, c)
				return
			}
		}
		i++
	}
	i += w.skip
	if name == "ssh" && i < len(words) && strings.HasPrefix(words[i], "-") {
		l.doubt("ssh options after the host are not read by agt")
		return
	}
	if name == "flock" && i < len(words) && (words[i] == "-c" || words[i] == "--command") {
		if i+1 < len(words) {
			script = append(script, words[i+1])
		}
		i = len(words)
	}
	if name == "su" {
		// su takes its options anywhere, and runs a shell: only -c says what that shell does.
		for _, s := range script {
			l.parse(s, depth+1)
		}
		if len(script) == 0 {
			l.doubt("su starts a shell that reads its input")
		}
		return
	}
	for _, s := range script {
		l.parse(s, depth+1)
	}
	var inner []string
	if i < len(words) {
		inner = words[i:]
	}
	switch {
	case open && (len(inner) == 0 || w.joined):
		l.doubt("what %s runs is only known at run time", name)
	case len(inner) > 0 && w.joined && !(name == "watch" && anyOption(words[1:i], 'x')):
		l.parse(strings.Join(inner, " "), depth+1)
	case len(inner) > 0:
		l.argv(assigns, inner, w.open || open, depth)
	case len(script) > 0:
	case w.bare == "echo":
		l.argv(assigns, []string{"echo"}, true, depth)
	case w.bare == "shell":
		l.doubt("%s starts a shell that reads its input", name)
	}
}

// shell records a shell: the string after -c is parsed as commands; a script file is a
// program like any other; no script means commands read from its input, which cannot be known.
func (l *shellLine) shell(cmd shellCmd, depth int) {
	words := cmd.words
	command, stdin := false, false
	i := 1
	for ; i < len(words); i++ {
		a := words[i]
		if a == "--" || a == "-" {
			i++
			break
		}
		if strings.HasPrefix(a, "--") {
			switch a {
			case "--rcfile", "--init-file":
				i++
			case "--login", "--noprofile", "--norc", "--posix", "--restricted", "--verbose", "--noediting",
				"--debug", "--debugger", "--dump-strings", "--dump-po-strings", "--pretty-print", "--help", "--version":
			default:
				l.cmds = append(l.cmds, cmd)
				l.doubt("%s's option %s is not one agt knows", path.Base(words[0]), a)
				return
			}
			continue
		}
		if len(a) < 2 || a[0] != '-' && a[0] != '+' {
			break
		}
		for _, c := range a[1:] {
			switch c {
			case 'c':
				command = true
			case 's', 'i':
				stdin = true
			case 'o', 'O':
				i++ // the option's name
			}
		}
	}
	switch {
	case command && i >= len(words) && cmd.open:
		l.cmds = append(l.cmds, cmd)
		l.doubt("what %s runs is only known at run time", path.Base(words[0]))
	case command && i < len(words):
		cmd.through = true
		l.cmds = append(l.cmds, cmd)
		l.parse(words[i], depth+1)
	case command:
		l.cmds = append(l.cmds, cmd) // -c without a string: an error, nothing runs
	case stdin || i >= len(words) || cmd.open:
		l.cmds = append(l.cmds, cmd)
		l.doubt("%s reads its commands from its input", path.Base(words[0]))
	default:
		l.cmds = append(l.cmds, cmd) // a script file: a program like any other
	}
}

// findExec records the commands of find's -exec, -execdir, -ok and -okdir, each up to its ';'
// or '+'; the file names it passes come at run time.
func (l *shellLine) findExec(words []string, depth int) {
	for i := 1; i < len(words); i++ {
		switch words[i] {
		case "-exec", "-execdir", "-ok", "-okdir":
		default:
			continue
		}
		j := i + 1
		for j < len(words) && words[j] != ";" && words[j] != "+" {
			j++
		}
		if j > i+1 {
			l.argv(nil, words[i+1:j], true, depth)
		}
		i = j
	}
}

// anyOption reports whether the short option c is among words, before the first operand.
func anyOption(words []string, c byte) bool {
	for _, w := range words {
		if w == "--" || !strings.HasPrefix(w, "-") {
			return false
		}
		if !strings.HasPrefix(w, "--") && strings.IndexByte(w[1:], c) >= 0 {
			return true
		}
	}
	return false
}
