package supervisor

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"agt/config"
	"agt/pids"
	"agt/spawn/ctl"
	"agt/state"
	"agt/stream"
)

// generation is one run of the agent.
type generation struct {
	outR, errR *os.File        // our ends of the agent's stdout and stderr
	spawned    []byte          // the spawned event
	started    time.Time       // when it started (monotonic)
	readers    <-chan struct{} // closed when its stdout and stderr reach EOF
}

// start launches the agent in its own session with stdout and stderr on pipes and stdin on
// /dev/null (or what its conversation gives it), records its identity and emits spawned and
// state events. ctl.StartResume resumes the agent's session where the kind can and the session was
// saved, with the resume prompt instead of the original one; else, and for ctl.StartNew and
// ctl.StartFresh, it starts afresh with the original prompt.
func (s *supervisor) start(mode string) (*generation, error) {
	spawned, fds, err := s.launch(mode)
	if err != nil {
		return nil, err
	}
	g := &generation{spawned: spawned, started: time.Now(), outR: fds.out, errR: fds.err}
	if err := s.conv.begin(g, fds); err != nil {
		return nil, err
	}
	return g, nil
}

// startPlan is what a start runs, as its conversation planned it.
type startPlan struct {
	argv    []string // the argv template
	prompt  *string  // the prompt the agent is given; nil for none
	resumed bool     // the start resumes the agent's session
	begun   bool     // the start is of a turn already under way (the next turn process)
	fresh   string   // what a fresh start gives the agent, when a resume was asked for: see afresh
}

// afresh says what a start that could not resume gives the agent instead, as the log tells it.
func (p startPlan) afresh() string {
	switch {
	case p.fresh != "":
		return p.fresh
	case p.prompt != nil:
		return "starting afresh with the original prompt"
	}
	return "starting afresh, with no prompt"
}

// plan is how most starts go: a resume runs the resume argv with the resume prompt (the
// original one is not sent again); a start runs the start argv with the original prompt.
func (s *supervisor) plan(resumed bool, prompt *string) startPlan {
	if !resumed {
		return startPlan{argv: s.spec.Argv, prompt: prompt}
	}
	rp := s.spec.ResumePrompt
	if rp == "" {
		rp = config.DefaultResumePrompt
	}
	return startPlan{argv: s.spec.Resume, prompt: &rp, resumed: true}
}

// stdio is what a start gives the agent for its standard files, and what the supervisor keeps.
type stdio struct {
	child []*os.File // the agent's stdin, stdout and stderr: closed once it started
	out   *os.File   // ours to read: its stdout (and stderr, on a terminal)
	err   *os.File   // ours to read: its stderr; nil on a terminal
	in    *os.File   // ours to write: its stdin, for a conversation on it; else nil
	env   []string   // its environment
	ctty  bool       // child[0] becomes its controlling terminal
}

func (fds stdio) closeOurs() {
	fds.out.Close()
	fds.err.Close() // nil on a terminal: a no-op
	fds.in.Close()
}

