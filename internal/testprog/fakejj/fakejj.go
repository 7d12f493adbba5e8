// Package fakejj stands in for the jj command in the end-to-end scripts: the root test binary
// registers Main as the script command jj. See Main for what it accepts.
package fakejj

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Main stands in for jj 0.41 in the scripts, where no real jj is installed. It accepts
// exactly the calls agt makes, spelled as jj's documented CLI spells them, and rejects anything
// else with exit status 2, as jj's argument parser does:
//
//	jj --no-pager --color never root
//	jj --no-pager --color never -R REPO log -r REVSET --no-graph -T TEMPLATE
//	jj --no-pager --color never -R REPO workspace add --name NAME [-r REVSET] DESTINATION
//	jj --no-pager --color never -R REPO workspace forget NAME...
//	jj --no-pager --color never -R REPO workspace list -T TEMPLATE
//	jj --no-pager --color never -R REPO diff -r REVSET --name-only
//	jj --no-pager --color never -R REPO diff --from REVSET --to REVSET --git
//	jj [--no-pager --color never] commit -m MESSAGE        (what a script's agent runs)
//	jj … squash, operation log, operation restore, resolve --list, workspace update-stale
//	                                                        (ops.go)
//
// (the global options in any order, -R also as --repository; long options also as --opt=value).
// The two templates must be the very ones agt uses.
//
// A fake repository is a directory with a .jj directory, which holds the fake's state:
//
//	.jj/revs        one revision a line, "SYMBOL CHANGE_ID empty|changed", where SYMBOL is what
//	                -r names it by (@, @-, main, NAME@); a SYMBOL on several lines names several
//	                revisions; -r also takes a CHANGE_ID
//	.jj/workspaces  "NAME PATH" a line, the workspaces besides default (the repository itself)
//	.jj/calls       every call's arguments, one call a line, shell-quoted; $FAKEJJ_LOG instead
//	                when set
//
// workspace add makes DESTINATION (whose parent must exist, as with jj), with .jj/repo naming
// the repository's .jj, the files of its base and a new empty revision NAME@ on the base. The
// @ of such a workspace is empty as long as its files are its base's, as if jj had
// snapshotted it; tree.go keeps the files of revisions, for diff and commit.
func Main() {
	os.Exit(fakeJJRun(os.Args[1:]))
}

const (
	fakeJJLogTemplate       = `change_id ++ " " ++ if(empty, "empty", "changed") ++ "\n"`
	fakeJJWorkspaceTemplate = `name ++ "\n"`
	fakeJJOpTemplate        = `id ++ "\n"`
)

