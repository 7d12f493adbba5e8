// Package fakeacp is a scripted ACP agent for the end-to-end scripts: the root test binary
// registers Main as the script command fakeacp. See Main for the script it plays.
package fakeacp

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Main is a scripted ACP agent (JSON-RPC 2.0 over stdin and stdout, one object a line) for
// the scripts. Every line it reads is appended to DIR/in.jsonl. -init says how it meets
// initialize: ok (version 1, loadSession), silent (never answers), garbage (prints what is not
// JSON), exit (exits 3 at once, a line on stderr), error (a JSON-RPC error), busy (spins on a
// processor for a second, silent, then answers). session/new
// answers sessionId s-1; session/load replays DIR/history.jsonl (if any) and answers, or with
// -die-on-load exits 1.
//
// session/prompt number N plays DIR/turnN.jsonl, else DIR/turn.jsonl. In a turn file a line
// that starts with {"sessionUpdate" is sent as a session/update of s-1, any other JSON line as
// it is, and these steps do what they say:
//
//	#ask           request permission for Bash "rm -rf build" (options yes: allow_once,
//	               always: allow_always, no: reject_once), wait for the answer, then play
//	               turnN.allow.jsonl, turnN.reject.jsonl or turnN.cancelled.jsonl
//	#hold          wait for session/cancel
//	#crash         exit 1, unless DIR/crashed exists (it makes it): a crash, once
//	#flood N KB    send N requests of a method agt does not offer, each named with KB
//	               kilobytes, reading nothing meanwhile
//	#askflood N KB request permission N times, each input KB kilobytes, waiting for nothing
//	#waitfile F    wait until DIR/F exists
//	#end REASON    answer the prompt with stopReason REASON
//	#error CODE M  answer the prompt with a JSON-RPC error
//
// It exits 0 when stdin closes, and after -lifetime whatever happens.
func Main() {
	fs := flag.NewFlagSet("fakeacp", flag.ExitOnError)
	var (
		dir      = fs.String("dir", ".", "the script's `DIR`")
		init     = fs.String("init", "ok", "how to meet initialize: ok, silent, garbage, exit, error, busy")
		busyFor  = fs.Duration("busy", time.Second, "with -init busy: how long it spins before it answers")
		ready    = fs.String("ready", "", "create `FILE` (holding the pid) once started")
		dieLoad  = fs.Bool("die-on-load", false, "exit 1 when asked to load a session")
		lifetime = fs.Duration("lifetime", 10*time.Minute, "exit after this long whatever happens (go test's own timeout)")
	)
	fs.Parse(os.Args[1:])
	go func() {
		time.Sleep(*lifetime)
		os.Exit(125)
	}()
	if *ready != "" {
		writeAtomic(*ready, strconv.Itoa(os.Getpid())+"\n")
	}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	send := func(line string) {
		out.WriteString(line + "\n")
		out.Flush()
	}
	read := func() (map[string]any, bool) {
		for {
			line, err := in.ReadBytes('\n')
			if len(line) > 0 {
				f, _ := os.OpenFile(filepath.Join(*dir, "in.jsonl"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
				f.Write(line)
				f.Close()
				var m map[string]any
				if json.Unmarshal(line, &m) == nil {
					return m, true
				}
			}
			if err != nil {
				return nil, false
			}
		}
	}
	update := func(u string) {
		send(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":` + u + `}}`)
	}
	playLines := func(path string) {
		b, _ := os.ReadFile(path)
		for _, l := range strings.Split(string(b), "\n") {
			switch l = strings.TrimSpace(l); {
			case l == "":
			case strings.HasPrefix(l, `{"sessionUpdate"`):
				update(l)
			default:
				send(l)
			}
		}
	}
	turn, asks := 0, 0
	var play func(path string, id string) bool
	play = func(path, id string) bool {
		b, err := os.ReadFile(path)
		if err != nil {
			send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"stopReason":"end_turn"}}`, id))
			return true
		}
		for _, l := range strings.Split(string(b), "\n") {
			l = strings.TrimSpace(l)
			word, arg, _ := strings.Cut(l, " ")
			switch {
			case l == "":
			case word == "#ask":
				ask := asks
				asks++
				send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/request_permission","params":{"sessionId":"s-1","toolCall":{"toolCallId":"t%d","name":"Bash","kind":"execute","status":"pending","rawInput":{"command":"rm -rf build"}},"options":[{"optionId":"yes","name":"Yes","kind":"allow_once"},{"optionId":"always","name":"Always","kind":"allow_always"},{"optionId":"no","name":"No","kind":"reject_once"}]}}`, ask, turn))
				for {
					m, ok := read()
					if !ok {
						return false
					}
					if m["method"] != nil || fmt.Sprint(m["id"]) != strconv.Itoa(ask) {
						continue // session/cancel comes before the cancelled answer
					}
					outcome, _ := m["result"].(map[string]any)["outcome"].(map[string]any)
					next := "cancelled"
					switch outcome["optionId"] {
					case "yes", "always":
						next = "allow"
					case "no":
						next = "reject"
					}
					if !play(filepath.Join(*dir, fmt.Sprintf("turn%d.%s.jsonl", turn, next)), id) {
						return false
					}
					break
				}
			case word == "#hold":
				for {
					m, ok := read()
					if !ok {
						return false
					}
					if m["method"] == "session/cancel" {
						break
					}
				}
			case word == "#crash":
				if _, err := os.Stat(filepath.Join(*dir, "crashed")); err != nil {
					writeAtomic(filepath.Join(*dir, "crashed"), "1\n")
					fmt.Fprintln(os.Stderr, "fakeacp: crashing mid-turn")
					os.Exit(1)
				}
			case word == "#flood" || word == "#askflood":
				var n, kb int
				fmt.Sscan(arg, &n, &kb)
				pad := strings.Repeat("x", kb<<10)
				for i := 0; i < n; i++ {
					if word == "#flood" {
						send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"f%d","method":"fs/%s","params":{}}`, i, pad))
						continue
					}
					send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"a%d","method":"session/request_permission","params":{"sessionId":"s-1","toolCall":{"toolCallId":"ft%d","name":"Bash","kind":"execute","status":"pending","rawInput":{"command":"echo %s"}},"options":[{"optionId":"yes","name":"Yes","kind":"allow_once"},{"optionId":"no","name":"No","kind":"reject_once"}]}}`, i, i, pad))
				}
			case word == "#waitfile":
				for {
					if _, err := os.Stat(filepath.Join(*dir, arg)); err == nil {
						break
					}
					time.Sleep(10 * time.Millisecond)
				}
			case word == "#end":
				send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"stopReason":%q,"usage":{"inputTokens":10,"outputTokens":2,"totalTokens":12}}}`, id, arg))
			case word == "#error":
				code, msg, _ := strings.Cut(arg, " ")
				send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":%s,"message":%q}}`, id, code, msg))
			case strings.HasPrefix(l, `{"sessionUpdate"`):
				update(l)
			default:
				send(l)
			}
		}
		return true
	}
	for {
		m, ok := read()
		if !ok {
			os.Exit(0)
		}
		method, _ := m["method"].(string)
		id, _ := json.Marshal(m["id"])
		switch method {
		case "initialize":
			switch *init {
			case "silent":
				continue
			case "garbage":
				send("Welcome to fakeacp! Listening on stdio.")
				continue
			case "exit":
				fmt.Fprintln(os.Stderr, "fakeacp: no credentials found")
				os.Exit(3)
			case "error":
				send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"internal error: boom"}}`, id))
				continue
			case "busy":
				// A slow start: on a processor for -busy, silent, then an answer.
				for end := time.Now().Add(*busyFor); time.Now().Before(end); {
				}
			}
			send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true},"authMethods":[]}}`, id))
		case "session/new":
			send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"sessionId":"s-1"}}`, id))
		case "session/load":
			if *dieLoad {
				fmt.Fprintln(os.Stderr, "fakeacp: cannot load session")
				os.Exit(1)
			}
			playLines(filepath.Join(*dir, "history.jsonl"))
			send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{}}`, id))
		case "session/prompt":
			turn++
			path := filepath.Join(*dir, fmt.Sprintf("turn%d.jsonl", turn))
			if _, err := os.Stat(path); err != nil {
				path = filepath.Join(*dir, "turn.jsonl")
			}
			if !play(path, string(id)) {
				os.Exit(0)
			}
		}
	}
}

// writeAtomic writes s to path by rename, so a script that waits for path reads it whole.
func writeAtomic(path, s string) {
	tmp := path + ".tmp"
	os.WriteFile(tmp, []byte(s), 0o644)
	os.Rename(tmp, path)
}
