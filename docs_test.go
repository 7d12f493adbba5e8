package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/rogpeppe/go-internal/testscript"
)

// docsRunMark is the fence of a runnable example: a block opened with ```sh run is run by
// TestDocs as pasted, its file's runnable blocks in order.
const docsRunMark = "```sh run"

// docBlock is a runnable example: its text and the line its fence opens on.
type docBlock struct {
	line int
	text string
}

// docBlocks returns the runnable examples of a Markdown file, in order.
func docBlocks(path string) ([]docBlock, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var (
		blocks []docBlock
		cur    *docBlock
		n      int
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case cur == nil && strings.TrimSpace(line) == docsRunMark:
			cur = &docBlock{line: n}
		case cur != nil && strings.HasPrefix(strings.TrimSpace(line), "```"):
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: the runnable block never ends", path, cur.line)
	}
	return blocks, sc.Err()
}

// TestDocs runs the runnable examples of README.md and docs/*.md as a person pasting them would:
// each file's blocks in order, each in bash -e with pipefail, all of a file in one fresh home
// (its own run directory, no agt.toml), in a directory that holds a Makefile with a test
// target. Fake claude, codex, gemini and opencode (testdata/docs) stand in for the real CLIs. A
// block that fails fails the test with its file and line; a name used twice fails it too, as
// pasting would.
func TestDocs(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash")
	}
	files, _ := filepath.Glob(filepath.Join("docs", "*.md"))
	files = append([]string{"README.md"}, files...)
	dir := t.TempDir()
	for _, file := range files {
		blocks, err := docBlocks(file)
		if err != nil {
			t.Fatal(err)
		}
		if len(blocks) == 0 {
			continue
		}
		var script, archive strings.Builder
		fmt.Fprintf(&script, "# The runnable examples of %s, in order.\ncd app\n", file)
		for i, b := range blocks {
			name := fmt.Sprintf("blocks/%02d.sh", i+1)
			fmt.Fprintf(&script, "\n# %s:%d\nexec bash -e -o pipefail $WORK/%s\n", file, b.line, name)
			fmt.Fprintf(&archive, "-- %s --\n%s", name, b.text)
		}
		archive.WriteString("-- app/Makefile --\ntest:\n\t@echo the tests pass\n")
		name := strings.ReplaceAll(strings.TrimSuffix(file, ".md"), string(filepath.Separator), "_")
		if err := os.WriteFile(filepath.Join(dir, name+".txtar"), []byte(script.String()+archive.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fakes, err := filepath.Abs(filepath.Join("testdata", "docs"))
	if err != nil {
		t.Fatal(err)
	}
	fixtures, err := filepath.Abs(filepath.Join("stream", "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 dir,
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			// Defers run last first: the agents' cgroups go once markScript's have killed them.
			env.Defer(func() { endCgroups(filepath.Join(env.WorkDir, "st", "agt")) })
			markScript(env)
			home := filepath.Join(env.WorkDir, "home")
			// A user's environment, as short as agt's socket paths need: the run directory is
			// the default one, under XDG_STATE_HOME.
			env.Setenv("HOME", home)
			env.Setenv("XDG_STATE_HOME", filepath.Join(env.WorkDir, "st"))
			env.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
			env.Setenv("GORACE", "atexit_sleep_ms=0")
			env.Setenv("FIXTURES", fixtures)
			// The fake CLIs write what they play into a copy of their own.
			env.Setenv("DOCFAKES", filepath.Join(env.WorkDir, "fakes"))
			if err := os.CopyFS(filepath.Join(env.WorkDir, "fakes"), os.DirFS(fakes)); err != nil {
				return err
			}
			env.Setenv("PATH", filepath.Join(env.WorkDir, "fakes", "bin")+string(os.PathListSeparator)+env.Getenv("PATH"))
			// A person's git knows who they are.
			if err := os.MkdirAll(home, 0o700); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[user]\n\tname = Docs Reader\n\temail = reader@example.com\n"), 0o600)
		},
	})
}

// Every command the scripts have besides testscript's own is in docs/development.md.
func TestScriptCommandsDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("docs", "development.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, cmds := range []map[string]func(*testscript.TestScript, bool, []string){scriptCmds, realCmds} {
		for name := range cmds {
			if !strings.Contains(doc, "\n| `"+name+" ") && !strings.Contains(doc, "\n| `"+name+"`") {
				t.Errorf("script command %s is not in the tables of docs/development.md", name)
			}
		}
	}
}

// mdLink is a Markdown link's target: a path relative to its file, and an anchor.
var mdLink = regexp.MustCompile(`\]\(([^)#\s]*)(#[^)\s]*)?\)`)

// Every relative link of README.md and docs/*.md names a file that exists, and an anchor one
// of its headings.
func TestDocsLinks(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("docs", "*.md"))
	for _, file := range append([]string{"README.md"}, files...) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(b), -1) {
			target, anchor := m[1], m[2]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path := file
			if target != "" {
				path = filepath.Join(filepath.Dir(file), target)
			}
			doc, err := os.ReadFile(path)
			if err != nil {
				t.Errorf("%s: link to %s: %v", file, target, err)
				continue
			}
			if anchor != "" && !slices.Contains(mdAnchors(string(doc)), anchor[1:]) {
				t.Errorf("%s: link to %s%s: no such heading", file, target, anchor)
			}
		}
	}
}

// mdAnchors returns the anchors GitHub gives the headings of a Markdown text.
func mdAnchors(doc string) []string {
	var anchors []string
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		var a strings.Builder
		for _, r := range title {
			switch {
			case r == ' ' || r == '-':
				a.WriteRune('-')
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_':
				a.WriteRune(r)
			}
		}
		anchors = append(anchors, a.String())
	}
	return anchors
}
