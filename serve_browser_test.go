package main

// agt serve's page in a real browser: headless Chromium driven through chromedp (the Chrome
// DevTools Protocol from Go, so the test runs in go test with no Node and no driver binary).
// One browser serves every case; it and all its processes are killed when the test ends,
// however it ends.

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/tidwall/gjson"
)

// browserWait bounds every wait on the browser: generous, for a loaded machine.
const browserWait = 60 * time.Second

// chromiumPath is the browser to drive, "" when none is installed.
func chromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// serveEnv is a run directory and a working directory for agt commands, and what they print.
type serveEnv struct {
	t      *testing.T
	work   string
	env    []string
	marker string
}

func newServeEnv(t *testing.T) *serveEnv {
	work := t.TempDir()
	marker := fmt.Sprintf("serve-browser-%d-%d", os.Getpid(), time.Now().UnixNano())
	e := &serveEnv{t: t, work: work, marker: testMarker + "=" + marker}
	e.env = append(os.Environ(),
		"AGT_RUN_DIR="+filepath.Join(work, "run"), "NO_COLOR=1", "AGT_RESTART=never",
		"XDG_CONFIG_HOME="+filepath.Join(work, ".config"), "GORACE=atexit_sleep_ms=0", e.marker)
	// Every process started here carries the marker: supervisors, agents, agt serve, Chromium.
	t.Cleanup(func() { killMarked(e.marker) })
	return e
}

func (e *serveEnv) path(name string) string { return filepath.Join(e.work, name) }

