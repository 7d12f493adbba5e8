package hosts

import (
	"os/exec"
	"strings"
	"testing"
)

// hostile are words a model may write into a name, a message or a command: each must reach
// the remote program as it is.
var hostile = []string{
	"", "plain", "two words", "it's", `"quoted"`, "$HOME", "${IFS}x", "`id`", "$(id)", "a;b", "a|b", "a&b",
	"a\nb", "tab\there", "*", "?", "[a]", "~", "~/x", "=cmd", "-rf", "--", "#comment", "a\\b", "'", "''",
	"!", "!!", "{a,b}", "\x01ctl", "ünïcödé", "\\'", "%s", "a=b", "back\\slash\\", " lead", "trail ",
}

// TestQuoteShells runs every quoted word through the POSIX shells installed here and checks
// each comes back as it went.
func TestQuoteShells(t *testing.T) {
	for _, shell := range []string{"sh", "bash", "dash", "zsh", "ksh"} {
		path, err := exec.LookPath(shell)
		if err != nil {
			continue
		}
		var script strings.Builder
		script.WriteString("printf '%s\\000'")
		for _, w := range hostile {
			script.WriteString(" " + Quote(w))
		}
		out, err := exec.Command(path, "-c", script.String()).Output()
		if err != nil {
			t.Fatalf("%s: %v", shell, err)
		}
		got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
		if len(got) != len(hostile) {
			t.Fatalf("%s: %d words back, want %d: %q", shell, len(got), len(hostile), got)
		}
		for i, w := range hostile {
			if got[i] != w {
				t.Errorf("%s: %q came back as %q (quoted %s)", shell, w, got[i], Quote(w))
			}
		}
	}
}

func FuzzQuote(f *testing.F) {
	for _, w := range hostile {
		f.Add(w)
	}
	f.Fuzz(func(t *testing.T, w string) {
		if strings.ContainsRune(w, 0) {
			return // no argv holds a NUL
		}
		out, err := exec.Command("sh", "-c", "printf '%s' "+Quote(w)).Output()
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != w {
			t.Errorf("%q came back as %q (quoted %s)", w, out, Quote(w))
		}
	})
}

func TestQuotePathHome(t *testing.T) {
	out, err := exec.Command("sh", "-c", "HOME=/h; printf '%s' "+QuotePath("~/my dir/agt")).Output()
	if err != nil || string(out) != "/h/my dir/agt" {
		t.Errorf("got %q, %v", out, err)
	}
	if got := Command("/usr/bin/agt", []string{"ps", "it's"}); got != `/usr/bin/agt ps 'it'\''s'` {
		t.Errorf("Command = %s", got)
	}
}

func TestSplit(t *testing.T) {
	for _, tt := range []struct{ in, host, name string }{
		{"fix", "", "fix"}, {"box2:fix", "box2", "fix"}, {"dev@box:fix", "dev@box", "fix"},
		{"ssh://u@h:22:fix", "ssh://u@h:22", "fix"}, {":fix", "", "fix"}, {"box:", "box", ""},
	} {
		if h, n := Split(tt.in); h != tt.host || n != tt.name {
			t.Errorf("Split(%q) = %q, %q; want %q, %q", tt.in, h, n, tt.host, tt.name)
		}
	}
}

func TestUnameToGo(t *testing.T) {
	for in, want := range map[string]string{"Linux x86_64": "linux/amd64", "Linux aarch64\n": "linux/arm64",
		"Darwin arm64": "darwin/arm64", "FreeBSD amd64": "freebsd/amd64", "": "unknown/unknown"} {
		if os, arch := unameToGo(in); os+"/"+arch != want {
			t.Errorf("unameToGo(%q) = %s/%s, want %s", in, os, arch, want)
		}
	}
}

func TestParseProbe(t *testing.T) {
	info, err := parseProbe("/home/u/.local/bin/agt\n{\"version\":\"v1.2.0\",\"protocol\":1,\"os\":\"linux\",\"arch\":\"arm64\"}\n", "")
	if err != nil || info.Agt != "/home/u/.local/bin/agt" || info.Version != "v1.2.0" || info.Protocol != 1 || info.Arch != "arm64" {
		t.Errorf("found: %+v, %v", info, err)
	}
	info, err = parseProbe(`{"version":"devel"}`, "~/bin/agt")
	if err != nil || info.Agt != "~/bin/agt" || info.Protocol != 0 {
		t.Errorf("configured: %+v, %v", info, err)
	}
	for _, bad := range []string{"", "/bin/agt\n", "/bin/agt\nnot json", `{"version":""}`, "\n{\"version\":\"x\"}"} {
		if _, err := parseProbe(bad, ""); err == nil {
			t.Errorf("parseProbe(%q): no error", bad)
		}
	}
}

// FuzzParseProbe: whatever a host answers, what agt keeps of it is on one line.
func FuzzParseProbe(f *testing.F) {
	f.Add("/usr/bin/agt\n{\"version\":\"v1\",\"protocol\":1}", "")
	f.Add("{\"version\":\"\\u001b]52;c;x\\u0007\",\"os\":\"a\\nb\"}", "/x")
	f.Fuzz(func(t *testing.T, out, configured string) {
		info, err := parseProbe(out, configured)
		if err != nil {
			if strings.ContainsAny(err.Error(), "\r\n") {
				t.Fatalf("error %q is more than a line", err)
			}
			return
		}
		for _, s := range []string{info.Agt, info.Version, info.Revision, info.OS, info.Arch} {
			if strings.ContainsAny(s, "\r\n\t") {
				t.Fatalf("%q kept from %q", s, out)
			}
		}
	})
}
