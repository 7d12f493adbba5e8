package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Schema versions written in the "v" field of spec.json and status.json.
const (
	SpecVersion   = 1
	StatusVersion = 1
)

// Spec is what to run: spec.json, written once by spawn.
type Spec struct {
	V    int      `json:"v"`
	Name string   `json:"name"`
	Kind string   `json:"kind"`
	Argv []string `json:"argv"`
	Cwd  string   `json:"cwd"`
	// Env holds the KEY=VALUE pairs given with --env; they may be secrets, the file is 0600.
	Env         []string `json:"env,omitempty"`
	StopTimeout Duration `json:"stop_timeout"`
	// ConnectTimeout bounds the wait for an ACP agent's answer to initialize (0: the default).
	ConnectTimeout Duration  `json:"connect_timeout,omitempty"`
	IdleAfter      Duration  `json:"idle_after"`
	StaleAfter     Duration  `json:"stale_after"`
	StallAfter     Duration  `json:"stall_after"`
	Created        time.Time `json:"created"`
	// Environ is the environment of agt spawn, which every start of the agent gets, whoever
	// restarts it. A variable that looks like a secret is kept by name alone (no "="): a start
	// takes its value from the environment of the supervisor (the spawn's own, or that of
	// agt restart's caller). Nil in records of older agt: the supervisor's environment.
	Environ []string `json:"environ,omitempty"`
	// Kind details: the stdout format, how stdin is used, the resume argv template and the
	// values of its tokens. The prompt itself is not here: it is in the 0600 prompt file.
	Format       string   `json:"format,omitempty"`
	Stdin        string   `json:"stdin,omitempty"`
	Resume       []string `json:"resume,omitempty"`
	ResumePrompt string   `json:"resume_prompt,omitempty"`
	Model        string   `json:"model,omitempty"`
	SessionID    string   `json:"session_id,omitempty"`
	// Allow and Deny are the permission rules agt answers by itself (config.Policy).
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
	// OnState is the hook run at each change of state (agt.toml on_state), HookTimeout its bound.
	OnState     []string `json:"on_state,omitempty"`
	HookTimeout Duration `json:"hook_timeout,omitempty"`
	// Notify is the [notify] table's word on telling a person that the agent needs them or
	// failed; nil for nothing. Its webhook URL may hold a token: the file is 0600.
	Notify *NotifySpec `json:"notify,omitempty"`
	// MaxCost is the agent's budget in USD (0: none): past it, the agent ends failed (budget).
	MaxCost float64 `json:"max_cost,omitempty"`
	// ConverseTurns: a conversation of turn processes (agt send starts the next one, resuming
	// the session), for kinds that take no messages on stdin.
	ConverseTurns bool `json:"converse_turns,omitempty"`
	// NewSession: every fresh start gets a new random session id (Claude's --session-id).
	NewSession  bool `json:"new_session,omitempty"`
	PromptBytes int  `json:"prompt_bytes,omitempty"`
	// SessionFile is where the agent saves its session $AGT_SESSION_ID (config.Kind).
	SessionFile string `json:"session_file,omitempty"`
	// ForgetsInterrupted: the agent keeps nothing of a turn agt interrupted (config.Kind).
	ForgetsInterrupted bool `json:"forgets_interrupted,omitempty"`
	// The restart policy: on-failure, always or never, and its timings.
	Restart         string   `json:"restart,omitempty"`
	MaxRestarts     int      `json:"max_restarts"`
	RestartDelay    Duration `json:"restart_delay"`
	RestartMaxDelay Duration `json:"restart_max_delay"`
	HealthyAfter    Duration `json:"healthy_after"`
	// LogMaxSize is the size at which events.ndjson rotates (tty.log too); 0 never.
	LogMaxSize int64 `json:"log_max_size,omitempty"`
	// TTY: the agent runs on a terminal of the supervisor's (spawn --tty), with TERM Term, at
	// first Rows x Cols. InputScreen and PermissionScreen are the patterns of its screen that
	// say why it waits (config.Kind).
	TTY              bool   `json:"tty,omitempty"`
	Term             string `json:"term,omitempty"`
	Rows             int    `json:"rows,omitempty"`
	Cols             int    `json:"cols,omitempty"`
	InputScreen      string `json:"input_screen,omitempty"`
	PermissionScreen string `json:"permission_screen,omitempty"`
	BusyScreen       string `json:"busy_screen,omitempty"`
	RetryScreen      string `json:"retry_screen,omitempty"`
	ErrorScreen      string `json:"error_screen,omitempty"`
	// Workspace describes the workspace agt made for the agent (type, path, base, …), as the
	// workspace package wrote it; null when the agent runs in a plain directory.
	Workspace json.RawMessage `json:"workspace,omitempty"`
	// Sandbox confines the agent's process tree (spawn --sandbox); nil when it is not.
	Sandbox *Sandbox `json:"sandbox,omitempty"`
	// Group names the agents started together by spawn --count (NAME for NAME-1…NAME-N).
	Group string `json:"group,omitempty"`
}