func (e *serveEnv) write(name, content string) {
	e.t.Helper()
	p := e.path(name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

func (e *serveEnv) command(args ...string) *exec.Cmd {
	cmd := exec.Command("agt", args...)
	cmd.Dir, cmd.Env = e.work, e.env
	return cmd
}

// agt runs agt and fails the test when it fails.
func (e *serveEnv) agt(args ...string) string {
	e.t.Helper()
	out, err := e.command(args...).CombinedOutput()
	if err != nil {
		e.t.Fatalf("agt %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// waitFor polls cond every 10 ms until it holds, failing after browserWait.
func (e *serveEnv) waitFor(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(browserWait)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out after %s waiting for %s", browserWait, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitState waits until agt ps says name is in state.
func (e *serveEnv) waitState(name, state string) {
	e.t.Helper()
	e.waitFor(name+" to be "+state, func() bool {
		out, _ := e.command("ps", "--format", "{{.State}}", name).Output()
		return strings.TrimSpace(string(out)) == state
	})
}

// served is a running agt serve.
type served struct {
	cmd    *exec.Cmd
	base   string // http://127.0.0.1:PORT/
	token  string
	mu     sync.Mutex
	stderr strings.Builder
	done   chan struct{}
}

// serve starts agt serve on addr and waits for its link.
func (e *serveEnv) serve(addr string) *served {
	e.t.Helper()
	s := &served{cmd: e.command("serve", "--listen", addr), done: make(chan struct{})}
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			s.mu.Lock()
			s.stderr.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
		}
		close(s.done)
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		s.stop()
		e.t.Fatalf("agt serve printed no link: %v\n%s", err, s.log())
	}
	base, token, ok := strings.Cut(strings.TrimSpace(line), "?token=")
	if !ok {
		e.t.Fatalf("agt serve printed %q, not a link with a token", line)
	}
	s.base, s.token = base, token
	e.t.Cleanup(s.stop)
	return s
}

func (s *served) log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

// stop interrupts agt serve and waits for it to exit.
func (s *served) stop() {
	if s.cmd.ProcessState != nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGINT)
	<-s.done
	s.cmd.Wait()
}

// browser starts headless Chromium with the flags this machine's closed network needs, and a
// fresh profile; its contexts end, and its processes die, with the test.
func browser(t *testing.T, chrome, marker string) context.Context {
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chrome), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Env(marker),
		chromedp.Env("TMPDIR=" + t.TempDir()), // its singleton socket's directory, gone with the test
		chromedp.WindowSize(390, 844),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	// A phone's screen: 390 × 844 CSS pixels, at twice the density.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulatePortrait, chromedp.EmulateMobile, chromedp.EmulateTouch)); err != nil {
		t.Fatalf("start %s: %v", chrome, err)
	}
	return ctx
}

// pageRun runs browser actions, bounded by browserWait.
func pageRun(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, browserWait)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

// pagePoll waits until the JavaScript expression is true on the page.
func pagePoll(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(browserWait)
	var err error
	for time.Now().Before(deadline) {
		_, err = chromedp.Run(ctx, chromedp.Poll[bool](expr,
			chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(time.Until(deadline))))
		if err == nil || !strings.Contains(err.Error(), "navigated or closed") {
			break
		}
		// A navigation (a form posted, a reload) ends a poll: poll the new page.
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		page, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ''`))
		t.Fatalf("waiting for %s (%s): %v\npage:\n%s", what, expr, err, page)
	}
}

// pageEval evaluates a JavaScript expression on the page (awaiting a promise).
func pageEval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, browserWait)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

func TestServeBrowser(t *testing.T) {
	chrome := chromiumPath()
	if chrome == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is not installed; .ci/run installs it (apt-get install chromium), and under CI=true the browser test must run")
		}
		t.Skip("needs chromium to drive agt serve's page (apt-get install chromium; .ci/run installs it)")
	}
	t.Parallel()
	e := newServeEnv(t)
	e.write("agt.toml", serveBrowserTOML)
	for name, content := range serveBrowserConv {
		e.write(name, content)
	}
	e.write("feed.txt", "line 1\nline 2\nline 3\nline 4\nline 5\n")
	const xss = `<script>document.title="pwned"</script><img src=x onerror="document.title='pwned'"> & done`
	e.agt("spawn", "xss", "--", "fakeagent", "-say", xss, "-sleep", "-lifetime", "5m")
	e.agt("spawn", "counter", "--", "tail", "-n", "+1", "-f", "feed.txt")
	s := e.serve("127.0.0.1:0")
	ctx := browser(t, chrome, e.marker)

	t.Run("refused_without_token", func(t *testing.T) {
		// Fresh browser contexts: no cookie. Without the token the page says so and the API
		// refuses; with a wrong one, no cookie is set and the API still refuses.
		for _, link := range []string{s.base, s.base + "?token=wrong"} {
			tab, cancel := chromedp.NewContext(ctx, chromedp.WithNewBrowserContext())
			defer cancel()
			// The tab lives as long as the context of its first run: one with no deadline.
			if err := chromedp.Do(tab); err != nil {
				t.Fatal(err)
			}
			pageRun(t, tab, chromedp.Navigate(link))
			status := pageEval[int](t, tab, `fetch('/api/agents').then(r => r.status)`)
			if status != http.StatusUnauthorized {
				t.Errorf("GET /api/agents after opening %s: status %d, want 401", link, status)
			}
			if link == s.base {
				pagePoll(t, tab, "the sign-in message", `!document.getElementById('signin').hidden && document.getElementById('signinwhy').textContent.includes('not signed in')`)
			}
		}
		if !strings.Contains(s.log(), "wrong token in a link") {
			t.Errorf("agt serve did not log the wrong token:\n%s", s.log())
		}
	})

	// Sign in: the link sets an HttpOnly cookie (no script sees it) and leaves the address.
	pageRun(t, ctx, chromedp.Navigate(s.base+"?token="+s.token))
	pagePoll(t, ctx, "the list", `!document.getElementById('list').hidden && document.querySelector('#agents li[data-agent="counter"]') !== null`)
	where := pageEval[string](t, ctx, `location.href`)
	cookies := pageEval[string](t, ctx, `document.cookie`)
	if where != s.base || cookies != "" {
		t.Fatalf("after the link: at %q with document.cookie %q; want %q and no cookie a script can read", where, cookies, s.base)
	}

	t.Run("permission_live_and_approved", func(t *testing.T) {
		// The page is open when the agent starts and asks: the request appears, first.
		e.agt("spawn", "--agent", "chat", "--converse", "--prompt", "make a dir", "asker")
		pagePoll(t, ctx, "asker's request in the list",
			`document.querySelector('#agents li[data-agent="asker"] .waits')?.textContent === 'permission: Bash mkdir x && touch x/y'`)
		pagePoll(t, ctx, "asker first", `document.querySelector('#agents li').dataset.agent === 'asker'`)
		pagePoll(t, ctx, "a count of who needs you", `document.getElementById('summary').textContent.includes('1 needs you')`)

		pageRun(t, ctx, chromedp.Click(chromedp.CSS(`#agents li[data-agent="asker"] a`)))
		pagePoll(t, ctx, "the approve button", `!document.getElementById('ask').hidden && document.getElementById('waits').textContent.startsWith('permission: Bash')`)
		pagePoll(t, ctx, "the request in the transcript", `[...document.querySelectorAll('#events li.permission')].some(li => li.textContent.includes('Bash asks permission: mkdir x && touch x/y'))`)
		pageRun(t, ctx, chromedp.Click(chromedp.ID(`approve`)))
		pagePoll(t, ctx, "the answer", `document.getElementById('said').textContent === 'allowed asker Bash (req-1)'`)
		e.waitFor("the fake agent to receive the approval", func() bool {
			b, _ := os.ReadFile(e.path("conv/in.jsonl"))
			return strings.Contains(string(b), `"request_id":"req-1","response":{"behavior":"allow"`)
		})
		pagePoll(t, ctx, "the turn's end in the transcript", `[...document.querySelectorAll('#events li.result')].some(li => li.textContent.includes('turn 1 done'))`)
		pagePoll(t, ctx, "the request gone", `document.getElementById('ask').hidden`)
	})

	t.Run("agent_text_is_text", func(t *testing.T) {
		pageRun(t, ctx, chromedp.Navigate(s.base+"#xss"))
		pagePoll(t, ctx, "the agent's line", fmt.Sprintf(`[...document.querySelectorAll('#events li.output .text')].some(e => e.textContent === %q)`, xss))
		bad := pageEval[int](t, ctx, `document.querySelectorAll('#events script, #events img, #agents script, #agents img').length`)
		title := pageEval[string](t, ctx, `document.title`)
		if bad != 0 || title == "pwned" {
			t.Fatalf("the agent's markup became elements (%d) or ran (title %q)", bad, title)
		}
	})

	t.Run("cross_site_refused", func(t *testing.T) {
		// Another site (localhost is not 127.0.0.1's site) serves a page that tries to answer
		// a pending request with the signed-in browser: a fetch, a read of the API, a form.
		e.agt("spawn", "--agent", "chat2", "--converse", "--prompt", "clean up", "victim")
		e.waitState("victim", "waiting")
		target := strings.TrimSuffix(s.base, "/")
		evil := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, serveBrowserEvil, target, target)
		}))
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		evil.Listener = ln
		evil.Start()
		defer evil.Close()
		page := "http://localhost:" + strings.TrimPrefix(ln.Addr().String(), "127.0.0.1:") + "/"
		pageRun(t, ctx, chromedp.Navigate(page))
		pagePoll(t, ctx, "the other site's tries", `document.title.startsWith('{')`)
		tries := pageEval[string](t, ctx, `document.title`)
		if got := gjson.Get(tries, "read").String(); got != "blocked" {
			t.Errorf("another site read the API: %s", tries)
		}
		// The form posts across sites as a top-level navigation.
		pageRun(t, ctx, chromedp.Evaluate[chromedp.Void](`document.getElementById('f').submit()`))
		pagePoll(t, ctx, "the refusal of the form", `document.body && document.body.innerText.includes('refused a cross-site request')`)
		out := e.agt("permissions", "--json", "victim")
		if !strings.Contains(out, `"id":"req-1"`) {
			t.Errorf("victim's request was answered from another site:\n%s", out)
		}
		if b, _ := os.ReadFile(e.path("conv2/in.jsonl")); strings.Contains(string(b), "control_response") {
			t.Errorf("the fake agent got an answer from another site:\n%s", b)
		}
		if n := strings.Count(s.log(), "refused a cross-site request"); n < 2 {
			t.Errorf("agt serve refused %d cross-site requests, want the fetch and the form:\n%s", n, s.log())
		}
	})

	// The page as a phone shows it, for docs/ (AGT_SERVE_SCREENSHOTS=docs).
	if dir := os.Getenv("AGT_SERVE_SCREENSHOTS"); dir != "" {
		for _, shot := range []struct{ hash, file, ready string }{
			{"", "serve-phone.png", `document.querySelector('#agents li[data-agent="victim"] .waits') !== null`},
			{"#victim", "serve-phone-agent.png", `!document.getElementById('ask').hidden && document.querySelectorAll('#events li').length > 3`},
		} {
			pageRun(t, ctx, chromedp.Navigate(s.base+shot.hash))
			pagePoll(t, ctx, "the page to show "+shot.file, shot.ready)
			pageRun(t, ctx, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, document.body.scrollHeight)`))
			png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, shot.file), png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}

	t.Run("reconnect_misses_nothing", func(t *testing.T) {
		pageRun(t, ctx, chromedp.Navigate(s.base+"#counter"))
		outputs := `[...document.querySelectorAll('#events li.output .text')].map(e => e.textContent)`
		pagePoll(t, ctx, "five lines", outputs+`.length === 5`)
		// Two streams are open (the fleet's, the transcript's), on one inotify instance.
		if n := inotifies(t, s.cmd.Process.Pid); n != 1 {
			t.Errorf("agt serve holds %d inotify instances with two streams open, want 1", n)
		}
		// agt serve goes away; the agent goes on writing; agt serve comes back on the same
		// address (and token); the agent writes more.
		addr := strings.TrimSuffix(strings.TrimPrefix(s.base, "http://"), "/")
		s.stop()
		pagePoll(t, ctx, "the page to see the stream drop", `document.getElementById('live').className.includes('off')`)
		appendLines(t, e.path("feed.txt"), 6, 10)
		e.waitFor("ten lines in the log", func() bool {
			b, _ := os.ReadFile(filepath.Join(e.work, "run/agents/counter/events.ndjson"))
			return strings.Contains(string(b), `"line":"line 10"`)
		})
		s2 := e.serve(addr)
		appendLines(t, e.path("feed.txt"), 11, 15)
		pagePoll(t, ctx, "fifteen lines", outputs+`.length === 15`)
		got := pageEval[[]string](t, ctx, outputs)
		seqs := pageEval[[]int](t, ctx, `[...document.querySelectorAll('#events li')].map(e => +e.dataset.seq)`)
		for i, line := range got {
			if want := fmt.Sprintf("line %d", i+1); line != want {
				t.Fatalf("line %d of the page is %q, want %q; all: %q", i+1, line, want, got)
			}
		}
		if dupes := pageEval[string](t, ctx, `document.getElementById('events').dataset.dupes || '0'`); dupes != "0" {
			t.Fatalf("the server sent %s events again after the reconnect", dupes)
		}
		for i := 1; i < len(seqs); i++ {
			if seqs[i] <= seqs[i-1] {
				t.Fatalf("seqs on the page go %d then %d: %v", seqs[i-1], seqs[i], seqs)
			}
		}
		if !strings.Contains(s2.log(), "agents of") {
			t.Errorf("the second agt serve said nothing:\n%s", s2.log())
		}

		// Out of sight, the page closes its streams; back in sight, it resumes after the
		// last seq it has (?after=), again missing nothing and getting nothing twice.
		visible := func(v bool) {
			pageRun(t, ctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(
				`Object.defineProperty(document, 'hidden', {value: %v, configurable: true}); document.dispatchEvent(new Event('visibilitychange'))`, !v)))
		}
		visible(false)
		pagePoll(t, ctx, "the streams closed", `document.getElementById('live').className.includes('off')`)
		appendLines(t, e.path("feed.txt"), 16, 18)
		e.waitFor("eighteen lines in the log", func() bool {
			b, _ := os.ReadFile(filepath.Join(e.work, "run/agents/counter/events.ndjson"))
			return strings.Contains(string(b), `"line":"line 18"`)
		})
		visible(true)
		pagePoll(t, ctx, "eighteen lines", outputs+`.length === 18 && `+outputs+`[17] === 'line 18'`)
		if dupes := pageEval[string](t, ctx, `document.getElementById('events').dataset.dupes || '0'`); dupes != "0" {
			t.Fatalf("the server sent %s events again after the page came back in sight", dupes)
		}
	})
}

// inotifies counts the inotify instances of process pid.
func inotifies(t *testing.T, pid int) int {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fd/", pid)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if link, _ := os.Readlink(dir + e.Name()); strings.Contains(link, "inotify") {
			n++
		}
	}
	return n
}

// appendLines appends "line N" for N from..to to path.
func appendLines(t *testing.T, path string, from, to int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := from; i <= to; i++ {
		fmt.Fprintf(f, "line %d\n", i)
	}
}

const serveBrowserTOML = `[agents.chat]
start = ["fakeagent"]
converse_args = ["-converse", "conv"]
format = "claude"
stdin = "prompt"

[agents.chat2]
start = ["fakeagent"]
converse_args = ["-converse", "conv2"]
format = "claude"
stdin = "prompt"
`

var serveBrowserConv = map[string]string{
	"conv/turn1.jsonl": `{"type":"system","subtype":"init","session_id":"s-1","model":"m","cwd":"/"}
{"type":"assistant","message":{"content":[{"type":"text","text":"I'll make the directory."}]},"session_id":"s-1"}
{"type":"control_request","request_id":"req-1","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"mkdir x && touch x/y"},"tool_use_id":"t1"}}
#answer
{"type":"result","subtype":"success","is_error":false,"result":"done","num_turns":1,"duration_ms":5,"total_cost_usd":0.0015,"usage":{"input_tokens":1,"output_tokens":1},"session_id":"s-1"}
`,
	"conv/turn1.allow.jsonl": `{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"","is_error":false}]},"session_id":"s-1"}
