// Package state owns agt's run directory: one subdirectory per agent under agents/, holding its
// spec, prompt, status, desired state, process identities, lock and logs.
//
// Invariants:
//   - Directories are created 0700 and files 0600. Open refuses a run directory that another
//     user owns or that group or others can write, and fixes nothing silently.
//   - A name is reserved by one atomic mkdir of agents/NAME: of many concurrent Creates, exactly
//     one wins.
//   - Every record (spec.json, status.json, want, *.pid) is replaced whole, by writing a temp file
//     in the same directory, fsyncing it and renaming it over the old one: a reader sees the old
//     content or the new, never a mix.
//   - status.json is written only by the holder of supervisor.lock. The lock is an flock taken
//     with O_CLOEXEC and held for the supervisor's whole life; a free lock means no supervisor.
//   - Each log has one writer, which appends with O_APPEND, never splits a line across write(2)
//     calls (a write may carry several whole lines), and ends a torn tail with a newline before
//     appending. Readers pass on only complete lines (those
//     ending in '\n'), hold back a partial last line until it completes, and skip and count lines
//     that are not JSON objects.
package state

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Errors a caller branches on; match them with errors.Is.
var (
	// ErrNoAgent: no agent directory has the given name.
	ErrNoAgent = errors.New("no such agent")
	// ErrNameTaken: Create found the name already reserved.
	ErrNameTaken = errors.New("name taken")
	// ErrLocked: another process holds the agent's supervisor lock.
	ErrLocked = errors.New("locked")
)

// Files of an agent directory; pass them to Agent.Path.
const (
	SpecFile          = "spec.json"
	StatusFile        = "status.json"
	WantFile          = "want"
	StopTimeoutFile   = "stop_timeout" // the grace a pending stop asked for, written before want
	SupervisorPIDFile = "supervisor.pid"
	AgentPIDFile      = "agent.pid"
	SpawnerPIDFile    = "spawn.pid" // the agt spawn writing a new record, until its supervisor takes over
	LockFile          = "supervisor.lock"
	EventsFile        = "events.ndjson"
	StdoutLog         = "stdout.log"
	StderrLog         = "stderr.log"
	TTYLog            = "tty.log" // a terminal agent's raw output, size-capped (see spawn --tty)
	SupervisorLog     = "supervisor.log"
	CgroupFile        = "cgroup"      // the path of the agent's cgroup, where it has one (see pids.Contain)
	PromptFile        = "prompt"      // the prompt, 0600, kept for restarts; never in events or logs
	CtlSocket         = "ctl.sock"    // the supervisor's control channel (see spawn.Control)
	PermissionsDir    = "permissions" // ID.json for each permission request the agent waits on
)

const agentsDir = "agents"

// sentinelError reads as its own message and matches its sentinel with errors.Is.
type sentinelError struct {
	msg string
	is  error
}

func (e *sentinelError) Error() string { return e.msg }
func (e *sentinelError) Unwrap() error { return e.is }

func noAgent(name string) error {
	return &sentinelError{fmt.Sprintf("no agent named %q", name), ErrNoAgent}
}

// ResolveRoot picks the run directory: flag if set, else $AGT_RUN_DIR, else $XDG_STATE_HOME/agt
// (an absolute XDG_STATE_HOME only, as the XDG spec says), else $HOME/.local/state/agt.
// The result is absolute, so every process started from anywhere agrees on it.
func ResolveRoot(flag string) (string, error) {
	root := flag
	if root == "" {
		root = os.Getenv("AGT_RUN_DIR")
	}
	if root == "" {
		if x := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(x) {
			root = filepath.Join(x, "agt")
		}
	}
	if root == "" {
		home := os.Getenv("HOME")
		if home == "" {
			return "", errors.New("no run directory: set --run-dir, AGT_RUN_DIR, XDG_STATE_HOME or HOME")
		}
		root = filepath.Join(home, ".local", "state", "agt")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", fmt.Errorf("run directory %s: %w", root, err)
	}
	return abs, nil
}

// Dir is an opened run directory.
type Dir struct {
	Root string
}

