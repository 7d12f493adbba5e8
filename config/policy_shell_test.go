package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func bashInput(command string) []byte {
	b, _ := json.Marshal(map[string]string{"command": command})
	return b
}

// bypasses are ways to run rm that a text rule misses; each must be denied (or, where only
// running it would tell, asked), never allowed, by allow = ["Bash"], deny = ["Bash(rm:*)"].
var bypasses = []struct{ command, want string }{
	{"rm -rf build", "deny"},
	{"/bin/rm -rf build", "deny"},
	{"/usr/bin/rm -rf build", "deny"},
	{"./../../bin/rm x", "deny"},
	{`\rm -rf build`, "deny"},
	{`r\m -rf build`, "deny"},
	{`'rm' -rf build`, "deny"},
	{`"rm" -rf build`, "deny"},
	{`r''m -rf build`, "deny"},
	{`$'\x72m' -rf build`, "deny"},
	{`{rm,-rf,build}`, "deny"},
	{`{r..r}m -rf build`, "deny"},
	{`$'\162m' -rf build`, "deny"},
	{`$'\u0072m' -rf build`, "deny"},
	{`{x,rm} -rf build`, "allow"}, // x runs, with rm as its first argument
	{"bash -c 'rm -rf build'", "deny"},
	{`sh -c "rm -rf build"`, "deny"},
	{`bash -lc 'rm -rf build'`, "deny"},
	{`bash -e -c 'rm -rf build'`, "deny"},
	{`bash -c "bash -c 'rm -rf build'"`, "deny"},
	{`zsh -c 'cd /tmp && rm -rf build'`, "deny"},
	{"if true; then rm -rf build; fi", "deny"},
	{"while true; do rm -rf build; break; done", "deny"},
	{"for f in a b; do rm $f; done", "deny"},
	{"case x in x) rm -rf build;; esac", "deny"},
	{"f() { rm -rf build; }; f", "deny"},
	{"function f { rm -rf build; }", "deny"},
	{"(rm -rf build)", "deny"},
	{"{ rm -rf build; }", "deny"},
	{"! rm x", "deny"},
	{"true && rm -rf build", "deny"},
	{"false || rm -rf build", "deny"},
	{"ls | rm -rf build", "deny"},
	{"ls; rm -rf build", "deny"},
	{"ls\nrm -rf build", "deny"},
	{"ls & rm -rf build", "deny"},
	{"echo $(rm -rf build)", "deny"},
	{"echo `rm -rf build`", "deny"},
	{`echo "$(rm -rf build)"`, "deny"},
	{"cat <(rm -rf build)", "deny"},
	{"x=$(rm -rf build)", "deny"},
	{"export X=$(rm -rf build)", "deny"},
	{"echo ${X:-$(rm -rf build)}", "deny"},
	{"[[ $(rm -rf build) ]]", "deny"},
	{"coproc rm -rf build", "deny"},
	{"time rm -rf build", "deny"},
	{"FOO=1 rm -rf build", "deny"},
	{"env rm -rf build", "deny"},
	{"env -i PATH=/bin rm -rf build", "deny"},
	{"env -u HOME -- rm -rf build", "deny"},
	{"/usr/bin/env FOO=1 rm x", "deny"},
	{"command rm -rf build", "deny"},
	{"command -p rm x", "deny"},
	{"builtin command rm x", "deny"},
	{"exec rm -rf build", "deny"},
	{"exec -a foo rm x", "deny"},
	{"nice rm -rf build", "deny"},
	{"nice -n 10 rm x", "deny"},
	{"nice -10 rm x", "deny"},
	{"nohup rm -rf build &", "deny"},
	{"timeout 5 rm -rf build", "deny"},
	{"timeout -s KILL 5s rm x", "deny"},
	{"timeout --kill-after=1 5 rm x", "deny"},
	{"xargs rm", "deny"},
	{"ls | xargs rm -rf", "deny"},
	{"find . -name '*.o' | xargs -0 -n1 rm", "deny"},
	{"xargs -I{} rm {}", "deny"},
	{"find . -name x -exec rm {} \\;", "deny"},
	{"find . -execdir rm -f {} +", "deny"},
	{"sudo rm -rf build", "deny"},
	{"sudo -u root -- rm x", "deny"},
	{"sudo FOO=1 rm x", "deny"},
	{"doas rm x", "deny"},
	{"/usr/bin/time -f %e rm x", "deny"},
	{"stdbuf -oL rm x", "deny"},
	{"setsid rm x", "deny"},
	{"setsid -f env -i rm x", "deny"},
	{"nice timeout 5 env sudo rm x", "deny"},
	{"busybox rm x", "deny"},
	{"flock /tmp/l rm x", "deny"},
	{"flock /tmp/l -c 'rm x'", "deny"},
	{"su -c 'rm x' root", "deny"},
	{"watch -n 1 rm x", "deny"},
	{"ssh localhost rm -rf build", "deny"},
	{"strace -f -o /dev/null rm x", "deny"},
	{"rm", "deny"},
	{"rmdir build", "deny"}, // rm:* is a prefix, as Claude reads it

	// Not decidable without running it: asked.
	{"$(echo rm) -rf build", ""},
	{"`echo rm` -rf build", ""},
	{"$CMD -rf build", ""},
	{"${X}m -rf build", ""},
	{"x=rm; $x -rf build", ""},
	{"eval 'rm -rf build'", ""},
	{"eval \"$(echo rm) x\"", ""},
	{"source ./script.sh", ""},
	{". ./script.sh", ""},
	{"trap 'rm -rf build' EXIT", ""},
	{"alias ls=rm; ls x", ""},
	{"hash -p /bin/rm ls; ls -rf build", ""},
	{"/bin/r? -rf build", ""},
	{"/bin/r* -rf build", ""},
	{"{1..100000}", ""},
	{"bash -c \"$CMD\"", ""},
	{"echo 'rm -rf build' | bash", ""},
	{"bash < script", ""},
	{"bash -s", ""},
	{"bash <<EOF\nrm -rf build\nEOF", ""},
	{"env -S 'rm -rf build'", ""},
	{"sudo -s 'rm x'", ""},
	{"sudo -i", ""},
	{"su", ""},
	{"xargs sh", ""},
	{"xargs", "allow"}, // echo
	{"ls | xargs $CMD", ""},
	{"nice --weird rm x", ""},
	{"timeout --bogus 5 rm x", ""},
	{"x='a[$(rm -rf build)]'; (( x ))", ""},
	{"x='a[$(rm -rf build)]'; echo $(( x + 1 ))", ""},
	{"x='a[$(rm -rf build)]'; [[ $x -eq 1 ]]", ""},
	{"x='$(rm -rf build)'; echo ${x@P}", ""},
	{"PS4='$(rm -rf build)' bash -xc ls", ""},
	{"BASH_ENV=./x bash -c ls", ""},
	{"env 'BASH_FUNC_ls%%=() { rm -rf build; }' bash -c ls", ""},
	{"LD_PRELOAD=./evil.so ls", ""},
	{"declare -n r='a[$(rm -rf build)]'; echo $r", ""},
	{"if true; then", ""}, // does not parse
	{"ssh host -o X rm x", ""},
	{"chroot /", ""},
}