// Sandbox is how an agent's process tree is confined: the tool, whether it has a network, and
// the paths besides its workspace that it reads and writes (RW) or only reads (RO), absolute,
// as spawn resolved them from the kind and agt.toml.
type Sandbox struct {
	Tool string   `json:"tool"`          // bwrap
	Net  string   `json:"net,omitempty"` // "none": no network; else the host's
	RW   []string `json:"rw,omitempty"`
	RO   []string `json:"ro,omitempty"`
}

// NotifySpec is how the supervisor tells a person that the agent needs them or failed: a
// desktop notification, a webhook, and the least time between two of them (past a burst).
type NotifySpec struct {
	Desktop     bool     `json:"desktop,omitempty"`
	Webhook     string   `json:"webhook,omitempty"`
	MinInterval Duration `json:"min_interval,omitempty"`
	// Link is the page of agt serve to link to; "" for the one running on the run directory.
	Link string `json:"link,omitempty"`
}

// Usage totals tokens over the agent's life.
type Usage struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens"`
	CacheWriteTokens int64 `json:"cache_write_tokens"`
}

// Status is status.json, written only by the holder of the agent's lock. Readers trust it only
// while the lock is held. Where a field is left out when empty, ps and inspect leave it out
// too (commands.statusFields, which a test holds to these tags).
type Status struct {
	V      int    `json:"v"`
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	State  string `json:"state"`
	Reason string `json:"reason"`
	// Error is the agent's own one-line message for its last failure (restarting, failed).
	Error         string    `json:"error"`
	Since         time.Time `json:"since"`
	Started       time.Time `json:"started"`
	Updated       time.Time `json:"updated"`
	PID           int       `json:"pid"`
	SupervisorPID int       `json:"supervisor_pid,omitempty"`
	Instance      string    `json:"instance,omitempty"`
	Restarts      int       `json:"restarts"`
	ExitCode      *int      `json:"exit_code"`
	Signal        string    `json:"signal,omitempty"`
	SessionID     string    `json:"session_id,omitempty"`
	// Resumable says the session has shown a reply of the model, so the agent has saved it and
	// a restart can resume it; a session that never got that far is started afresh.
	Resumable bool   `json:"resumable,omitempty"`
	Model     string `json:"model,omitempty"`
	// Turns counts the turns the agent finished (a prompt or message answered by a result).
	Turns int `json:"turns"`
	// Activity is the last sign of life; Doing the tool in flight then, if any.
	Activity time.Time `json:"activity"`
	Doing    string    `json:"doing,omitempty"`
	CostUSD  *float64  `json:"cost_usd"`
	// MaxCost is the spec's budget, repeated so that ps reads one file per agent.
	MaxCost float64 `json:"max_cost,omitempty"`
	Usage   Usage   `json:"usage"`
	// SessionTotal is the running total of session SessionID as the agent last reported it,
	// for agents that report usage that way (Codex): the next supervisor, after agt restart,
	// counts a resumed turn from there.
	SessionTotal Usage  `json:"session_total"`
	LastSeq      int64  `json:"last_seq"`
	Dropped      int64  `json:"dropped,omitempty"`
	Dir          string `json:"dir"`
	// Workspace is the spec's workspace, repeated so that ps reads one file per agent.
	Workspace json.RawMessage `json:"workspace,omitempty"`
	// Group is the spec's group, likewise.
	Group string `json:"group,omitempty"`
	// History holds the ends of the agent's last runs, oldest first (at most HistoryLen).
	History []Exit `json:"history,omitempty"`
}

