//go:build !urfave_cli_no_docs

package commands

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/urfave/cli/v2"
)

var updateMan = flag.Bool("u", false, "rewrite docs/agt.1 from the command definitions")

// TestManPage keeps docs/agt.1 current: it is generated from the same definitions as --help,
// by the CLI library's man-page writer, which the agt binary leaves out (built with the tag
// urfave_cli_no_docs) and only tests link. After changing a command, rewrite it with
// go test ./commands -run ManPage -u.
func TestManPage(t *testing.T) {
	app := New("")
	app.Version = "" // the man page describes the commands, not a build
	app.HideVersion = true
	withDescriptions(app.Commands)
	got, err := app.ToManWithSection(1)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "docs", "agt.1")
	if *updateMan {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v; create it with: go test ./commands -run ManPage -u", err)
	}
	if string(want) != got {
		t.Errorf("%s is out of date: rewrite it with go test ./commands -run ManPage -u", path)
	}
}

// withDescriptions appends each command's Description to its UsageText: the library's man-page
// writer shows UsageText and leaves Description out, and the man page carries the whole help.
func withDescriptions(cmds []*cli.Command) {
	for _, c := range cmds {
		if c.Description != "" {
			c.UsageText += "\n\n" + c.Description
		}
		withDescriptions(c.Subcommands)
	}
}
