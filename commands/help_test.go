package commands

import (
	"io/fs"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/urfave/cli/v2"
)

// Every command a user can see has its long help, every help file belongs to a command, and
// the prose fits a terminal.
func TestHelpTexts(t *testing.T) {
	used := map[string]bool{}
	var walk func(prefix string, cmds []*cli.Command)
	walk = func(prefix string, cmds []*cli.Command) {
		for _, c := range cmds {
			path := strings.TrimSpace(prefix + " " + c.Name)
			if c.Hidden {
				continue
			}
			if c.Description == "" {
				t.Errorf("agt %s has no Description: write help/%s.txt and set Description: helpText(%q)",
					path, strings.ReplaceAll(path, " ", "-"), path)
			}
			used["help/"+strings.ReplaceAll(path, " ", "-")+".txt"] = true
			walk(path, c.Subcommands)
		}
	}
	walk("", New("test").Commands)
	files, err := fs.Glob(helpFiles, "help/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !used[f] {
			t.Errorf("%s belongs to no command", f)
		}
		b, _ := helpFiles.ReadFile(f)
		for i, line := range strings.Split(string(b), "\n") {
			// Prose at most 94 columns; indented examples and tables may run to 105.
			limit := 94
			if strings.HasPrefix(line, " ") {
				limit = 105
			}
			if n := utf8.RuneCountInString(line); n > limit {
				t.Errorf("%s:%d: %d columns, more than %d", f, i+1, n, limit)
			}
			if strings.Contains(line, "`") {
				t.Errorf("%s:%d: a backquote: help is plain text, not Markdown", f, i+1)
			}
		}
	}
}
