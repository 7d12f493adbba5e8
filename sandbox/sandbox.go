// Package sandbox confines an agent's process tree with bubblewrap (bwrap), so that it can
// change its workspace and nothing else: the workspace read-write; the rest of the filesystem
// read-only; $HOME, /tmp, /run, /home, /root and agt's run directory replaced by empty
// directories, into which only the programs on the agent's PATH and the paths its kind
// declares come back; a /dev of its own without the host's terminals; a new PID namespace, so
// that the tree ends with its first process; the network the host's, or none.
//
// Invariants: the supervisor stays outside (only the agent's tree is confined); every
// capability is dropped, also for root, in a user namespace of the sandbox's own; bubblewrap
// itself ignores the signals a stop, an interrupt or a terminal sends (SIGINT, SIGQUIT,
// SIGTERM, SIGTSTP), so they reach the agent with their grace instead of ending the sandbox at
// once, and the agent gets them back at their defaults; SIGKILL ends it all.
package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"agt/state"
)

// Bwrap is the only sandbox tool: bubblewrap.
const Bwrap = "bwrap"

// Network settings: NetOn shares the host's network (agents must reach their model); NetNone
// gives the sandbox a network namespace with loopback alone.
const (
	NetOn   = "on"
	NetNone = "none"
)

// signals are what bubblewrap ignores and the agent gets back at their defaults: a stop's
// SIGTERM and an interrupt's SIGINT would otherwise end bubblewrap at once, and with it (by
// --die-with-parent) the whole sandbox with SIGKILL, before the agent had its grace; a
// terminal's Ctrl-C, Ctrl-\ and Ctrl-Z go to bubblewrap's process group too.
const signals = "INT,QUIT,TERM,TSTP"

// Launch is an agent's start as the supervisor makes it: what runs, where, and what the
// sandbox around it must know.
type Launch struct {
	Program   string   // the executable, as found on PATH
	Argv      []string // its argv
	Env       []string // its environment
	Dir       string   // where it starts
	Workspace string   // the directory it may change: its workspace, else Dir
	RunDir    string   // agt's run directory, which it must not see
	Expose    []string // files of the run directory it may read (its prompt file)
}

// Command returns what the supervisor starts instead of l: coreutils env, ignoring the
// signals, running bubblewrap, which runs env again to restore them and then l's program, in
// the sandbox s describes. env is l's environment as the sandbox gives it.
func Command(s *state.Sandbox, l Launch) (program string, argv, env []string, err error) {
	if s.Tool != Bwrap {
		return "", nil, nil, fmt.Errorf("sandbox %q: agt knows only %s", s.Tool, Bwrap)
	}
	bwrap, err := FindBwrap()
	if err != nil {
		return "", nil, nil, err
	}
	envProg, err := exec.LookPath("env")
	if err != nil {
		return "", nil, nil, errors.New("sandbox: env (coreutils) not found on PATH; it sets the signals bubblewrap ignores")
	}
	home := getenv(l.Env, "HOME")
	if r, err := filepath.EvalSymlinks(home); err == nil {
		home = r // as hiddenRoots sees it
	}
	if err := checkWorkspace(l.Workspace, home); err != nil {
		return "", nil, nil, err
	}
	args, visible := bwrapArgs(s, l, home)
	argv = append([]string{"env", "--ignore-signal=" + signals, bwrap}, args...)
	argv = append(argv, "--", envProg, "--default-signal="+signals, program0(l, visible))
	argv = append(argv, l.Argv[1:]...)
	return envProg, argv, sandboxEnv(l.Env), nil
}

// program0 is what env inside runs: the program's name as the agent's argv[0] has it, so that
// the program sees its argv[0] as it would without a sandbox, when the agent's PATH finds it
// there as it found it outside; else its path.
func program0(l Launch, visible func(string) bool) string {
	name := l.Argv[0]
	if strings.Contains(name, "/") || !visible(filepath.Dir(l.Program)) {
		return l.Program
	}
	for _, d := range filepath.SplitList(getenv(l.Env, "PATH")) {
		if !filepath.IsAbs(d) {
			continue // env would try it in the working directory
		}
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			if p == l.Program {
				return name
			}
			return l.Program // another program of that name comes first
		}
	}
	return l.Program
}

