// Package commands is agt's command line: one file per verb, each a constructor returning a
// fresh *cli.Command. Actions check arguments, call spawn and state, and hand results to the
// output code. Nothing here exits: errors go back to main, usage errors carry exit status 2.
package commands

import (
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"
)

// New returns the agt application. version is the one set at link time, "" for none.
func New(version string) *cli.App {
	info := readBuildInfo(version)
	app := &cli.App{
		Name:    "agt",
		Usage:   "run AI coding agents the Unix way",
		Version: info.String(),
		UsageText: "agt [--run-dir DIR] COMMAND [flags] [NAME...]\n\n" +
			"A NAME is an agent here, or HOST:NAME one on a host that ssh reaches; --host HOST,...\n" +
			"runs a command on hosts (docs/hosts.md).\n\n" +
			"EXAMPLES:\n" +
			"   agt spawn demo -- sh -c 'echo hello; sleep 30'\n" +
			"   agt ps\n" +
			"   agt tail -f demo\n" +
			"   agt stop demo\n" +
			"   agt ps --host all            # this machine and every host of [hosts], with a HOST column",
		Flags: []cli.Flag{runDirFlag()},
		Commands: []*cli.Command{
			spawnCommand(), psCommand(), stopCommand(), tailCommand(), waitCommand(),
			restartCommand(), reapCommand(), agentsCommand(), rmCommand(), superviseCommand(),
			sendCommand(), attachCommand(), approveCommand(), denyCommand(), interruptCommand(), permissionsCommand(), doctorCommand(),
			logsCommand(), inspectCommand(), workspacesCommand(), completionCommand(), versionCommand(info),
			diffCommand(), mergeCommand(), topCommand(), serveCommand(),
		},
		DisableSliceFlagSeparator: true,
		ErrWriter:                 safeFile{os.Stderr}, // diagnostics quote agents: escaped (R35)
		// Only main exits.
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError:   usageError,
		CommandNotFound: func(c *cli.Context, name string) {
			// Replaced by the root action below; kept so urfave/cli never prints usage to stdout.
		},
		Action: func(c *cli.Context) error {
			if c.Args().Len() > 0 {
				name := c.Args().First()
				if m := didYouMean(name, commandNames(c.App.Commands)); m != "" {
					return cli.Exit(fmt.Sprintf("unknown command %q\nhint: did you mean 'agt %s'? 'agt --help' lists commands", name, m), 2)
				}
				return cli.Exit(fmt.Sprintf("unknown command %q\nhint: run 'agt --help' to list commands", name), 2)
			}
			return cli.ShowAppHelp(c)
		},
	}
	var onUsage func([]*cli.Command)
	onUsage = func(cmds []*cli.Command) {
		for _, cmd := range cmds {
			cmd.OnUsageError = usageError
			onUsage(cmd.Subcommands)
		}
	}
	addHosts(app)
	onUsage(app.Commands)
	return app
}

func usageError(c *cli.Context, err error, _ bool) error {
	msg := err.Error()
	// The flag package says "-bogus" for --bogus.
	if flag, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		if len(flag) > 1 {
			flag = "-" + flag
		}
		msg = "unknown flag -" + flag
		if m := didYouMean(flag, flagSpellings(c)); m != "" {
			msg += "\nhint: did you mean " + m + "?"
		}
	}
	// Errors of agt's own flags (agt --bogus) come with the app's name as the command's.
	if name := commandPath(c); name != "" {
		return cli.Exit(fmt.Sprintf("%s: %s\nhint: run 'agt %s --help' for usage", name, msg, name), 2)
	}
	return cli.Exit(msg+"\nhint: run 'agt --help' for usage", 2)
}

// commandPath names the command c runs, as typed after agt: "spawn", "workspaces prune"; ""
// for agt itself.
func commandPath(c *cli.Context) string {
	var names []string
	for _, l := range c.Lineage() {
		if l.Command != nil && l.Command.Name != "" && l.Command.Name != c.App.Name &&
			(len(names) == 0 || names[0] != l.Command.Name) {
			names = append([]string{l.Command.Name}, names...)
		}
	}
	return strings.Join(names, " ")
}

// usagef returns a usage error (exit status 2) for the current command.
func usagef(c *cli.Context, format string, args ...any) error {
	return usageError(c, fmt.Errorf(format, args...), true)
}

// names returns the NAME arguments of a command that takes only names, rejecting flags written
// after them (urfave/cli stops parsing flags at the first argument).
func names(c *cli.Context) ([]string, error) {
	args := c.Args().Slice()
	if err := flagsAfterName(c, "", args); err != nil {
		return nil, err
	}
	return args, nil
}

// flagsAfterName returns a usage error showing the right order when args (what follows name,
// or all the arguments when name is "") hold a flag. For spawn (name set), only the words
// before the command count: from its first word on, they are the command's own (agt spawn x
// tail -f log).
func flagsAfterName(c *cli.Context, name string, args []string) error {
	var flags, rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || (name != "" && (!strings.HasPrefix(a, "-") || a == "-")) {
			rest = append(rest, args[i:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			rest = append(rest, a)
			continue
		}
		flags = append(flags, a)
		if takesValue(c.Command, a) && !strings.Contains(a, "=") && i+1 < len(args) {
			i++
			flags = append(flags, args[i])
		}
	}
	if name != "" {
		rest = append([]string{name}, rest...)
	}
	return misplacedFlags(c, flags, rest)
}

// misplacedFlags is the usage error of flags written after NAME, showing the right order:
// the flags, then the words they followed (NAME first); nil when there are none.
func misplacedFlags(c *cli.Context, flags, words []string) error {
	if len(flags) == 0 {
		return nil
	}
	return usagef(c, "flag %s after NAME: flags come before NAME, as in 'agt %s %s'",
		flags[0], c.Command.Name, strings.Join(append(flags, words...), " "))
}

// takesValue reports whether the command's flag spelled arg (-x, --xy, --xy=v) takes a value.
func takesValue(cmd *cli.Command, arg string) bool {
	dv, ok := lookupFlag(cmd, arg).(cli.DocGenerationFlag)
	return ok && dv.TakesValue()
}

// lookupFlag returns the command's flag spelled arg (-x, --xy, --xy=v), or nil.
func lookupFlag(cmd *cli.Command, arg string) cli.Flag {
	return lookupFlagIn(cmd.Flags, arg)
}