// HistoryLen bounds Status.History.
const HistoryLen = 10

// Exit is how one run of the agent ended.
type Exit struct {
	Code   *int      `json:"code"`
	Signal string    `json:"signal,omitempty"`
	At     time.Time `json:"at"`
}

// Duration is a time.Duration that reads and writes JSON as a Go duration string ("30s"). It also
// reads a number of nanoseconds.
type Duration time.Duration

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a duration string or a number of nanoseconds; null leaves d unchanged.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		*d = Duration(v)
		return nil
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(string(b), 64)
		if ferr != nil || f != float64(int64(f)) {
			return fmt.Errorf("duration %s: want a string like \"30s\" or whole nanoseconds", b)
		}
		n = int64(f)
	}
	*d = Duration(n)
	return nil
}

// WriteFileAtomic replaces path with data: it writes a temp file (0600, O_EXCL, O_CLOEXEC) in the
// same directory, fsyncs it and renames it over path. On any failure the temp file is removed and
// path is left as it was.
func WriteFileAtomic(path string, data []byte) error {
	return replaceFile(path, data, true)
}

// replaceFile is WriteFileAtomic with the fsync left out unless durable: a reader never sees a
// partial file either way, but after a power loss a file written without it may be empty.
// That is fine for what only means something while this boot lasts (pid files, want), and it
// saves half a millisecond of each spawn per file.
func replaceFile(path string, data []byte, durable bool) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	// os.CreateTemp opens with O_RDWR|O_CREATE|O_EXCL|O_CLOEXEC and mode 0600; O_EXCL never
	// follows a link. The writer's pid in the name tells RemoveStaleTemps whose it is.
	f, err := os.CreateTemp(dir, "."+base+tempInfix+strconv.Itoa(os.Getpid())+"-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
			err = fmt.Errorf("write %s: %w", path, err)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if durable {
		if err = f.Sync(); err != nil {
			return err
		}
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// tempInfix marks the temp files of replaceFile: .status.json.tmp-PID-RANDOM.
const tempInfix = ".tmp-"

// legacyTempAge is the age past which a temp file without a pid in its name (written by an
// older agt) counts as stale: a write takes milliseconds.
const legacyTempAge = time.Minute

// RemoveStaleTemps removes the temp files that writers killed mid-write (kill -9, the OOM
// killer) left in the agent's directory and its permissions inbox: those whose writer's pid is
// gone, and those of an older agt (no pid in the name) older than a minute. A live writer's
// temp file stays, whoever it is (agt stop writes want without the lock). It returns how many
// it removed; a file that could not be removed is the error.
func (a *Agent) RemoveStaleTemps() (int, error) {
	removed := 0
	for _, dir := range []string{a.Dir, a.Path(PermissionsDir)} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && dir != a.Dir {
				continue
			}
			return removed, fmt.Errorf("remove stale temp files of %s: %w", a.Name, err)
		}
		for _, e := range entries {
			if !e.Type().IsRegular() || !staleTemp(e) {
				continue
			}
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return removed, fmt.Errorf("remove stale temp files of %s: %w", a.Name, err)
			}
			removed++
		}
	}
	return removed, nil
}