func (s *supervisor) launch(mode string) (spawned []byte, fds stdio, err error) {
	s.instance = newInstance()
	prompt, err := s.prompt()
	if err != nil {
		return nil, fds, err
	}
	session, resumed, unsaved := s.session(mode)
	p := s.conv.plan(resumed, prompt)
	if unsaved != "" || p.fresh != "" {
		msg := "the agent saved no session; " + p.afresh() // it never named one
		if unsaved != "" {
			msg = fmt.Sprintf("session %s was never saved; %s", unsaved, p.afresh())
		}
		s.mu.Lock()
		ev := stream.Event{Type: stream.TypeError, Source: stream.SourceSupervisor, Message: msg}
		s.appendLocked(&ev, time.Now())
		s.flushLocked()
		s.mu.Unlock()
	}
	vals := s.tokens(p.prompt, session)
	if resumed {
		vals["AGT_PROMPT_FILE"] = "" // it holds the original prompt, which a resume does not send
	}
	env := s.agentEnv(vals)
	argv, err := config.Expand(p.argv, vals)
	if err != nil {
		return nil, fds, err
	}
	if len(argv) == 0 || argv[0] == "" {
		return nil, fds, errors.New("no command to run")
	}
	// What events show: the prompt replaced by its size (R27).
	if p.prompt != nil {
		vals["AGT_PROMPT"] = fmt.Sprintf("<prompt: %d bytes>", len(*p.prompt))
	}
	shown, _ := config.Expand(p.argv, vals)

	if fi, err := os.Stat(s.spec.Cwd); err != nil || !fi.IsDir() {
		// Before the command is looked for: a missing directory is no missing program.
		return nil, fds, fmt.Errorf("could not start %s: its working directory %s is gone; make it again, or agt rm %s", argv[0], s.spec.Cwd, s.spec.Name)
	}
	// A relative path names a file in the agent's directory, where it runs, not in ours.
	look := argv[0]
	if strings.Contains(look, "/") && !filepath.IsAbs(look) {
		look = filepath.Join(s.spec.Cwd, look)
	}
	path, err := exec.LookPath(look)
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return nil, fds, fmt.Errorf("could not start %s: executable not found in $PATH; is it installed?%s", argv[0], installHint(s.spec.Kind, argv[0]))
		}
		return nil, fds, fmt.Errorf("could not start %s: %w", argv[0], errors.Unwrap(err))
	}
	if path, argv, env, err = s.sandboxed(path, argv, env, vals); err != nil {
		return nil, fds, err
	}
	if fds, err = s.conv.open(p, env); err != nil {
		return nil, fds, err
	}
	defer func() {
		for _, f := range fds.child {
			f.Close()
		}
	}()
	// syscall.ForkExec, not os/exec: a third of the cost of a start, and waits belong to the
	// SIGCHLD loop alone anyway. Setsid alone also makes a new process group (Setpgid with it
	// fails with EPERM).
	pid, err := forkExec(path, argv, &syscall.ProcAttr{
		Dir:   s.spec.Cwd,
		Env:   fds.env,
		Files: []uintptr{fds.child[0].Fd(), fds.child[1].Fd(), fds.child[2].Fd()},
		Sys:   &syscall.SysProcAttr{Setsid: true, Setctty: fds.ctty, Ctty: 0},
	}, s.cgroup.nextRun()) // in the agent's cgroup, where it has one (R37)
	if err != nil {
		fds.closeOurs()
		return nil, fds, fmt.Errorf("could not start %s: %w", argv[0], err)
	}
	resume := ""
	if resumed {
		resume = session
	}
	s.mu.Lock() // control handlers read what the conversation keeps
	s.conv.startedLocked(fds, p, resume)
	s.mu.Unlock()
	leader := pids.Identity{PID: pid}
	if id, err := pids.Of(pid); err == nil {
		leader = id
	}
	s.mu.Lock() // interrupt reads it
	s.leader = leader
	s.mu.Unlock()
	if err := s.a.WritePID(state.AgentPIDFile, s.leader.String()); err != nil {
		s.emitError(err.Error(), false)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runningLocked(pid, shown, p, s.now()), fds, nil
}

// runningLocked records that the agent of a start runs as pid: its status, the spawned event
// (returned: one JSON line, no newline), and its first state.
func (s *supervisor) runningLocked(pid int, shown []string, p startPlan, now time.Time) []byte {
	s.status.PID = pid
	s.alive = true
	s.status.Started = now
	s.status.Instance = s.instance
	s.status.ExitCode, s.status.Signal = nil, ""
	s.snap.Activity = now
	ev := stream.Event{Type: stream.TypeSpawned, Kind: s.spec.Kind, Argv: shown, Cwd: s.spec.Cwd, PID: pid, Workspace: s.spec.Workspace}
	spawned := s.appendLocked(&ev, now)
	spawned = append([]byte(nil), spawned[:len(spawned)-1]...)
	// A plain command is running from the start: nothing it says or keeps quiet changes that.
	// So is the next turn process of a conversation: its turn began with the message.
	first := stream.Starting
	if s.machine.Mode == stream.Plain || p.begun {
		first = stream.Running
	}
	s.setStateLocked(first, "", now)
	switch {
	case p.prompt != nil:
		s.snap = s.machine.Begin(s.snap, now) // a turn is under way from its prompt
	case s.machine.InputOpen:
		s.setStateLocked(stream.Waiting, stream.ReasonInput, now) // a conversation with no word yet
	}
	s.writeStatusLocked() // the new run's pid, even if it was starting already
	return spawned
}

// What a start gives the agent as its stdin.
const (
	stdinNull   = iota // /dev/null: Codex and opencode hang on an open pipe
	stdinPrompt        // the prompt as a file, read to its end: it stays out of the process table
	stdinPipe          // a pipe that stays open between turns (fds.in): a conversation on it
)

