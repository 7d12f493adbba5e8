package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"agt/state"
)

func env(kv ...string) func(string) string {
	return func(name string) string {
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i] == name {
				return kv[i+1]
			}
		}
		return ""
	}
}

func TestExpandPath(t *testing.T) {
	getenv := env("HOME", "/h", "CODEX_HOME", "/c", "EMPTY", "")
	for _, tc := range []struct{ in, want, err string }{
		{"~", "/h", ""},
		{"~/.claude", "/h/.claude", ""},
		{"/etc/x", "/etc/x", ""},
		{"${CODEX_HOME}", "/c", ""},
		{"${CODEX_HOME:-~/.codex}/sessions", "/c/sessions", ""},
		{"${UNSET:-~/.codex}", "/h/.codex", ""},
		{"${EMPTY:-/d}", "/d", ""},
		{"/a/$HOME/b", "/a/$HOME/b", ""}, // a bare $ is a character
		{"/a/../b/./c/", "/b/c", ""},
		{"${UNSET}/x", "", "$UNSET is not set"},
		{"${EMPTY}/x", "", "$EMPTY is not set"},
		{"relative", "", "not an absolute path"},
		{"~user/x", "", "not an absolute path"},
		{"${HOME", "", "unclosed ${"},
		{"${1BAD}", "", "bad variable name"},
		{"${}", "", "bad variable name"},
	} {
		got, err := ExpandPath(tc.in, getenv)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ExpandPath(%q) = %q, %v; want an error with %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ExpandPath(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	if _, err := ExpandPath("~/x", env()); err == nil {
		t.Error("~ without HOME expanded")
	}
}

func FuzzExpandPath(f *testing.F) {
	for _, s := range []string{"~/.claude", "${XDG_DATA_HOME:-~/.local/share}/opencode/", "${", "$", "/a/${B}/c", "~", "${A:-${B}}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ExpandPath(s, env("HOME", "/h", "A", "/a", "B", "b"))
		if err == nil && (!filepath.IsAbs(p) || filepath.Clean(p) != p) {
			t.Fatalf("ExpandPath(%q) = %q: not a clean absolute path", s, p)
		}
	})
}

func TestResolve(t *testing.T) {
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, ".claude.json"), []byte("{}"), 0o600)
	getenv := env("HOME", home)

	s, err := Resolve(Bwrap, "", []string{"~/.claude/", "~/.claude.json?", "~/.missing?"}, []string{"~/.gitconfig?"}, getenv)
	if err != nil {
		t.Fatal(err)
	}
	want := &state.Sandbox{Tool: Bwrap, RW: []string{filepath.Join(home, ".claude"), filepath.Join(home, ".claude.json")}}
	if s.Tool != want.Tool || s.Net != "" || !slices.Equal(s.RW, want.RW) || len(s.RO) != 0 {
		t.Errorf("Resolve = %+v, want %+v", s, want)
	}
	if fi, err := os.Stat(filepath.Join(home, ".claude")); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Errorf("a declared directory was not made 0700: %v %v", fi, err)
	}

	// A directory in a home that does not exist: left out, the home not made.
	gone := filepath.Join(home, "gone")
	if s, err := Resolve(Bwrap, "", []string{"~/.codex/", "~/.local/share/opencode/"}, nil, env("HOME", gone)); err != nil || len(s.RW) != 0 {
		t.Errorf("directories of a missing home: %+v, %v; want none", s, err)
	}
	if _, err := os.Stat(gone); err == nil {
		t.Errorf("the missing home %s was made", gone)
	}
	// Missing parents inside an existing home are made.
	if s, err := Resolve(Bwrap, "", []string{"~/.local/share/opencode/"}, nil, getenv); err != nil || len(s.RW) != 1 {
		t.Errorf("a directory deep in the home: %+v, %v", s, err)
	}

	// A path that must exist and does not: the error names it and says what to do.
	_, err = Resolve(Bwrap, NetNone, nil, []string{"~/.aws"}, getenv)
	if err == nil || !strings.Contains(err.Error(), `sandbox_ro path "~/.aws": `+filepath.Join(home, ".aws")+" does not exist") ||
		!strings.Contains(err.Error(), "end the path with ?") {
		t.Errorf("missing path: %v", err)
	}
	if _, err := Resolve(Bwrap, "wifi", nil, nil, getenv); err == nil {
		t.Error("a bad network was accepted")
	}
	if _, err := Resolve("docker", "", nil, nil, getenv); err == nil {
		t.Error("a bad tool was accepted")
	}
	if s, err := Resolve(Bwrap, NetNone, nil, nil, getenv); err != nil || s.Net != NetNone {
		t.Errorf("net none: %+v %v", s, err)
	}
}

