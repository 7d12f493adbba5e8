package config

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// TestedCLI is a release of an agent's CLI that agt's real-agent tests (testdata/real, against
// a loopback mock model) passed with.
type TestedCLI struct {
	Program string // the program a kind runs
	Package string // the npm package that ships it
	Version string
}

// Tested is the one table of the CLI releases agt was tested with: .ci/run installs exactly these
// for the real-agent tests, docs/compat.md lists them, and a test checks that the three agree.
// bench/compat.sh tries the newest releases; a release that passes is pinned here.
var Tested = []TestedCLI{
	{"claude", "@anthropic-ai/claude-code", "2.1.332"},
	{"codex", "@openai/codex", "0.171.0"},
	{"opencode", "opencode-ai", "1.18.33"},
	{"gemini", "@google/gemini-cli", "0.61.0"},
	{"claude-agent-acp", "@agentclientprotocol/claude-agent-acp", "0.101.0"},
}

// TestedNode is the Node.js major version the CLIs were tested on (the newest ones ask for 22).
const TestedNode = 22

// TestedRelease returns the tested release of program, if agt was tested with one.
func TestedRelease(program string) (TestedCLI, bool) {
	for _, t := range Tested {
		if t.Program == program {
			return t, true
		}
	}
	return TestedCLI{}, false
}

// versionPattern finds a release number in a path or a package.json.
var versionPattern = regexp.MustCompile(`\b\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?\b`)

// InstalledVersion returns the version of program as installed on PATH, "" when it is not found
// or its version cannot be told without running it. It runs nothing: an npm install is known by
// the package.json above the program's real path (of the package Tested names, or any package),
// a versioned install (Claude's native installer links versions/2.1.332) by its path.
func InstalledVersion(program string) string {
	path, err := exec.LookPath(program)
	if err != nil {
		return ""
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return ""
	}
	want := ""
	if t, ok := TestedRelease(program); ok {
		want = t.Package
	}
	for dir := filepath.Dir(real); ; dir = filepath.Dir(dir) {
		if name, version := packageJSON(filepath.Join(dir, "package.json")); version != "" && (want == "" || name == want) {
			return version
		}
		if filepath.Base(dir) == "node_modules" || dir == filepath.Dir(dir) {
			break
		}
	}
	if v := versionPattern.FindString(real); v != "" {
		return v
	}
	return ""
}

// packageJSON reads the name and version of an npm package.json, "" when it is not one.
func packageJSON(path string) (name, version string) {
	f, err := os.Open(path)
	if err != nil {
		return "", ""
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return "", ""
	}
	var p struct{ Name, Version string }
	if json.Unmarshal(b, &p) != nil {
		return "", ""
	}
	return p.Name, strings.TrimSpace(p.Version)
}