func TestPolicyBypasses(t *testing.T) {
	p := Policy{Allow: []string{"Bash"}, Deny: []string{"Bash(rm:*)"}, Dir: t.TempDir()}
	for _, tt := range bypasses {
		got, rule := p.Decide("Bash", bashInput(tt.command))
		if got != tt.want {
			t.Errorf("%q: %q by %q, want %q", tt.command, got, rule, tt.want)
		}
	}
}

// What the rules must still allow: rm as a word that is not run, and commands without rm.
func TestPolicyAllowsWhatRunsNoRm(t *testing.T) {
	p := Policy{Allow: []string{"Bash"}, Deny: []string{"Bash(rm:*)"}, Dir: t.TempDir()}
	for _, c := range []string{
		"ls -la", "echo rm", "grep -r rm .", "git commit -m 'rm old'", "cat rm.txt",
		"echo \"$(date)\"", "npm test 2>&1 | tee log", "for f in *.go; do gofmt -l $f; done",
		"FOO=1 make", "bash ./build.sh", "sh -c 'ls; echo rm'", "env FOO=1 make test",
		"timeout 60 go test ./...", "ls | xargs -n1 echo", "find . -name '*.go' -exec gofmt -l {} +",
		"echo ${#x}", "echo $(( 1 + 2 ))", "echo ${a[@]}",
	} {
		if got, rule := p.Decide("Bash", bashInput(c)); got != "allow" {
			t.Errorf("%q: %q by %q, want allow", c, got, rule)
		}
	}
}

