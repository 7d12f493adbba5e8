package spawn

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
// /dev/null (or the prompt, for kinds that read it there), records its identity and emits
// spawned and state events. StartResume resumes the agent's session where the kind can and the
// session was saved, with the resume prompt instead of the original one; else, and for
// StartNew and StartFresh, it starts afresh with the original prompt.
func (s *supervisor) start(mode string) (*generation, error) {
	spawned, outR, errR, err := s.launch(mode)
	if err != nil {
		return nil, err
	}
	g := &generation{spawned: spawned, started: time.Now(), outR: outR, errR: errR}
	if s.spec.TTY {
		g.readers = s.readTTY(outR)
	} else {
		g.readers = s.read(outR, errR)
	}
	if s.acp != nil {
		if err := s.connect(g, s.spec.Argv[0]); err != nil {
			return nil, err
		}
	}
	return g, nil
}

func (s *supervisor) launch(mode string) (spawned []byte, outR, errR *os.File, err error) {
	s.instance = newInstance()
	tmpl := s.spec.Argv
	prompt, err := s.prompt()
	if err != nil {
		return nil, nil, nil, err
	}
	session, resumed := s.session(mode)
	s.mu.Lock()
	next := s.next
	s.next, s.interrupted = nil, false
	s.mu.Unlock()
	switch {
	case s.spec.Stdin == config.StdinACP:
		// The protocol resumes the session (session/load), which then waits for the next
		// message, as a conversation does; the argv is the same.
		if resumed {
			prompt = nil
		}
	case next != nil:
		// The next turn of a conversation of turn processes: the message is the prompt, in
		// the session when the agent saved it, else in a fresh one.
		if resumed {
			tmpl = s.spec.Resume
		}
		prompt = next
	case resumed && s.spec.Stdin == config.StdinStreamJSON:
		// A conversation resumes where it was: waiting for the next message.
		tmpl, prompt = s.spec.Resume, nil
	case resumed:
		// The session goes on: the original prompt is not sent again.
		tmpl = s.spec.Resume
		rp := s.spec.ResumePrompt
		if rp == "" {
			rp = config.DefaultResumePrompt
		}
		prompt = &rp
	}
	vals := s.tokens(prompt, session)
	if resumed {
		vals["AGT_PROMPT_FILE"] = "" // it holds the original prompt, which a resume does not send
	}
	env := s.agentEnv(vals)
	argv, err := config.Expand(tmpl, vals)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(argv) == 0 || argv[0] == "" {
		return nil, nil, nil, errors.New("no command to run")
	}
	// What events show: the prompt replaced by its size (R27).
	if prompt != nil {
		vals["AGT_PROMPT"] = fmt.Sprintf("<prompt: %d bytes>", len(*prompt))
	}
	shown, _ := config.Expand(tmpl, vals)

	if fi, err := os.Stat(s.spec.Cwd); err != nil || !fi.IsDir() {
		// Before the command is looked for: a missing directory is no missing program.
		return nil, nil, nil, fmt.Errorf("could not start %s: its working directory %s is gone; make it again, or agt rm %s", argv[0], s.spec.Cwd, s.spec.Name)
	}
	// A relative path names a file in the agent's directory, where it runs, not in ours.
	look := argv[0]
	if strings.Contains(look, "/") && !filepath.IsAbs(look) {
		look = filepath.Join(s.spec.Cwd, look)
	}
	path, err := exec.LookPath(look)
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return nil, nil, nil, fmt.Errorf("could not start %s: executable not found in $PATH; is it installed?%s", argv[0], installHint(s.spec.Kind, argv[0]))
		}
		return nil, nil, nil, fmt.Errorf("could not start %s: %w", argv[0], errors.Unwrap(err))
	}
	var child []*os.File // the child's ends, closed once it started
	var stdinW *os.File
	if s.spec.TTY {
		// The agent's stdin, stdout and stderr are its terminal, which becomes its controlling one.
		s.mu.Lock()
		lastExit := s.exitTextLocked()
		if prompt != nil && !resumed && !config.NeedsPrompt(tmpl) {
			s.typePrompt = prompt // typed once it waits
		}
		s.mu.Unlock()
		var tty *os.File
		outR, tty, err = s.term.open(lastExit, s.now())
		child, env = []*os.File{tty, tty, tty}, termEnv(env, s.spec.Term)
	} else {
		child, outR, errR, stdinW, err = s.pipes(prompt)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	defer func() {
		for _, f := range child {
			f.Close()
		}
	}()
	// syscall.ForkExec, not os/exec: a third of the cost of a start, and waits belong to the
	// SIGCHLD loop alone anyway. Setsid alone also makes a new process group (Setpgid with it
	// fails with EPERM).
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Dir:   s.spec.Cwd,
		Env:   env,
		Files: []uintptr{child[0].Fd(), child[1].Fd(), child[2].Fd()},
		Sys:   &syscall.SysProcAttr{Setsid: true, Setctty: s.spec.TTY, Ctty: 0},
	})
	if err != nil {
		outR.Close()
		errR.Close() // nil for a terminal agent: a no-op
		stdinW.Close()
		return nil, nil, nil, fmt.Errorf("could not start %s: %w", argv[0], err)
	}
	if stdinW != nil {
		s.mu.Lock() // control handlers read it
		if s.stdin != nil {
			s.stdin.Close() // the last run's
		}
		s.stdin = stdinW
		if s.acp != nil {
			resume := ""
			if resumed {
				resume = session
			}
			// The prompt goes as session/prompt, once the session is open.
			s.acpStartLocked(stdinW, resume, prompt)
		}
		s.mu.Unlock()
		if prompt != nil && s.acp == nil {
			// The prompt: the first turn.
			go s.writeIn(stdinW, userMessage(*prompt))
		}
	}
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

	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status.PID = pid
	s.alive = true
	s.status.Started = now
	s.status.Instance = s.instance
	s.status.ExitCode, s.status.Signal = nil, ""
	s.snap.Activity = now
	ev := stream.Event{Type: stream.TypeSpawned, Kind: s.spec.Kind, Argv: shown, Cwd: s.spec.Cwd, PID: pid, Workspace: s.spec.Workspace}
	spawned = s.appendLocked(&ev, now)
	spawned = append([]byte(nil), spawned[:len(spawned)-1]...)
	// A plain command is running from the start: nothing it says or keeps quiet changes that.
	// So is the next turn process of a conversation: its turn began with the message.
	first := stream.Starting
	if s.machine.Mode == stream.Plain || next != nil {
		first = stream.Running
	}
	s.setStateLocked(first, "", now)
	switch {
	case prompt != nil:
		s.snap = s.machine.Begin(s.snap, now) // a turn is under way from its prompt
	case s.machine.InputOpen:
		s.setStateLocked(stream.Waiting, stream.ReasonInput, now) // a conversation with no word yet
	}
	s.writeStatusLocked() // the new run's pid, even if it was starting already
	return spawned, outR, errR, nil
}