func fakeJJRun(args []string) int {
	cwd, _ := os.Getwd()
	var (
		noPager bool
		color   string
		repoArg string
		rest    []string
	)
	usage := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "error: "+format+"\n\nFor more information, try '--help'.\n", a...)
		return 2
	}
	// Global options, then the subcommand.
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(a, "=")
		switch {
		case a == "--no-pager":
			noPager = true
		case name == "--color" || name == "-R" || name == "--repository":
			if !hasVal {
				if i+1 >= len(args) {
					return usage("a value is required for '%s' but none was supplied", name)
				}
				i++
				val = args[i]
			}
			if name == "--color" {
				color = val
			} else {
				repoArg = val
			}
		case strings.HasPrefix(a, "-"):
			return usage("unexpected argument '%s' found", a)
		default:
			rest = args[i:]
			i = len(args)
		}
	}

	// Find the repository and log the call, accepted or not.
	var ws *fakeJJWorkspace
	start := cwd
	if repoArg != "" {
		start = repoArg
		if !filepath.IsAbs(start) {
			start = filepath.Join(cwd, start)
		}
	}
	ws, notRepo := fakeJJFind(start, repoArg != "")
	fakeJJLog(ws, args)

	if !noPager || color != "never" {
		return usage("agt must run jj with --no-pager and --color never (got %q)", args)
	}
	if len(rest) == 0 {
		return usage("agt must name a subcommand")
	}
	cmd, rest := rest[0], rest[1:]
	if cmd == "workspace" || cmd == "operation" {
		if len(rest) == 0 {
			return usage("'jj %s' requires a subcommand", cmd)
		}
		cmd, rest = cmd+" "+rest[0], rest[1:]
	}
	opts, pos, err := fakeJJParse(cmd, rest)
	if err != "" {
		return usage("%s", err)
	}
	if ws == nil {
		fmt.Fprintf(os.Stderr, "Error: There is no jj repo in %q\n", notRepo)
		return 1
	}
	switch cmd {
	case "root":
		if repoArg != "" {
			return usage("agt runs jj root in the directory, without -R")
		}
		fmt.Println(ws.root)
		return 0
	case "log":
		if opts["-T"] != fakeJJLogTemplate {
			return usage("unexpected template %q", opts["-T"])
		}
		if _, ok := opts["--no-graph"]; !ok {
			return usage("agt must pass --no-graph")
		}
		revs := ws.resolve(opts["-r"])
		if revs == nil {
			fmt.Fprintf(os.Stderr, "Error: Revision `%s` doesn't exist\n", opts["-r"])
			return 1
		}
		for _, r := range revs {
			fmt.Printf("%s %s\n", r[0], r[1])
		}
		return 0
	case "workspace list":
		if opts["-T"] != fakeJJWorkspaceTemplate {
			return usage("unexpected template %q", opts["-T"])
		}
		for _, n := range ws.names() {
			fmt.Println(n)
		}
		return 0
	case "workspace forget":
		if len(pos) == 0 {
			return usage("agt must name the workspace to forget")
		}
		changed := false
		for _, name := range pos {
			if ws.forget(name) {
				changed = true
			} else {
				fmt.Fprintf(os.Stderr, "Warning: No such workspace: %s\n", name)
			}
		}
		if !changed {
			fmt.Fprintln(os.Stderr, "Nothing changed.")
		}
		return 0
	case "diff":
		return ws.diffCmd(opts, cwd)
	case "squash":
		return ws.squashCmd(opts, pos)
	case "resolve":
		return ws.resolveList(opts["-r"])
	case "operation log":
		if opts["-T"] != fakeJJOpTemplate || opts["-n"] != "1" {
			return usage("agt runs jj operation log -n 1 with its own template, got %q", args)
		}
		fmt.Println(ws.currentOp())
		return 0
	case "operation restore":
		if len(pos) != 1 {
			return usage("agt must name the operation to restore")
		}
		return ws.restoreCmd(pos[0])
	case "workspace update-stale":
		fmt.Fprintln(os.Stderr, "Nothing to do (the working copy is not stale).")
		return 0
	case "commit":
		return ws.commitCmd(opts["-m"])
	case "workspace add":
		if len(pos) != 1 {
			return usage("agt must give one destination, got %q", pos)
		}
		return ws.add(opts["--name"], opts["-r"], pos[0], cwd)
	}
	return usage("unrecognized subcommand '%s'", cmd)
}