func TestCheckWorkspace(t *testing.T) {
	for _, tc := range []struct {
		dir string
		ok  bool
	}{
		{"/home/u/src/app", true},
		{"/srv/work", true},
		{"/home/u", false},
		{"/home", false},
		{"/", false},
		{"/tmp", false},
		{"/run", false},
		{"relative", false},
	} {
		err := checkWorkspace(tc.dir, "/home/u")
		if (err == nil) != tc.ok {
			t.Errorf("checkWorkspace(%q) = %v, want ok %v", tc.dir, err, tc.ok)
		}
	}
}

func TestSandboxEnv(t *testing.T) {
	got := sandboxEnv([]string{"PATH=/bin", "SSH_AUTH_SOCK=/tmp/ssh-x/agent.1", "TMPDIR=/home/u/tmp", "DISPLAY=:0",
		"DBUS_SESSION_BUS_ADDRESS=unix:abstract=/tmp/dbus", "IS_SANDBOX=0", "AGT_SANDBOX=bwrap", "AGT_SANDBOX_NET=none", "ANTHROPIC_API_KEY=k"})
	want := []string{"PATH=/bin", "TMPDIR=/tmp", "ANTHROPIC_API_KEY=k", "AGT_SANDBOXED=bwrap", "IS_SANDBOX=1"}
	if !slices.Equal(got, want) {
		t.Errorf("sandboxEnv = %q, want %q", got, want)
	}
}