// pipes makes the agent's stdout and stderr pipes and its stdin, of the kind given (the
// prompt, for stdinPrompt).
func (s *supervisor) pipes(env []string, in int, prompt *string) (stdio, error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return stdio{}, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return stdio{}, err
	}
	var stdin, stdinW *os.File
	switch in {
	case stdinPipe:
		stdin, stdinW, err = os.Pipe()
	case stdinPrompt:
		stdin, err = promptFile(*prompt)
	default:
		stdin, err = os.Open(os.DevNull)
	}
	if err != nil {
		for _, f := range []*os.File{outR, outW, errR, errW} {
			f.Close()
		}
		return stdio{}, err
	}
	return stdio{child: []*os.File{stdin, outW, errW}, out: outR, err: errR, in: stdinW, env: env}, nil
}

// session decides how a start of the given mode treats the agent's session: it returns the
// session id for $AGT_SESSION_ID and whether the start resumes it. A resume needs a resume argv
// and a session the agent saved: one that got a reply, or, on a terminal, whose file is on disk
// (spec SessionFile: a terminal agent's replies are no events); otherwise the start is fresh, and
// unsaved is the session a resume was asked for, for the caller to say so. A fresh start of a
// kind that is given its session id gets a new one (reusing one the agent saved would be
// refused as in use).
func (s *supervisor) session(mode string) (id string, resumed bool, unsaved string) {
	s.mu.Lock()
	id, saved := s.status.SessionID, s.status.Resumable // the readers of the last run may still be writing it
	s.mu.Unlock()
	if mode == ctl.StartResume && s.resumes() && id != "" && !saved && s.spec.TTY {
		saved = s.sessionSaved(id) // the disk, outside mu
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.status.SessionID != id {
		id, saved = s.status.SessionID, s.status.Resumable
	}
	switch {
	case mode == ctl.StartResume && s.resumes() && id != "" && saved:
		return id, true, ""
	case mode == ctl.StartResume && s.resumes() && id != "":
		unsaved = id
	case mode == ctl.StartNew:
		return id, false, ""
	}
	id = ""
	if s.spec.NewSession {
		id = ctl.NewSessionID()
	}
	s.status.SessionID, s.status.SessionTotal, s.status.Resumable = id, state.Usage{}, false
	return id, false, unsaved
}

// promptFile returns a file holding prompt, read from its start: an agent reads it to its end
// as stdin. It lives in memory and goes when the last descriptor closes.
func promptFile(prompt string) (*os.File, error) {
	fd, err := unix.MemfdCreate("agt-prompt", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("prompt for stdin: %w", err)
	}
	f := os.NewFile(uintptr(fd), "agt-prompt")
	if _, err := io.WriteString(f, prompt); err != nil {
		f.Close()
		return nil, fmt.Errorf("prompt for stdin: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("prompt for stdin: %w", err)
	}
	return f, nil
}

// prompt reads the agent's prompt file; nil when it was spawned without one.
func (s *supervisor) prompt() (*string, error) {
	b, err := s.a.ReadPrompt()
	if errors.Is(err, fs.ErrNotExist) && s.spec.PromptBytes == 0 {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	p := string(b)
	return &p, nil
}

// tokens are the values of the $AGT_* tokens for this start.
func (s *supervisor) tokens(prompt *string, session string) map[string]string {
	vals := map[string]string{
		"AGT_NAME":        s.spec.Name,
		"AGT_PROMPT":      "",
		"AGT_PROMPT_FILE": "",
		"AGT_MODEL":       s.spec.Model,
		"AGT_SESSION_ID":  session,
		"AGT_WORKSPACE":   s.spec.Cwd,
		"AGT_RUN_DIR":     s.root,
	}
	if prompt != nil {
		vals["AGT_PROMPT"] = *prompt
		vals["AGT_PROMPT_FILE"] = s.a.Path(state.PromptFile)
	}
	return vals
}

// resumes reports whether the kind can resume a session: by its resume argv (ACP's
// conversation makes it the start argv: the protocol resumes, with session/load).
func (s *supervisor) resumes() bool { return len(s.spec.Resume) > 0 }

// installHint is " (npm i -g …)" when the built-in kind of that name runs program and says how
// to install it, else "".
func installHint(kind, program string) string {
	k, ok := config.Builtins()[kind]
	if !ok || k.Install == "" || k.Binary() != program {
		return ""
	}
	return " (" + k.Install + ")"
}