// fakeJJParse reads the options and positional arguments of a subcommand, taking only those
// in jj's documented CLI that agt uses. Short and long spellings are stored under the short
// name where there is one.
func fakeJJParse(cmd string, args []string) (opts map[string]string, pos []string, err string) {
	valued := map[string]map[string]string{
		"root":                   {},
		"log":                    {"-r": "-r", "--revisions": "-r", "-T": "-T", "--template": "-T"},
		"workspace add":          {"--name": "--name", "-r": "-r", "--revision": "-r"},
		"workspace forget":       {},
		"workspace list":         {"-T": "-T", "--template": "-T"},
		"diff":                   {"-r": "-r", "--revisions": "-r", "-f": "--from", "--from": "--from", "-t": "--to", "--to": "--to"},
		"commit":                 {"-m": "-m", "--message": "-m"},
		"squash":                 {"-f": "--from", "--from": "--from", "-t": "--into", "--into": "--into", "--to": "--into", "-m": "-m", "--message": "-m"},
		"resolve":                {"-r": "-r", "--revision": "-r"},
		"operation log":          {"-n": "-n", "--limit": "-n", "-T": "-T", "--template": "-T"},
		"operation restore":      {},
		"workspace update-stale": {},
	}
	flags := map[string]map[string]string{
		"log":           {"--no-graph": "--no-graph"},
		"diff":          {"--git": "--git", "--name-only": "--name-only"},
		"squash":        {"-u": "-u", "--use-destination-message": "-u"},
		"resolve":       {"-l": "--list", "--list": "--list"},
		"operation log": {"--no-graph": "--no-graph", "-G": "--no-graph"},
	}
	known, ok := valued[cmd]
	if !ok {
		return nil, nil, fmt.Sprintf("unrecognized subcommand '%s'", cmd)
	}
	opts = map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			pos = append(pos, a)
			continue
		}
		name, val, hasVal := strings.Cut(a, "=")
		if f, ok := flags[cmd][name]; ok && !hasVal {
			opts[f] = ""
			continue
		}
		key, ok := known[name]
		if !ok {
			return nil, nil, fmt.Sprintf("unexpected argument '%s' found", a)
		}
		if _, dup := opts[key]; dup {
			return nil, nil, fmt.Sprintf("agt passes %s once", name)
		}
		if !hasVal {
			if i+1 >= len(args) {
				return nil, nil, fmt.Sprintf("a value is required for '%s' but none was supplied", name)
			}
			i++
			val = args[i]
		}
		opts[key] = val
	}
	switch cmd {
	case "root", "workspace list":
		if len(pos) > 0 {
			return nil, nil, fmt.Sprintf("unexpected argument '%s' found", pos[0])
		}
	case "log":
		if len(pos) > 0 {
			return nil, nil, fmt.Sprintf("agt passes no filesets to jj log, got %q", pos)
		}
		if _, ok := opts["-r"]; !ok {
			return nil, nil, "agt must pass -r to jj log"
		}
	case "workspace add":
		if _, ok := opts["--name"]; !ok {
			return nil, nil, "agt must pass --name to jj workspace add"
		}
	case "diff":
		_, git := opts["--git"]
		_, names := opts["--name-only"]
		_, r := opts["-r"]
		_, from := opts["--from"]
		_, to := opts["--to"]
		switch {
		case len(pos) > 0:
			return nil, nil, fmt.Sprintf("agt passes no filesets to jj diff, got %q", pos)
		case git == names:
			return nil, nil, "agt passes one of --git and --name-only to jj diff"
		case r == (from || to) || from != to:
			return nil, nil, "agt passes -r, or --from and --to, to jj diff"
		}
	case "commit":
		if _, ok := opts["-m"]; !ok || len(pos) > 0 {
			return nil, nil, "jj commit takes -m MESSAGE here (without it jj opens an editor)"
		}
	case "squash":
		_, m := opts["-m"]
		_, u := opts["-u"]
		if m == u {
			return nil, nil, "agt passes -m MESSAGE or --use-destination-message to jj squash (else jj may open an editor)"
		}
	case "resolve":
		if _, ok := opts["--list"]; !ok || len(pos) > 0 {
			return nil, nil, "agt runs jj resolve --list -r REV only"
		}
	case "operation log":
		if _, ok := opts["--no-graph"]; !ok {
			return nil, nil, "agt must pass --no-graph"
		}
	case "workspace update-stale":
		if len(pos) > 0 {
			return nil, nil, fmt.Sprintf("unexpected argument '%s' found", pos[0])
		}
	}
	return opts, pos, ""
}

// fakeJJWorkspace is one workspace of a fake repository.
type fakeJJWorkspace struct {
	root  string // the workspace's directory
	store string // the repository's .jj, holding the state
	name  string // default, or its name in .jj/workspaces
}

// fakeJJFind finds the workspace holding dir: dir itself when exact (-R), else dir or the
// nearest parent with a .jj directory. It returns the name to report when there is none.
func fakeJJFind(dir string, exact bool) (*fakeJJWorkspace, string) {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if fi, err := os.Stat(filepath.Join(d, ".jj")); err == nil && fi.IsDir() {
			w := &fakeJJWorkspace{root: d, store: filepath.Join(d, ".jj"), name: "default"}
			if b, err := os.ReadFile(filepath.Join(d, ".jj", "repo")); err == nil {
				w.store = strings.TrimSpace(string(b))
				for _, l := range w.lines("workspaces") {
					if len(l) == 2 && l[1] == d {
						w.name = l[0]
					}
				}
			}
			return w, ""
		}
		if exact || filepath.Dir(d) == d {
			if exact {
				return nil, dir
			}
			return nil, "."
		}
	}
}

func fakeJJLog(w *fakeJJWorkspace, args []string) {
	path := os.Getenv("FAKEJJ_LOG")
	if path == "" && w != nil {
		path = filepath.Join(w.store, "calls")
	}
	if path == "" {
		return
	}
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = a
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$|&;()<>*?") {
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	fmt.Fprintln(f, strings.Join(q, " "))
	f.Close()
}

func (w *fakeJJWorkspace) lines(file string) [][]string {
	b, _ := os.ReadFile(filepath.Join(w.store, file))
	var out [][]string
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			out = append(out, f)
		}
	}
	return out
}

