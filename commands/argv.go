package commands

import (
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// Args returns the command line as agt's parser takes it: a command's flags written after its
// NAME (agt logs demo -f, agt send demo --wait hi, as docker users type them) are moved before
// it, since urfave/cli stops at the first argument. Nothing after -- moves: those words are the
// agent's own argv, or a message that starts with a dash. For commands whose words after NAME
// are free text (spawn's command, send's message), only the command's own flags move, and for
// spawn only those between NAME and the first word of its command: agt spawn x tail -f log runs
// tail -f. Elsewhere every dash word moves, so that a misspelt flag gets the parser's error and
// its suggestion.
func Args(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	out := slices.Clone(args)
	// The app's own flags, then the command (and a subcommand).
	i := 1
	for i < len(out) && strings.HasPrefix(out[i], "-") && out[i] != "--" {
		if takesValueIn(app.Flags, out[i]) && !strings.Contains(out[i], "=") {
			i++
		}
		i++
	}
	if i >= len(out) {
		return out
	}
	cmd := findCommand(app.Commands, out[i])
	for cmd != nil && len(cmd.Subcommands) > 0 && i+1 < len(out) {
		sub := findCommand(cmd.Subcommands, out[i+1])
		if sub == nil {
			break
		}
		cmd, i = sub, i+1
	}
	if cmd == nil || cmd.SkipFlagParsing {
		return out
	}
	return append(out[:i+1], moveFlags(cmd, out[i+1:])...)
}

// freeText are the commands whose words after NAME are free text that may start with a dash:
// send's message. (spawn's command starts at its second word, and ends the flags there.)
var freeText = map[string]bool{"send": true}

// moveFlags reorders one command's arguments: its flags (and their values) first, then the
// words, then -- and what follows it, as it was.
func moveFlags(cmd *cli.Command, args []string) []string {
	var flags, words []string
	end := slices.Index(args, "--")
	if end < 0 {
		end = len(args)
	}
	free := freeText[cmd.Name]
	for i := 0; i < end; i++ {
		a := args[i]
		isFlag := strings.HasPrefix(a, "-") && a != "-"
		switch {
		case !isFlag:
			words = append(words, a)
			if cmd.Name == "spawn" && len(words) > 1 {
				// The command's first word: the rest is its own.
				return append(append(flags, words...), args[i+1:]...)
			}
			continue
		case len(words) > 0 && free && lookupFlag(cmd, a) == nil:
			words = append(words, a) // a message or a command's flag: not agt's
			continue
		}
		flags = append(flags, a)
		if takesValueIn(cmd.Flags, a) && !strings.Contains(a, "=") && i+1 < end {
			i++
			flags = append(flags, args[i])
		}
	}
	return append(append(flags, words...), args[end:]...)
}

// findCommand is the command named name (or one of its aliases) among cmds, nil for none.
func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// lookupFlagIn returns the flag among flags spelled arg (-x, --xy, --xy=v), or nil.
func lookupFlagIn(flags []cli.Flag, arg string) cli.Flag {
	name := strings.TrimLeft(arg, "-")
	if i := strings.IndexByte(name, '='); i >= 0 {
		name = name[:i]
	}
	for _, f := range flags {
		if slices.Contains(f.Names(), name) {
			return f
		}
	}
	return nil
}

// takesValueIn reports whether the flag spelled arg (-x, --xy, --xy=v) among flags takes a value.
func takesValueIn(flags []cli.Flag, arg string) bool {
	dv, ok := lookupFlagIn(flags, arg).(cli.DocGenerationFlag)
	return ok && dv.TakesValue()
}