// layout makes a home with a program directory of npm links, a git worktree of a repository
// in it, and a run directory.
func layout(t *testing.T) (home, ws, repo, run string) {
	t.Helper()
	home = t.TempDir()
	mk := func(p string) string {
		p = filepath.Join(home, p)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write := func(p, s string) {
		if err := os.WriteFile(filepath.Join(home, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mk("npm/node_modules/.bin")
	mk("npm/node_modules/@scope/tool/bin")
	write("npm/node_modules/@scope/tool/bin/tool.js", "")
	os.Symlink("../@scope/tool/bin/tool.js", filepath.Join(home, "npm/node_modules/.bin/tool"))
	mk(".local/bin")
	mk(".local/share/native/versions")
	write(".local/share/native/versions/1.0", "")
	os.Symlink(filepath.Join(home, ".local/share/native/versions/1.0"), filepath.Join(home, ".local/bin/native"))
	repo = mk("src/app")
	for _, d := range []string{".git/objects", ".git/refs", ".git/logs", ".git/hooks", ".git/worktrees/fix"} {
		mk("src/app/" + d)
	}
	write("src/app/.git/config", "")
	write("src/app/.git/worktrees/fix/commondir", "../..\n")
	ws = mk("src/app-agt/fix")
	write("src/app-agt/fix/.git", "gitdir: "+filepath.Join(repo, ".git/worktrees/fix")+"\n")
	run = mk(".local/state/agt")
	return home, ws, repo, run
}

func TestProgramDirs(t *testing.T) {
	home, _, _, run := layout(t)
	path := strings.Join([]string{
		filepath.Join(home, "npm/node_modules/.bin"),
		filepath.Join(home, ".local/bin"),
		home,                   // the home itself: never bound back
		filepath.Dir(run),      // holds the run directory: never bound back
		"/usr/bin", "relative", // visible already; the working directory
	}, ":")
	got := programDirs(path, filepath.Join(home, ".local/bin/native"), []string{"/tmp", home, run}, []string{home, run})
	want := []string{
		filepath.Join(home, ".local/bin"),
		filepath.Join(home, ".local/share/native/versions"),
		filepath.Join(home, "npm/node_modules"), // the whole node_modules: .bin and the package
	}
	if !slices.Equal(got, want) {
		t.Errorf("programDirs =\n%q\nwant\n%q", got, want)
	}
}

func TestRepoStore(t *testing.T) {
	_, ws, repo, _ := layout(t)
	rw, ro := repoStore(ws)
	git := filepath.Join(repo, ".git")
	wantRW := []string{filepath.Join(git, "objects"), filepath.Join(git, "refs"), filepath.Join(git, "logs"), filepath.Join(git, "worktrees/fix")}
	if !slices.Equal(rw, wantRW) || !slices.Equal(ro, []string{git}) {
		t.Errorf("repoStore(git worktree) = rw %q ro %q; want rw %q ro %q", rw, ro, wantRW, []string{git})
	}
	if rw, ro := repoStore(repo); rw != nil || ro != nil {
		t.Errorf("repoStore(main checkout) = %q %q, want nothing: its .git is in the workspace", rw, ro)
	}

	// A jj workspace: the repository's store read-write, its config read-only, and the git
	// repository it is colocated with as for a worktree.
	jjRepo := filepath.Join(repo, ".jj/repo")
	os.MkdirAll(filepath.Join(jjRepo, "store"), 0o755)
	os.WriteFile(filepath.Join(jjRepo, "config.toml"), nil, 0o644)
	os.WriteFile(filepath.Join(jjRepo, "store/git_target"), []byte("../../../.git"), 0o644)
	jjws := filepath.Join(filepath.Dir(ws), "jj")
	os.MkdirAll(filepath.Join(jjws, ".jj"), 0o755)
	os.WriteFile(filepath.Join(jjws, ".jj/repo"), []byte("../../../app/.jj/repo"), 0o644)
	rw, ro = repoStore(jjws)
	wantRW = []string{jjRepo, filepath.Join(git, "objects"), filepath.Join(git, "refs"), filepath.Join(git, "logs")}
	wantRO := []string{filepath.Join(jjRepo, "config.toml"), git}
	if !slices.Equal(rw, wantRW) || !slices.Equal(ro, wantRO) {
		t.Errorf("repoStore(jj workspace) = rw %q ro %q; want rw %q ro %q", rw, ro, wantRW, wantRO)
	}
}

// TestBwrapArgs checks the order of the mounts, which decides what wins: the workspace and
// declared paths after the emptied home, a path inside another after it, the run directory
// emptied after all of them (the workspace holds it here), the prompt file after that.
func TestBwrapArgs(t *testing.T) {
	home, ws, repo, _ := layout(t)
	run := filepath.Join(ws, "run") // the workspace holds the run directory
	os.MkdirAll(run, 0o700)
	prompt := filepath.Join(run, "agents/fix/prompt")
	s := &state.Sandbox{Tool: Bwrap, Net: NetNone,
		RW: []string{filepath.Join(home, ".claude")},
		RO: []string{filepath.Join(home, ".claude/settings.json"), filepath.Join(home, ".gitconfig")}}
	l := Launch{Program: "/usr/bin/true", Argv: []string{"true"}, Env: []string{"HOME=" + home, "PATH=/usr/bin"},
		Dir: filepath.Join(ws, "sub"), Workspace: ws, RunDir: run, Expose: []string{prompt}}
	a, _ := bwrapArgs(s, l, home)
	line := " " + strings.Join(a, " ") + " "
	at := func(frag string) int {
		i := strings.Index(line, " "+frag+" ")
		if i < 0 {
			t.Fatalf("no %q in %s", frag, line)
		}
		return i
	}
	for _, must := range []string{"--unshare-all", "--unshare-user", "--cap-drop ALL", "--die-with-parent", "--ro-bind / /", "--dev /dev", "--proc /proc"} {
		at(must)
	}
	if strings.Contains(line, "--share-net") {
		t.Error("--share-net with net none")
	}
	git := filepath.Join(repo, ".git")
	emptyHome := "--perms 0700 --tmpfs " + home
	if within(home, hiddenRoots("", "")) {
		emptyHome = "--perms 0700 --dir " + home // a directory of the emptied /tmp
	}
	order := []string{
		emptyHome,
		"--bind " + filepath.Join(home, ".claude") + " ",
		"--ro-bind " + filepath.Join(home, ".claude/settings.json") + " ", // inside .claude: after it
		"--ro-bind " + git + " ",
		"--bind " + filepath.Join(git, "objects") + " ",
		"--bind " + filepath.Join(git, "worktrees/fix") + " ",
		"--perms 0700 --tmpfs " + run,
		"--ro-bind " + prompt + " " + prompt,
		"--chdir " + l.Dir,
	}
	last := -1
	for _, frag := range order {
		i := at(strings.TrimSpace(frag))
		if i < last {
			t.Errorf("%q comes before what it must follow in\n%s", frag, line)
		}
		last = i
	}
	if at("--bind "+ws+" "+ws) > at("--perms 0700 --tmpfs "+run) {
		t.Error("the workspace is bound after the run directory in it is emptied")
	}
	s.Net = ""
	if a, _ := bwrapArgs(s, l, home); !slices.Contains(a, "--share-net") {
		t.Error("no --share-net with the network on")
	}
}

func TestProbeError(t *testing.T) {
	for _, tc := range []struct{ stderr, want string }{
		{"bwrap: No permissions to create new namespace, likely because the kernel does not allow non-privileged user namespaces.\n", "the kernel refuses this user a user namespace ("},
		{"bwrap: setting up uid map: Permission denied\n", "check those sysctls"},
		{"env: unrecognized option '--ignore-signal=INT'\n", "GNU coreutils 8.31 or later"},
		{"bwrap: Can't mount proc on /newroot/proc: Operation not permitted\n", "bubblewrap cannot make a sandbox here: bwrap: Can't mount proc"},
		{"", "bubblewrap cannot make a sandbox here: exit status 1"},
	} {
		err := probeError(tc.stderr, errors.New("exit status 1"))
		if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("probeError(%q) = %q, want one line with %q", tc.stderr, err, tc.want)
		}
	}
	if s := UserNSSettings(); !strings.Contains(s, " = ") && !strings.Contains(s, "no user namespace settings") {
		t.Errorf("UserNSSettings = %q", s)
	}
}

func TestProgram0(t *testing.T) {
	dir, shadow, empty := t.TempDir(), t.TempDir(), t.TempDir()
	tool := filepath.Join(dir, "tool")
	for _, p := range []string{tool, filepath.Join(shadow, "tool")} {
		os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755)
	}
	all := func(string) bool { return true }
	for _, tc := range []struct {
		desc, argv0, path string
		visible           func(string) bool
		want              string
	}{
		{"found on the agent's PATH: its name, as argv[0] was", "tool", empty + ":" + dir, all, "tool"},
		{"another program of that name first", "tool", shadow + ":" + dir, all, tool},
		{"not on the agent's PATH", "tool", empty, all, tool},
		{"a path", "./tool", dir, all, tool},
		{"its directory unseen inside", "tool", dir, func(string) bool { return false }, tool},
	} {
		l := Launch{Program: tool, Argv: []string{tc.argv0}, Env: []string{"PATH=" + tc.path}}
		if got := program0(l, tc.visible); got != tc.want {
			t.Errorf("%s: program0 = %q, want %q", tc.desc, got, tc.want)
		}
	}
}
