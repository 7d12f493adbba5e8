package config

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The tested releases live in one table; .ci/run installs them and docs/compat.md lists them.
// This test fails when one of the three is changed without the others.
func TestTestedAgree(t *testing.T) {
	ci, err := os.ReadFile(filepath.Join("..", ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)\nclis=\(([^)]*)\)`).FindSubmatch(ci)
	if m == nil {
		t.Fatal(".ci/run: no clis=(…) list of pinned releases")
	}
	pins := map[string]string{}
	for _, f := range strings.Fields(string(m[1])) {
		f = strings.Trim(f, `"`)
		at := strings.LastIndex(f, "@")
		if at <= 0 {
			t.Fatalf(".ci/run: %q is not PACKAGE@VERSION", f)
		}
		pins[f[:at]] = f[at+1:]
	}
	doc, err := os.ReadFile(filepath.Join("..", "docs", "compat.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Tested releases\n")
	if !ok {
		t.Fatal("docs/compat.md: no '## Tested releases' section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	rows := map[string]string{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 5 || strings.Contains(line, "---") || strings.TrimSpace(cells[1]) == "program" {
			continue
		}
		rows[strings.Trim(strings.TrimSpace(cells[2]), "`")] = strings.TrimSpace(cells[3])
	}
	for _, c := range Tested {
		if pins[c.Package] != c.Version {
			t.Errorf(".ci/run pins %s@%s; config.Tested says %s", c.Package, pins[c.Package], c.Version)
		}
		if rows[c.Package] != c.Version {
			t.Errorf("docs/compat.md lists %s %q; config.Tested says %s", c.Package, rows[c.Package], c.Version)
		}
		if _, ok := TestedRelease(c.Program); !ok {
			t.Errorf("no tested release of %s", c.Program)
		}
	}
	if len(pins) != len(Tested) || len(rows) != len(Tested) {
		t.Errorf(".ci/run pins %d releases, docs/compat.md lists %d; config.Tested has %d", len(pins), len(rows), len(Tested))
	}
	if !strings.Contains(string(ci), `"$(node_major)" -lt `+strconv.Itoa(TestedNode)) {
		t.Errorf(".ci/run does not install Node %d where the system's is older", TestedNode)
	}
}

// An npm install is known by its package.json, a versioned install by its path; anything else is
// unknown, and nothing is run to find out.
func TestInstalledVersion(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, content string, mode os.FileMode) string {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bin := filepath.Join(dir, "bin")
	os.MkdirAll(bin, 0o755)
	link := func(target, name string) {
		if err := os.Symlink(target, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	write("nm/@openai/codex/package.json", `{"name":"@openai/codex","version":"0.171.0"}`, 0o644)
	link(write("nm/@openai/codex/bin/codex.js", "#!/bin/sh\n", 0o755), "codex")
	// A package.json of another package on the way (a dependency's) is not the program's.
	write("nm/@google/gemini-cli/package.json", `{"name":"@google/gemini-cli","version":"0.61.0"}`, 0o644)
	write("nm/@google/gemini-cli/bundle/package.json", `{"name":"bundle-helper","version":"9.9.9"}`, 0o644)
	link(write("nm/@google/gemini-cli/bundle/gemini.js", "#!/bin/sh\n", 0o755), "gemini")
	link(write("share/claude/versions/2.1.400", "#!/bin/sh\n", 0o755), "claude")
	write("bin/opencode", "#!/bin/sh\necho 1.0.0\n", 0o755)
	t.Setenv("PATH", bin)
	for program, want := range map[string]string{"codex": "0.171.0", "gemini": "0.61.0", "claude": "2.1.400", "opencode": "", "missing": ""} {
		if got := InstalledVersion(program); got != want {
			t.Errorf("InstalledVersion(%s) = %q, want %q", program, got, want)
		}
	}
}