func (w *fakeJJWorkspace) appendLine(file, line string) {
	f, err := os.OpenFile(filepath.Join(w.store, file), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err == nil {
		fmt.Fprintln(f, line)
		f.Close()
	}
}

// names lists the workspaces, sorted as jj sorts them.
func (w *fakeJJWorkspace) names() []string {
	names := []string{"default"}
	for _, l := range w.lines("workspaces") {
		names = append(names, l[0])
	}
	slices.Sort(names)
	return names
}

// resolve returns the [change id, empty|changed] pairs revset names; nil when none.
func (w *fakeJJWorkspace) resolve(revset string) [][2]string {
	if x, ok := strings.CutPrefix(revset, "conflicts() & ("); ok && strings.HasSuffix(x, "::)") {
		return w.conflicted(strings.TrimSuffix(x, "::)"))
	}
	if x, y, ok := strings.Cut(revset, ".."); ok {
		return w.rangeOf(x, y)
	}
	if w.name != "default" && (revset == "@" || revset == w.name+"@") {
		// Another workspace's @: empty while its files are its parent's.
		for _, l := range w.lines("revs") {
			if l[0] == w.name+"@" {
				return [][2]string{{l[1], w.wcState(l[1])}}
			}
		}
		return nil
	}
	if w.name != "default" && revset == "@-" {
		if p := w.parentOf(w.one("@")); p != "" {
			return [][2]string{{p, w.stateOf(p)}}
		}
		return nil
	}
	if revset == "default@" {
		revset = "@"
	}
	var out [][2]string
	for _, l := range w.lines("revs") {
		if len(l) >= 3 && (l[0] == revset || l[1] == revset) {
			state := l[2]
			if strings.HasSuffix(l[0], "@") && l[0] != "@" {
				state = w.wcState(l[1])
			}
			out = append(out, [2]string{l[1], state})
		}
	}
	return out
}

func (w *fakeJJWorkspace) add(name, rev, dest, cwd string) int {
	if name == "" {
		fmt.Fprintln(os.Stderr, "Error: New workspace name cannot be empty")
		return 1
	}
	if slices.Contains(w.names(), name) {
		fmt.Fprintf(os.Stderr, "Error: Workspace named '%s' already exists\n", name)
		return 1
	}
	path := dest
	if !filepath.IsAbs(path) {
		path = filepath.Join(cwd, path)
	}
	if entries, err := os.ReadDir(path); err == nil && len(entries) > 0 {
		fmt.Fprintln(os.Stderr, "Error: Destination path exists and is not an empty directory")
		return 1
	}
	if err := os.Mkdir(path, 0o755); err != nil && !os.IsExist(err) {
		fmt.Fprintf(os.Stderr, "Error: Failed to create workspace: %v\n", err)
		return 1
	}
	os.Mkdir(filepath.Join(path, ".jj"), 0o755)
	os.WriteFile(filepath.Join(path, ".jj", "repo"), []byte(w.store+"\n"), 0o644)
	// As jj does, the revisions are resolved once the workspace is on disk.
	if rev == "" {
		rev = "@-"
	}
	base := w.one(rev)
	if base == "" {
		fmt.Fprintf(os.Stderr, "Error: Revision `%s` doesn't exist\n", rev)
		return 1
	}
	w.checkout(base, path)
	w.appendLine("workspaces", name+" "+path)
	w.appendLine("revs", name+"@ "+fakeJJChangeID(name)+" empty "+base)
	fmt.Fprintf(os.Stderr, "Created workspace in %q\n", dest)
	return 0
}

func (w *fakeJJWorkspace) forget(name string) bool {
	found := false
	var keep []string
	for _, l := range w.lines("workspaces") {
		if l[0] == name {
			found = true
			continue
		}
		keep = append(keep, strings.Join(l, " ")+"\n")
	}
	if found {
		os.WriteFile(filepath.Join(w.store, "workspaces"), []byte(strings.Join(keep, "")), 0o600)
	}
	return found
}

// fakeJJChangeID makes the change id of a new workspace's @ from its name, in jj's alphabet
// (hex digits written k to z).
func fakeJJChangeID(name string) string {
	sum := sha256.Sum256([]byte(name))
	id := make([]byte, 32)
	for i, b := range sum[:16] {
		id[2*i] = 'z' - b>>4
		id[2*i+1] = 'z' - b&15
	}
	return string(id)
}
