package commands

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestFlagsAfterName runs every flag of every command written after NAME through Args and the
// parser: the flag is set, with its value, and NAME is the one argument left.
func TestFlagsAfterName(t *testing.T) {
	app := New("test")
	for _, cmd := range allCommands(app.Commands, nil) {
		path := cmd.path
		for _, f := range cmd.Flags {
			name := f.Names()[0]
			spelled := "--" + name
			if len(name) == 1 {
				spelled = "-" + name
			}
			args := append([]string{"agt"}, path...)
			args = append(args, "NAME", spelled)
			if takesValueIn(cmd.Flags, spelled) {
				args = append(args, flagSample(f))
			}
			t.Run(strings.Join(args[1:], " "), func(t *testing.T) {
				var set bool
				var got []string
				parseWith(t, args, cmd.Command, func(c *cli.Context) {
					set, got = c.IsSet(name), c.Args().Slice()
				})
				if !set || !slices.Equal(got, []string{"NAME"}) {
					t.Errorf("%q: flag set %v, args %q; want set, [NAME] (reordered %q)", args, set, got, Args(New("test"), args))
				}
			})
		}
	}
}

// TestArgsLeaveTheAgentsOwn checks that what is not agt's stays where it was: after --, the
// words of spawn's command, and send's message.
func TestArgsLeaveTheAgentsOwn(t *testing.T) {
	app := New("test")
	for _, tc := range []struct{ in, want string }{
		{"agt spawn x --wait -- sh -c 'x' --wait", "agt spawn --wait x -- sh -c 'x' --wait"},
		{"agt spawn x tail -f log", "agt spawn x tail -f log"},
		{"agt spawn -d x vim -n", "agt spawn -d x vim -n"},
		{"agt spawn x --tty vim --wait", "agt spawn --tty x vim --wait"},
		{"agt spawn -- true", "agt spawn -- true"},
		{"agt send x --wait hi", "agt send --wait x hi"},
		{"agt send x -5 degrees", "agt send x -5 degrees"},
		{"agt send x -- --wait", "agt send x -- --wait"},
		{"agt deny asker --message use-make req-1", "agt deny --message use-make asker req-1"},
		{"agt --run-dir /r logs demo -f", "agt --run-dir /r logs -f demo"},
		{"agt workspaces prune --force", "agt workspaces prune --force"},
		{"agt logs demo --bogus", "agt logs --bogus demo"},
	} {
		got := strings.Join(Args(app, strings.Fields(tc.in)), " ")
		if got != strings.Join(strings.Fields(tc.want), " ") {
			t.Errorf("Args(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

type pathCommand struct {
	*cli.Command
	path []string
}

// allCommands lists cmds and their subcommands, with the words that name each, but the
// hidden ones (supervise) and those whose NAME is not an agent (completion, version).
func allCommands(cmds []*cli.Command, prefix []string) []pathCommand {
	var out []pathCommand
	for _, c := range cmds {
		if c.Hidden || c.Name == "completion" || c.Name == "version" || c.Name == "top" {
			continue
		}
		p := append(slices.Clone(prefix), c.Name)
		if len(c.Subcommands) > 0 {
			out = append(out, allCommands(c.Subcommands, p)...)
			continue
		}
		out = append(out, pathCommand{c, p})
	}
	return out
}

// flagSample is a value a flag accepts.
func flagSample(f cli.Flag) string {
	switch f.(type) {
	case *cli.IntFlag, *cli.Float64Flag:
		return "1"
	case *cli.GenericFlag, *cli.DurationFlag:
		return "5s"
	}
	return "x"
}

// parseWith runs args through Args and a fresh app whose command target (found by its name) does
// nothing but call seen.
func parseWith(t *testing.T, args []string, target *cli.Command, seen func(*cli.Context)) {
	t.Helper()
	app := New("test")
	var walk func([]*cli.Command)
	walk = func(cmds []*cli.Command) {
		for _, c := range cmds {
			c.Before, c.After = nil, nil
			if c.Name == target.Name {
				c.Action = func(c *cli.Context) error { seen(c); return nil }
			}
			walk(c.Subcommands)
		}
	}
	walk(app.Commands)
	app.Writer, app.ErrWriter = &strings.Builder{}, &strings.Builder{}
	if err := app.RunContext(context.Background(), Args(app, args)); err != nil {
		t.Fatalf("%q: %v", args, err)
	}
}

// FuzzArgs: the normaliser never panics, never adds, drops or changes a word, never moves a
// word after --, and a second pass changes nothing.
func FuzzArgs(f *testing.F) {
	for _, s := range []string{"spawn x --wait -- sh -c x", "send x --wait hi", "logs demo -f", "--run-dir /r ps -q a", "workspaces prune --force", "deny a -m x b"} {
		f.Add(s)
	}
	app := New("test")
	f.Fuzz(func(t *testing.T, line string) {
		args := append([]string{"agt"}, strings.Fields(line)...)
		got := Args(app, args)
		if !slices.Equal(sorted(got), sorted(args)) {
			t.Fatalf("Args(%q) = %q: words changed", args, got)
		}
		if i := slices.Index(args, "--"); i >= 0 {
			j := slices.Index(got, "--")
			if !slices.Equal(args[i:], got[j:]) {
				t.Fatalf("Args(%q) = %q: moved what follows --", args, got)
			}
		}
		if again := Args(app, got); !slices.Equal(again, got) {
			t.Fatalf("Args is not stable: %q, then %q", got, again)
		}
	})
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