// Allow rules with a specifier allow a line only when each command it runs is allowed.
func TestPolicyAllowsEveryCommand(t *testing.T) {
	p := Policy{Allow: []string{"Bash(git status)", "Bash(git diff:*)", "Bash(npm run test:*)", "Bash(grep:*)", "Bash(echo hi > out.txt)"}}
	tests := []struct{ command, want, rule string }{
		{"git status", "allow", "Bash(git status)"},
		{"git status && git diff --stat", "allow", "Bash(git status), Bash(git diff:*)"},
		{"git status; curl evil", "", ""},
		{"npm run test:unit", "allow", "Bash(npm run test:*)"},
		{"npm run test && curl evil", "", ""},
		{"git status > /etc/passwd", "", ""},
		{"git status 2>/dev/null", "allow", "Bash(git status)"},
		{"git status 2>&1", "allow", "Bash(git status)"},
		{"echo hi > out.txt", "allow", "Bash(echo hi > out.txt)"}, // named exactly
		{"FOO=1 git status", "", ""},
		{"PATH=/tmp/evil git status", "", ""},
		{"/tmp/evil/git status", "", ""},
		{"nice git status", "allow", "Bash(git status)"},
		{"bash -c 'git status'", "allow", "Bash(git status)"},
		{"sudo git status", "", ""},
		{"env FOO=1 git status", "", ""},
		{"ls | xargs grep foo", "", ""}, // ls is not allowed
		{"git diff | xargs grep foo", "allow", "Bash(git diff:*), Bash(grep:*)"},
		{"git diff $(curl evil)", "", ""},
		{"git diff $REF", "allow", "Bash(git diff:*)"},
		{"git status $X", "", ""},
		{"eval git status", "", ""},
	}
	for _, tt := range tests {
		got, rule := p.Decide("Bash", bashInput(tt.command))
		if got != tt.want || rule != tt.rule {
			t.Errorf("%q: %q by %q, want %q by %q", tt.command, got, rule, tt.want, tt.rule)
		}
	}
}

// A deny rule written with a path, or as a glob, holds however the command is named.
func TestPolicyDenyForms(t *testing.T) {
	tests := []struct{ deny, command, want string }{
		{"Bash(/usr/bin/curl:*)", "curl evil", "deny"},
		{"Bash(rm *)", "/bin/rm -rf x", "deny"},
		{"Bash(rm -rf *)", "ls | xargs rm -rf", "deny"},
		{"Bash(rm -rf *)", "ls | xargs rm", "deny"}, // its arguments come at run time
		{"Bash(git push --force:*)", "git push $FLAGS", "deny"},
		{"Bash(git push --force:*)", "git push origin", "allow"},
	}
	for _, tt := range tests {
		p := Policy{Allow: []string{"Bash"}, Deny: []string{tt.deny}}
		if got, rule := p.Decide("Bash", bashInput(tt.command)); got != tt.want {
			t.Errorf("deny %s, %q: %q by %q, want %q", tt.deny, tt.command, got, rule, tt.want)
		}
	}
}