// staleTemp reports whether e is a temp file of replaceFile whose writer is gone.
func staleTemp(e fs.DirEntry) bool {
	name := e.Name()
	i := strings.LastIndex(name, tempInfix)
	if !strings.HasPrefix(name, ".") || i < 0 {
		return false
	}
	pid, _, ok := strings.Cut(name[i+len(tempInfix):], "-")
	if !ok {
		fi, err := e.Info()
		return err == nil && time.Since(fi.ModTime()) > legacyTempAge
	}
	n, err := strconv.Atoi(pid)
	if err != nil || n <= 0 {
		return false
	}
	// ESRCH: no such process. EPERM or success: alive (or a reused pid: kept, harmless).
	return syscall.Kill(n, 0) == syscall.ESRCH
}

func (a *Agent) writeJSON(file string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return WriteFileAtomic(a.Path(file), append(b, '\n'))
}

// readJSON parses file into v and checks that its schema version, *version once parsed, is
// one this agt reads.
func (a *Agent) readJSON(file string, v any, version *int, max int) error {
	path := a.Path(file)
	b, err := readCapped(path, nil, maxSpec)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("parse %s: %w", path, err)
	}
	return checkVersion(path, *version, max)
}

// checkVersion checks that the schema version of the file at path is one this agt reads.
func checkVersion(path string, version, max int) error {
	if version < 1 || version > max {
		return fmt.Errorf("%s: unsupported schema version %d (this agt reads 1 to %d)", path, version, max)
	}
	return nil
}

// WriteSpec sets s.V to SpecVersion and writes spec.json atomically.
func (a *Agent) WriteSpec(s *Spec) error {
	s.V = SpecVersion
	if err := a.writeJSON(SpecFile, s); err != nil {
		return fmt.Errorf("write spec of %s: %w", a.Name, err)
	}
	return nil
}

// ReadSpec reads spec.json.
func (a *Agent) ReadSpec() (*Spec, error) {
	var s Spec
	if err := a.readJSON(SpecFile, &s, &s.V, SpecVersion); err != nil {
		return nil, fmt.Errorf("read spec of %s: %w", a.Name, err)
	}
	return &s, nil
}

// WriteStatus sets s.V to StatusVersion and writes the agent's status.json atomically. It is a
// method of the lock because only its holder writes the status (R4).
func (l *Lock) WriteStatus(s *Status) error {
	a := l.a
	s.V = StatusVersion
	if err := a.writeJSON(StatusFile, s); err != nil {
		return fmt.Errorf("write status of %s: %w", a.Name, err)
	}
	return nil
}