`,
	"conv2/turn1.jsonl": `{"type":"system","subtype":"init","session_id":"s-2","model":"m","cwd":"/"}
{"type":"assistant","message":{"content":[{"type":"text","text":"Let me look at the build first."}]},"session_id":"s-2"}
{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t0","name":"Bash","input":{"command":"ls build"}}]},"session_id":"s-2"}
{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t0","content":"main.o\nstale.o","is_error":false}]},"session_id":"s-2"}
{"type":"assistant","message":{"content":[{"type":"text","text":"The build directory is stale; I'll remove it and rebuild."}]},"session_id":"s-2"}
{"type":"control_request","request_id":"req-1","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"rm -rf build && make","description":"Rebuild from scratch"},"tool_use_id":"t1"}}
#answer
{"type":"result","subtype":"success","is_error":false,"result":"done","num_turns":1,"duration_ms":5,"usage":{"input_tokens":1,"output_tokens":1},"session_id":"s-2"}
`,
}

// serveBrowserEvil is another site's page: it tries the API with the signed-in browser's
// cookies, and reports in its title; its form posts an answer when submitted.
const serveBrowserEvil = `<!doctype html><html><body>
<form id="f" method="POST" action="%s/api/agents/victim/approve" enctype="text/plain"><input name='{"id":"req-1","x":"' value='"}'></form>
<script>
const target = %q;
(async () => {
  const r = {};
  try {
    await fetch(target + '/api/agents/victim/approve', {method: 'POST', mode: 'no-cors', credentials: 'include',
      headers: {'Content-Type': 'text/plain'}, body: '{"id":"req-1"}'});
    r.post = 'sent';
  } catch (e) { r.post = 'error'; }
  try {
    const x = await fetch(target + '/api/agents', {credentials: 'include'});
    r.read = 'read ' + x.status;
  } catch (e) { r.read = 'blocked'; }
  document.title = JSON.stringify(r);
})();
</script></body></html>`