// pipes makes the agent's stdout and stderr pipes and its stdin: the child's ends (stdin,
// stdout, stderr) and ours. Kinds that converse on stdin get a pipe that stays open between
// turns (stdinW); the prompt is the first user message. Kinds that read their prompt there get
// it as a file, read to its end. Others get /dev/null: Codex and opencode hang on an open pipe.
func (s *supervisor) pipes(prompt *string) (child []*os.File, outR, errR, stdinW *os.File, err error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, nil, nil, nil, err
	}
	var stdin *os.File
	switch {
	case config.StdinConverses(s.spec.Stdin):
		stdin, stdinW, err = os.Pipe()
	case s.spec.Stdin == config.StdinPrompt && prompt != nil:
		stdin, err = promptFile(*prompt)
	default:
		stdin, err = os.Open(os.DevNull)
	}
	if err != nil {
		for _, f := range []*os.File{outR, outW, errR, errW} {
			f.Close()
		}
		return nil, nil, nil, nil, err
	}
	return []*os.File{stdin, outW, errW}, outR, errR, stdinW, nil
}

// session decides how a start of the given mode treats the agent's session: it returns the
// session id for $AGT_SESSION_ID and whether the start resumes it. A resume needs a resume argv
// and a session the agent saved (one that got a reply); otherwise the start is fresh, and says
// so when a resume was asked for. A fresh start of a kind that is given its session id gets a
// new one (reusing one the agent saved would be refused as in use).
func (s *supervisor) session(mode string) (id string, resumed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id = s.status.SessionID // the readers of the last run may still be writing it
	switch {
	case mode == StartResume && s.resumes() && id != "" && s.status.Resumable:
		return id, true
	case mode == StartResume && s.resumes() && id != "":
		ev := stream.Event{Type: stream.TypeError, Source: stream.SourceSupervisor,
			Message: fmt.Sprintf("session %s was never saved; starting afresh with the original prompt", id)}
		s.appendLocked(&ev, time.Now())
		s.flushLocked()
	case mode == StartNew:
		return id, false
	}
	id = ""
	if s.spec.NewSession {
		id = NewSessionID()
	}
	s.status.SessionID, s.status.SessionTotal, s.status.Resumable = id, state.Usage{}, false
	return id, false
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

// userMessage is a prompt as a Claude stream-json user message line, as the Agent SDK writes it.
func userMessage(prompt string) []byte {
	b := []byte(`{"type":"user","message":{"role":"user","content":`)
	b = stream.AppendString(b, prompt)
	return append(b, `},"parent_tool_use_id":null,"session_id":""}`+"\n"...)
}

// resumes reports whether the kind can resume a session: by its resume argv, or by the
// protocol (ACP's session/load).
func (s *supervisor) resumes() bool {
	return len(s.spec.Resume) > 0 || s.spec.Stdin == config.StdinACP
}

// installHint is " (npm i -g …)" when the built-in kind of that name runs program and says how
// to install it, else "".
func installHint(kind, program string) string {
	k, ok := config.Builtins()[kind]
	if !ok || k.Install == "" || k.Binary() != program {
		return ""
	}
	return " (" + k.Install + ")"
}