// ReadStatus reads status.json. A missing, unparsable or newer-versioned file is an error, which
// callers report as an unknown state.
func (a *Agent) ReadStatus() (*Status, error) {
	var s Status
	path := a.Path(StatusFile)
	// decodeStatus copies what it keeps, so the file can be read into a buffer on the stack.
	var buf [4096]byte
	b, err := readSmall(path, buf[:])
	if err == nil {
		if err = decodeStatus(b, &s); err != nil {
			err = fmt.Errorf("parse %s: %w", path, err)
		} else {
			err = checkVersion(path, s.V, StatusVersion)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("read status of %s: %w", a.Name, err)
	}
	return &s, nil
}

// SetWant writes the desired state, up or down. Up also forgets the grace of the last stop.
func (a *Agent) SetWant(want string) error {
	if want != "up" && want != "down" {
		return fmt.Errorf("set want of %s: %q is neither up nor down", a.Name, want)
	}
	if want == "up" {
		if err := os.Remove(a.Path(StopTimeoutFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("set want of %s: %w", a.Name, err)
		}
	}
	// Not fsynced: want orders a stop against live supervisors; after a reboot none is left.
	if err := replaceFile(a.Path(WantFile), []byte(want+"\n"), false); err != nil {
		return fmt.Errorf("set want of %s: %w", a.Name, err)
	}
	return nil
}

// ClaimWant writes want = up for a new record, unless a want is there already: a stop that
// raced the spawn said down, and its word stands. ErrStoppedFirst says so.
func (a *Agent) ClaimWant() error {
	fd, err := openFD(a.Path(WantFile), unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o600)
	if errors.Is(err, unix.EEXIST) {
		return ErrStoppedFirst
	}
	if err != nil {
		return fmt.Errorf("set want of %s: %w", a.Name, err)
	}
	defer unix.Close(fd)
	if _, err := unix.Write(fd, []byte("up\n")); err != nil {
		return fmt.Errorf("set want of %s: %w", a.Name, err)
	}
	return nil
}

// ErrStoppedFirst is ClaimWant's: a stop wrote want before the spawn could.
var ErrStoppedFirst = errors.New("stopped while being spawned")

// SetWantDown is SetWant("down") for a stop that asks for its own grace between SIGTERM and
// SIGKILL: grace 0 kills at once; a negative grace keeps the one the agent was spawned with.
// The grace goes to stop_timeout first, so that a supervisor that sees want = down finds it.
func (a *Agent) SetWantDown(grace time.Duration) error {
	if err := a.SetStopGrace(grace); err != nil {
		return err
	}
	return a.SetWant("down")
}

// SetStopGrace writes the grace a stop asks for to stop_timeout, or removes it when grace is
// negative.
func (a *Agent) SetStopGrace(grace time.Duration) error {
	var err error
	if grace >= 0 {
		err = replaceFile(a.Path(StopTimeoutFile), []byte(grace.String()+"\n"), false)
	} else if err = os.Remove(a.Path(StopTimeoutFile)); errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("set the stop grace of %s: %w", a.Name, err)
	}
	return nil
}

// Want returns the desired state: "down" only when the want file says so, else "up".
func (a *Agent) Want() string {
	b, err := readSmall(a.Path(WantFile), nil)
	if err == nil && string(bytes.TrimSpace(b)) == "down" {
		return "down"
	}
	return "up"
}

// StopGrace returns the grace the pending stop asked for, and false when it asked for none
// (the agent's own holds): stop_timeout, read only while want is down.
func (a *Agent) StopGrace() (time.Duration, bool) {
	if a.Want() != "down" {
		return 0, false
	}
	b, err := readSmall(a.Path(StopTimeoutFile), nil)
	if err != nil {
		return 0, false
	}
	d, err := time.ParseDuration(string(bytes.TrimSpace(b)))
	if err != nil || d < 0 {
		return 0, false
	}
	return d, true
}

// maxPrompt bounds the prompt file a start reads: far beyond any model's context.
const maxPrompt = 64 << 20

// ReadPrompt reads the agent's prompt file: never through a link, never waiting on a FIFO, at
// most 64 MiB.
func (a *Agent) ReadPrompt() ([]byte, error) {
	b, err := readCapped(a.Path(PromptFile), nil, maxPrompt)
	if err != nil {
		return nil, fmt.Errorf("read prompt of %s: %w", a.Name, err)
	}
	return b, nil
}

// WritePID records a process identity (the "PID START BOOT" string) in file, atomically.
func (a *Agent) WritePID(file string, s string) error {
	// Not fsynced: a pid means nothing after a reboot. A power loss may leave the file empty,
	// and an empty identity is never signalled (reap then says supervisor-lost, not reboot).
	if err := replaceFile(a.Path(file), []byte(s+"\n"), false); err != nil {
		return fmt.Errorf("write %s of %s: %w", file, a.Name, err)
	}
	return nil
}

// ReadPID reads a process identity written by WritePID. A missing file wraps fs.ErrNotExist.
func (a *Agent) ReadPID(file string) (string, error) {
	b, err := readSmall(a.Path(file), nil)
	if err != nil {
		return "", fmt.Errorf("read %s of %s: %w", file, a.Name, err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("read %s of %s: file is empty", file, a.Name)
	}
	return s, nil
}
