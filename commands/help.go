package commands

import (
	"embed"
	"strings"
)

// The long help of each command lives in help/NAME.txt (help/NAME-SUB.txt for a subcommand):
// what it does in full, its output and its exit status, as --help and the man page show it
// under DESCRIPTION. Prose reads and changes best as text; UsageText keeps the synopsis, a
// sentence and the examples beside the flags.
//
//go:embed help/*.txt
var helpFiles embed.FS

// helpText returns the long help of the command named by path ("spawn", "workspaces prune").
// A command without its file is a bug that every test catches: New panics.
func helpText(path string) string {
	b, err := helpFiles.ReadFile("help/" + strings.ReplaceAll(path, " ", "-") + ".txt")
	if err != nil {
		panic("commands: no help text for " + path + ": " + err.Error())
	}
	return strings.TrimRight(string(b), "\n")
}
