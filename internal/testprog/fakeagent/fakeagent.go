// Package fakeagent is the fake agent of the end-to-end scripts: a deterministic stand-in for a
// real agent, with every fault a real one can show (a replayed stream, an exit code, ignored
// SIGTERM, grandchildren that setsid, huge, flooding or broken lines, Claude's stream-json
// conversation). The root test binary registers Main as the script command fakeagent; its
// flags are its documentation (fakeagent -h).
package fakeagent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"agt/internal/testprog/faketerminal"
)

// defaultLifetime bounds a fake agent's life: a test binary killed on timeout runs no cleanup,
// so its fake agents end themselves. It is go test's own timeout: a script on a loaded machine
// may take minutes, and an agent that died of old age in the middle of one failed it.
const defaultLifetime = 10 * time.Minute

// Main runs the fake agent on os.Args. It exits with status 125 after -lifetime, whatever
// happens.
func Main() {
	fs := flag.NewFlagSet("fakeagent", flag.ExitOnError)
	var (
		replay     = fs.String("replay", "", "print the lines of `FILE` to stdout")
		delay      = fs.Duration("delay", 0, "pause between replayed lines")
		exit       = fs.Int("exit", 0, "exit with this code when done")
		ready      = fs.String("ready", "", "create `FILE` (holding the pid) once started")
		hold       = fs.String("hold", "", "block until `FILE` exists before exiting")
		ignoreTerm = fs.Bool("ignore-term", false, "ignore SIGTERM")
		huge       = fs.Int("huge", 0, "print one line of `N` bytes")
		hugeNL     = fs.Bool("huge-newline", true, "end the huge line with a newline")
		repeat     = fs.Int("repeat", 1, "print the huge line this many times")
		fork       = fs.Int("fork", 0, "start `N` grandchildren that sleep")
		setsid     = fs.Bool("setsid", false, "grandchildren call setsid")
		holdStdout = fs.Bool("hold-stdout", false, "grandchildren keep stdout open")
		pidsFile   = fs.String("pids", "", "write the grandchildren's pids to `FILE`")
		flood      = fs.Int("flood", 0, "print `MB` megabytes of short lines")
		floodFor   = fs.Duration("flood-for", 0, "print short lines for this long, timing each write")
		maxWrite   = fs.String("max-write", "", "after -flood-for, write the longest write's time in ms to `FILE`")
		garbage    = fs.Bool("garbage", false, "print a NUL byte, invalid UTF-8 and a broken JSON line")
		fds        = fs.String("fds", "", "write the open descriptors to `FILE`")
		env        = fs.String("env", "", "print the value of this environment variable")
		say        = fs.String("say", "", "print `TEXT`")
		turns      = fs.String("turns", "", "for every line read on stdin, append it to `FILE`.in and replay FILE")
		converse   = fs.String("converse", "", "speak Claude's stream-json input and control protocol, scripted by `DIR` (see converse)")
		then       = fs.String("then", "", "after -hold, print the lines of `FILE` to stdout")
		stdinTo    = fs.String("stdin-to", "", "copy stdin to `FILE` before anything else")
		_          = fs.String("note", "", "ignored: an argument a script can find in the argv (a resumed session)")
		sleep      = fs.Bool("sleep", false, "sleep until the lifetime ends (or a signal)")
		terminal   = fs.Bool("terminal", false, "be an interactive program on a terminal (see package faketerminal)")
		child      = fs.Bool("child", false, "internal: be a grandchild")
		lifetime   = fs.Duration("lifetime", defaultLifetime, "exit after this long whatever happens")
	)
	fs.Parse(os.Args[1:])
	if *terminal {
		faketerminal.Main(*lifetime)
	}
	go func() {
		time.Sleep(*lifetime)
		os.Exit(125)
	}()
	if *ignoreTerm {
		signal.Ignore(syscall.SIGTERM)
	}
	if *child {
		select {}
	}
	if *fds != "" {
		writeFDs(*fds)
	}
	if *stdinTo != "" {
		b, _ := io.ReadAll(os.Stdin)
		writeAtomic(*stdinTo, string(b))
	}
	if *ready != "" {
		writeAtomic(*ready, strconv.Itoa(os.Getpid())+"\n")
	}
	if *env != "" {
		fmt.Printf("%s=%s\n", *env, os.Getenv(*env))
	}
	if *say != "" {
		fmt.Println(*say)
	}
	if *fork > 0 {
		forkChildren(*fork, *setsid, *holdStdout, *ignoreTerm, *pidsFile, *lifetime)
	}
	out := bufio.NewWriterSize(os.Stdout, 64<<10)
	if *replay != "" {
		replayFile(out, *replay, *delay)
	}
	for i := 0; i < *repeat && *huge > 0; i++ {
		out.Write(bytes.Repeat([]byte{'x'}, *huge))
		if *hugeNL {
			out.WriteByte('\n')
		}
		out.Flush()
	}
	if *flood > 0 {
		line := []byte(strings.Repeat("flood ", 16) + "\n")
		for n := 0; n < *flood<<20; n += len(line) {
			out.Write(line)
		}
		out.Flush()
	}
	if *floodFor > 0 {
		// Unbuffered writes of whole lines: how long the agent is blocked on one write is how
		// long its supervisor left the pipe unread.
		chunk := []byte(strings.Repeat(strings.Repeat("flood ", 16)+"\n", 40))
		var longest time.Duration
		for end := time.Now().Add(*floodFor); time.Now().Before(end); {
			t := time.Now()
			os.Stdout.Write(chunk)
			longest = max(longest, time.Since(t))
		}
		if *maxWrite != "" {
			writeAtomic(*maxWrite, strconv.FormatInt(longest.Milliseconds(), 10)+"\n")
		}
	}
	if *garbage {
		out.WriteString("nul\x00byte\n")
		out.WriteString("bad\xff\xfeutf8\n")
		out.WriteString("{\"type\":\"broken\"\n")
		out.Flush()
	}
	if *turns != "" {
		in := bufio.NewReader(os.Stdin)
		for {
			line, err := in.ReadBytes('\n')
			if len(line) > 0 {
				f, _ := os.OpenFile(*turns+".in", os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
				f.Write(line)
				f.Close()
				turn, _ := os.ReadFile(*turns)
				os.Stdout.Write(turn)
			}
			if err != nil {
				break
			}
		}
	}
	if *converse != "" {
		converseScripted(*converse)
	}
	if *hold != "" {
		for {
			if _, err := os.Stat(*hold); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if *then != "" {
		replayFile(out, *then, *delay)
	}
	if *sleep {
		select {}
	}
	os.Exit(*exit)
}

// converseScripted plays a conversation as Claude's stream-json input mode does: every line on
// stdin is appended to DIR/in.jsonl; a user message N starts a turn, DIR/turnN.jsonl (or
// DIR/turn.jsonl) replayed line by line. In a turn file, "#answer" waits for the control_response
// to the permission request just printed, and replays DIR/turnN.allow.jsonl or
// DIR/turnN.deny.jsonl by its behavior; "#wait" waits until DIR/go exists; "#hold" waits for a control_request interrupt, answers
// it and ends the turn as Claude does (a failed result). {{message}} in a line is the turn's
// user message. It returns when stdin closes.
func converseScripted(dir string) {
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	read := func() ([]byte, bool) {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			f, _ := os.OpenFile(filepath.Join(dir, "in.jsonl"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
			f.Write(line)
			f.Close()
		}
		return line, err == nil || len(line) > 0
	}
	out := bufio.NewWriter(os.Stdout)
	turn := 0
	message := "" // the text of the turn's user message, for {{message}} in the turn's lines
	var play func(path string) bool
	play = func(path string) bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return true
		}
		for _, line := range strings.SplitAfter(string(b), "\n") {
			switch strings.TrimSpace(line) {
			case "":
			case "#answer":
				ans, ok := read()
				if !ok {
					return false
				}
				next := ".deny.jsonl"
				if strings.Contains(string(ans), `"behavior":"allow"`) {
					next = ".allow.jsonl"
				}
				if !play(filepath.Join(dir, fmt.Sprintf("turn%d%s", turn, next))) {
					return false
				}
			case "#wait":
				// Until DIR/go exists: a turn that takes as long as the script wants.
				for {
					if _, err := os.Stat(filepath.Join(dir, "go")); err == nil {
						break
					}
					time.Sleep(10 * time.Millisecond)
				}
			case "#hold":
				req, ok := read()
				if !ok {
					return false
				}
				if strings.Contains(string(req), `"subtype":"interrupt"`) {
					id := jsonField(req, "request_id")
					fmt.Fprintf(out, `{"type":"control_response","response":{"subtype":"success","request_id":%q,"response":{}}}`+"\n", id)
					out.WriteString(`{"type":"result","subtype":"error_during_execution","is_error":true,"num_turns":1,"duration_ms":1,"total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0},"errors":["interrupted"],"terminal_reason":"aborted_tools","session_id":"s-1"}` + "\n")
					out.Flush()
					return true
				}
			default:
				out.WriteString(strings.ReplaceAll(line, "{{message}}", message))
				out.Flush()
			}
		}
		return true
	}
	for {
		line, ok := read()
		if !ok {
			return
		}
		if !strings.Contains(string(line), `"type":"user"`) {
			continue
		}
		turn++
		var m struct{ Message struct{ Content any } }
		json.Unmarshal(line, &m)
		text, _ := m.Message.Content.(string)
		b, _ := json.Marshal(text)
		message = string(b[1 : len(b)-1]) // as it goes inside a JSON string
		path := filepath.Join(dir, fmt.Sprintf("turn%d.jsonl", turn))
		if _, err := os.Stat(path); err != nil {
			path = filepath.Join(dir, "turn.jsonl")
		}
		if !play(path) {
			return
		}
	}
}

func jsonField(line []byte, path string) string {
	var v map[string]any
	json.Unmarshal(line, &v)
	s, _ := v[path].(string)
	return s
}

// replayFile prints the lines of path, one write each, pausing delay after each.
func replayFile(out *bufio.Writer, path string, delay time.Duration) {
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeagent:", err)
		os.Exit(2)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			out.Write(line)
			out.Flush()
			time.Sleep(delay)
		}
		if err != nil {
			return
		}
	}
}