// FindBwrap returns the path of bwrap, or an error that says how to install it.
func FindBwrap() (string, error) {
	p, err := exec.LookPath(Bwrap)
	if err != nil {
		return "", errors.New("sandbox: bubblewrap is not installed (no bwrap on PATH); install the bubblewrap package, such as 'apt-get install bubblewrap' or 'dnf install bubblewrap'")
	}
	return p, nil
}

// bwrapArgs are bubblewrap's options for l in s. Later mounts cover earlier ones, so the order
// is: the host read-only, the hidden directories emptied, the programs back, the declared
// paths and the workspace (a path inside another after it, so the nearer rule wins), the run
// directory emptied last, whatever else holds it, then the files of it the agent may read.
//
// It also returns whether a directory of the host is seen inside as it is outside: one not
// hidden, or a program directory brought back.
func bwrapArgs(s *state.Sandbox, l Launch, home string) ([]string, func(string) bool) {
	a := []string{"--unshare-all", "--unshare-user", "--cap-drop", "ALL", "--die-with-parent"}
	if s.Net != NetNone {
		a = append(a, "--share-net")
	}
	a = append(a, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc")

	hidden := hiddenRoots(home, l.RunDir)
	for _, h := range topmost(hidden) {
		mode := "0755"
		switch h {
		case "/tmp", "/var/tmp":
			mode = "1777"
		case home:
			mode = "0700"
		}
		a = append(a, "--perms", mode, "--tmpfs", h)
	}
	if home != "" && within(home, hidden) && !slices.Contains(topmost(hidden), home) {
		a = append(a, "--perms", "0700", "--dir", home) // the agent still has a home
	}
	if d := resolvConfDir(); d != "" && within(d, hidden) {
		a = append(a, "--ro-bind", d, d) // DNS, where /etc/resolv.conf leads into /run
	}
	keepOut := []string{home, l.RunDir}
	programs := programDirs(getenv(l.Env, "PATH"), l.Program, hidden, keepOut)
	for _, d := range programs {
		a = append(a, "--ro-bind-try", d, d)
	}
	visible := func(d string) bool { return !within(d, hidden) || within(d, programs) }

	type bind struct {
		path  string
		write bool
	}
	var binds []bind
	for _, p := range s.RO {
		binds = append(binds, bind{p, false})
	}
	for _, p := range s.RW {
		binds = append(binds, bind{p, true})
	}
	binds = append(binds, bind{l.Workspace, true})
	rw, ro := repoStore(l.Workspace)
	for _, p := range ro {
		binds = append(binds, bind{p, false})
	}
	for _, p := range rw {
		binds = append(binds, bind{p, true})
	}
	// Shallower first: a path inside another is mounted after it, and its rule wins. At the
	// same depth, read-only after read-write.
	slices.SortStableFunc(binds, func(x, y bind) int {
		if d := depth(x.path) - depth(y.path); d != 0 {
			return d
		}
		if x.write == y.write {
			return 0
		}
		if x.write {
			return -1
		}
		return 1
	})
	for _, b := range binds {
		op := "--ro-bind"
		if b.write {
			op = "--bind"
		}
		a = append(a, op, b.path, b.path)
	}

	if l.RunDir != "" {
		a = append(a, "--perms", "0700", "--tmpfs", l.RunDir)
	}
	for _, f := range l.Expose {
		a = append(a, "--ro-bind", f, f)
	}
	return append(a, "--chdir", l.Dir), visible
}

// checkWorkspace refuses a writable directory that would hand the agent the user's home or a
// shared scratch directory: /, the home or a directory above it, /tmp and the like.
func checkWorkspace(dir, home string) error {
	if dir == "" || !filepath.IsAbs(dir) {
		return fmt.Errorf("sandbox: the agent's directory %q is not absolute", dir)
	}
	dir = filepath.Clean(dir)
	if home != "" && (dir == home || isWithin(home, dir)) {
		return fmt.Errorf("sandbox: the agent's directory %s holds your home directory, which it could then change; run it in a project directory (--dir)", dir)
	}
	if dir == "/" || slices.Contains(sharedRoots, dir) {
		return fmt.Errorf("sandbox: the agent's directory %s is shared with every program; run it in a project directory (--dir)", dir)
	}
	return nil
}

// sharedRoots are the directories a sandbox replaces by empty ones, besides the home and the
// run directory: scratch space, sockets and other users' homes.
var sharedRoots = []string{"/tmp", "/var/tmp", "/run", "/home", "/root"}

// hiddenRoots are the directories replaced by empty ones, those that exist.
func hiddenRoots(home, runDir string) []string {
	var out []string
	for _, d := range append(slices.Clone(sharedRoots), home, runDir) {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		if r, err := filepath.EvalSymlinks(d); err == nil {
			d = r
		}
		if fi, err := os.Stat(d); err == nil && fi.IsDir() && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// topmost leaves out the directories inside another of dirs.
func topmost(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		inside := false
		for _, o := range dirs {
			if o != d && isWithin(d, o) {
				inside = true
			}
		}
		if !inside {
			out = append(out, d)
		}
	}
	return out
}

// resolvConfDir is the directory /etc/resolv.conf leads to, when it is a link (systemd-resolved
// keeps it in /run); "" when it is a plain file.
var resolvConfDir = func() string {
	if fi, err := os.Lstat("/etc/resolv.conf"); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		return ""
	}
	r, err := filepath.EvalSymlinks("/etc/resolv.conf")
	if err != nil {
		return ""
	}
	return filepath.Dir(r)
}

// sandboxEnv is env as the agent gets it inside: it is told it is in a sandbox (Claude Code
// lets root skip permissions only then), TMPDIR is its private /tmp, and the addresses of the
// host's sockets it cannot reach (or must not: an X server is reachable through the shared
// network's abstract sockets) are gone, as are the variables of --sandbox (bubblewrap cannot
// make a sandbox inside its own).
func sandboxEnv(env []string) []string {
	out := make([]string, 0, len(env)+2)
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "SSH_AUTH_SOCK", "GPG_AGENT_INFO", "DBUS_SESSION_BUS_ADDRESS", "DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY",
			// --sandbox's own variables: an agent's spawns run in its sandbox, none of their own.
			"AGT_SANDBOX", "AGT_SANDBOX_NET",
			Marker, "IS_SANDBOX":
			continue
		case "TMPDIR":
			kv = "TMPDIR=/tmp"
		}
		out = append(out, kv)
	}
	return append(out, Marker+"="+Bwrap, "IS_SANDBOX=1")
}

// Marker is the variable that tells an agent (and agt run by it) that it is in a sandbox.
const Marker = "AGT_SANDBOXED"

// Lookup looks names up in env, as getenv does: what Resolve takes.
func Lookup(env []string) func(string) string {
	return func(name string) string { return getenv(env, name) }
}

// getenv looks name up in env; the last one wins, as in the program.
func getenv(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == name {
			return v
		}
	}
	return ""
}

// isWithin reports whether path lies strictly inside dir.
func isWithin(path, dir string) bool {
	if dir == "/" {
		return path != "/"
	}
	return strings.HasPrefix(path, dir+"/")
}

// within reports whether path is one of dirs or lies inside one.
func within(path string, dirs []string) bool {
	for _, d := range dirs {
		if path == d || isWithin(path, d) {
			return true
		}
	}
	return false
}

func depth(path string) int { return strings.Count(filepath.Clean(path), "/") }