// Open creates root and root/agents (0700) if they are missing, and refuses either when another
// user owns it or group or others can write it.
func Open(root string) (*Dir, error) {
	for _, dir := range []string{root, filepath.Join(root, agentsDir)} {
		if err := ensureDir(dir); err != nil {
			return nil, err
		}
	}
	return &Dir{Root: root}, nil
}

// ensureDir makes dir 0700 when missing and checks that it is safe when present.
func ensureDir(dir string) error {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("create run directory: %w", err)
		}
		fi, err = os.Stat(dir)
	}
	if err != nil {
		return fmt.Errorf("run directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("run directory %s is not a directory", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("run directory %s is owned by uid %d, not by you (uid %d); use one of your own with --run-dir or AGT_RUN_DIR",
			dir, st.Uid, os.Geteuid())
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("run directory %s is writable by group or others (mode %04o); fix it with: chmod 700 %s", dir, perm, dir)
	}
	return nil
}

// ValidateName accepts 1 to 63 characters of a-z 0-9 . _ -, the first a letter or digit. Such a
// name cannot contain "/", cannot be "." or "..", and cannot be taken for a flag.
func ValidateName(name string) error {
	ok := len(name) >= 1 && len(name) <= 63
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			ok = false
		}
	}
	if !ok {
		return fmt.Errorf("invalid agent name %q: use 1-63 of a-z 0-9 . _ -, starting with a letter or digit", name)
	}
	return nil
}

// Agent is one agent's directory, Dir = root/agents/NAME.
type Agent struct {
	Name, Dir string
}

// AgentFile returns the path of file in the directory of the agent name, which need not
// exist yet.
func (d *Dir) AgentFile(name, file string) string {
	return filepath.Join(d.Root, agentsDir, name, file)
}

func (d *Dir) agent(name string) *Agent {
	return &Agent{Name: name, Dir: filepath.Join(d.Root, agentsDir, name)}
}

// Create reserves name by creating its directory (0700) in one atomic mkdir. When the name is
// already reserved the error wraps ErrNameTaken.
func (d *Dir) Create(name string) (*Agent, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	a := d.agent(name)
	if err := os.Mkdir(a.Dir, 0o700); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, &sentinelError{fmt.Sprintf("agent %q already exists", name), ErrNameTaken}
		}
		return nil, fmt.Errorf("create agent %s: %w", name, err)
	}
	return a, nil
}

// Agent returns the existing agent called name; a missing one wraps ErrNoAgent.
func (d *Dir) Agent(name string) (*Agent, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	a := d.agent(name)
	fi, err := os.Stat(a.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, noAgent(name)
	}
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", name, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("agent %s: %s is not a directory", name, a.Dir)
	}
	return a, nil
}

// Names lists the agents, sorted, skipping entries that are not directories with valid names
// (such as agents being removed).
func (d *Dir) Names() ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(d.Root, agentsDir))
	if err != nil {
		return nil, fmt.Errorf("list agents: %w", err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if e.IsDir() && ValidateName(e.Name()) == nil {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// Agents returns every agent of d, sorted by name, from one listing of agents/ (no further
// look-up per agent: ps runs it in shell prompts).
func (d *Dir) Agents() ([]*Agent, error) {
	names, err := d.Names()
	if err != nil {
		return nil, err
	}
	agents := make([]*Agent, len(names))
	for i, n := range names {
		agents[i] = d.agent(n)
	}
	return agents, nil
}

// Path returns the path of file in the agent's directory.
func (a *Agent) Path(file string) string {
	return filepath.Join(a.Dir, file)
}

// Remove deletes the agent's directory. It first renames it to a hidden name, so the name is
// free at once and a partly removed agent never shows up in Names; a supervisor still running
// there sees its Lock.Check fail. The caller makes sure no supervisor should be running (for
// instance by holding the Lock).
func (a *Agent) Remove() error {
	trash := filepath.Join(filepath.Dir(a.Dir),
		"."+a.Name+".removed-"+strconv.Itoa(os.Getpid())+"-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	if err := os.Rename(a.Dir, trash); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return noAgent(a.Name)
		}
		return fmt.Errorf("remove agent %s: %w", a.Name, err)
	}
	if err := os.RemoveAll(trash); err != nil {
		return fmt.Errorf("remove agent %s: %w", a.Name, err)
	}
	return nil
}