func forkChildren(n int, setsid, holdStdout, ignoreTerm bool, pidsFile string, lifetime time.Duration) {
	var pids []string
	for i := 0; i < n; i++ {
		args := []string{"-child", "-lifetime", lifetime.String()}
		if ignoreTerm {
			args = append(args, "-ignore-term")
		}
		cmd := exec.Command("/proc/self/exe", args...)
		cmd.Args[0] = "fakeagent"
		if holdStdout {
			cmd.Stdout = os.Stdout
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: setsid}
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "fakeagent: fork:", err)
			os.Exit(2)
		}
		pids = append(pids, strconv.Itoa(cmd.Process.Pid))
	}
	if pidsFile != "" {
		writeAtomic(pidsFile, strings.Join(pids, "\n")+"\n")
	}
}

func writeFDs(path string) {
	// Descriptors the runtime opened itself are close-on-exec; what came through exec is not.
	entries, _ := os.ReadDir("/proc/self/fd")
	var fds []string
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil || flags&unix.FD_CLOEXEC != 0 {
			continue // closed already (ReadDir's own), or the runtime's
		}
		fds = append(fds, e.Name())
	}
	writeAtomic(path, strings.Join(fds, " ")+"\n")
}

func writeAtomic(path, s string) {
	tmp := path + ".tmp"
	os.WriteFile(tmp, []byte(s), 0o644)
	os.Rename(tmp, path)
}