// File rules hold on the file the path names: through links, "..", and /proc's views.
func TestPolicyResolvedPaths(t *testing.T) {
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	must(t, os.MkdirAll(filepath.Join(repo, "src"), 0o755))
	must(t, os.WriteFile(filepath.Join(repo, ".env"), []byte("x"), 0o600))
	must(t, os.Symlink(filepath.Join(repo, ".env"), filepath.Join(repo, "src", "innocent")))
	must(t, os.Symlink("/etc", filepath.Join(repo, "src", "etc")))
	must(t, os.Symlink("..", filepath.Join(repo, "src", "up")))
	p := Policy{Allow: []string{"Read", "Edit(src/*)"}, Deny: []string{"Read(./.env)", "Read(/etc/shadow)"}, Dir: repo}
	tests := []struct{ tool, path, want string }{
		{"Read", ".env", "deny"},
		{"Read", "src/innocent", "deny"},
		{"Read", "src/up/.env", "deny"},
		{"Read", "src/../.env", "deny"},
		{"Read", "/proc/self/cwd/.env", "deny"},
		{"Read", "/proc/thread-self/cwd/src/innocent", "deny"},
		{"Read", "/proc/self/root/etc/shadow", "deny"},
		{"Read", "/proc/1/root/etc/shadow", "deny"},
		{"Read", "src/etc/shadow", "deny"},
		{"Read", "/proc/self/fd/3", ""},
		{"Read", "/dev/stdin", ""},
		{"Read", "README", "allow"},
		{"Edit", "src/a.go", "allow"},
		{"Edit", "src/new/b.go", "allow"},
		{"Edit", "src/etc/passwd", ""},
		{"Edit", "src/up/x", ""},
		{"Edit", "src/../../x", ""},
	}
	for _, tt := range tests {
		in, _ := json.Marshal(map[string]string{"file_path": tt.path})
		if got, rule := p.Decide(tt.tool, in); got != tt.want {
			t.Errorf("%s %s: %q by %q, want %q", tt.tool, tt.path, got, rule, tt.want)
		}
	}
}

// URL rules compare the parsed URL, never its text.
func TestPolicyURLs(t *testing.T) {
	p := Policy{
		Allow: []string{"WebFetch(https://x.com:*)", "WebFetch(domain:docs.rs)", "WebFetch(https://*.example.org/api/*)"},
		Deny:  []string{"WebFetch(https://x.com/admin:*)", "WebFetch(domain:evil.com)"},
	}
	tests := []struct{ url, want string }{
		{"https://x.com/a", "allow"},
		{"https://X.COM./a?q=1", "allow"},
		{"https://x.com.evil.com/steal", ""},
		{"https://x.com@evil.com/", "deny"},
		{"https://x.com:8443/a", ""},
		{"http://x.com/a", ""},
		{"https://x.com/admin/users", "deny"},
		{"https://x.com/a/../admin/users", "deny"},
		{"https://x.com/%61dmin", "deny"},
		{"https://x.com:443/admin", "deny"},
		{"https://x.com:8443/admin", "deny"},
		{"https://docs.rs/x", "allow"},
		{"https://docs.rs.evil.com/x", ""},
		{"https://a.example.org/api/v1", "allow"},
		{"https://example.org/api/v1", ""},
		{"https://a.example.org.evil.com/api/v1", ""},
		{"not a url", ""},
		{"/relative", ""},
	}
	for _, tt := range tests {
		in, _ := json.Marshal(map[string]string{"url": tt.url})
		if got, rule := p.Decide("WebFetch", in); got != tt.want {
			t.Errorf("%s: %q by %q, want %q", tt.url, got, rule, tt.want)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// BenchmarkDecideBash: a permission request's Bash line, parsed and judged against a few rules.
func BenchmarkDecideBash(b *testing.B) {
	p := Policy{Allow: []string{"Bash(git status)", "Bash(go test:*)", "Bash(grep:*)"}, Deny: []string{"Bash(rm:*)", "Bash(curl:*)"}, Dir: "/tmp"}
	for _, c := range []struct{ name, command string }{
		{"simple", "go test ./..."},
		{"compound", `cd pkg && go test -run 'TestX|TestY' ./... 2>&1 | grep -v "^ok" | tee /dev/null; echo "$(date) done"`},
		{"wrapped", "timeout 60 env FOO=1 nice -n 5 bash -c 'go test ./... && git status'"},
	} {
		in := bashInput(c.command)
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				p.Decide("Bash", in)
			}
		})
	}
}

func TestANSIC(t *testing.T) {
	for in, want := range map[string]string{`\x72m`: "rm", `\162m`: "rm", `\u0072m`: "rm", `r\e`: "r\x1b",
		`\'a\\`: "'a\\", `\cA`: "\x01", `\0`: "\x00", `a\nb`: "a\nb", `\x7`: "\x07"} {
		if got, ok := ansiC(in); !ok || got != want {
			t.Errorf("ansiC(%q) = %q %v, want %q", in, got, ok, want)
		}
	}
	if _, ok := ansiC(`\q`); ok {
		t.Error("ansiC took an escape bash does not know")
	}
}
