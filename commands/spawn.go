package commands

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"agt/spawn"
	"agt/state"
	"agt/stream"
)

func spawnCommand() *cli.Command {
	return &cli.Command{
		Name:  "spawn",
		Usage: "start a command as a supervised agent",
		UsageText: "agt spawn [flags] NAME -- COMMAND [ARG...]\n\n" +
			"Starts COMMAND in its own session under a detached supervisor and returns once it runs,\n" +
			"printing the spawned event.\n\n" +
			"EXAMPLES:\n" +
			"   agt spawn demo -- sh -c 'echo hello; sleep 30'\n" +
			"   agt spawn --env DEBUG=1 --dir ~/src/app build -- make -j4\n" +
			"   agt spawn --wait check -- go vet ./...      # exits with the command's code",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Usage: "working directory (default: the current one)", EnvVars: []string{"AGT_DIR"}},
			&cli.StringSliceFlag{Name: "env", Usage: "add `KEY=VALUE` to the agent's environment (repeatable)"},
			&cli.StringFlag{Name: "workspace", Usage: "where the agent works: auto, jj, git or none", Value: "auto", EnvVars: []string{"AGT_WORKSPACE_MODE"}},
			&cli.StringFlag{Name: "base", Usage: "the revision the workspace starts from (jj: @ or @-, git: HEAD)", EnvVars: []string{"AGT_BASE"}},
			timeoutFlag("grace between SIGTERM and SIGKILL when stopping"),
			&cli.DurationFlag{Name: "idle-after", Usage: "silence after which a running agent is waiting", Value: stream.DefaultIdleAfter, EnvVars: []string{"AGT_IDLE_AFTER"}},
			&cli.DurationFlag{Name: "stale-after", Usage: "time waiting after which an agent is stale", Value: stream.DefaultStaleAfter, EnvVars: []string{"AGT_STALE_AFTER"}},
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "print the agent's events until it ends (Ctrl-C detaches)"},
			&cli.BoolFlag{Name: "wait", Usage: "print the agent's events and exit with its exit code (Ctrl-C stops it)"},
			jsonFlag(),
			formatFlag(),
		},
		Action: runSpawn,
	}
}

func runSpawn(c *cli.Context) error {
	args := c.Args().Slice()
	if len(args) == 0 {
		return usagef(c, "missing NAME: agt spawn [flags] NAME -- COMMAND [ARG...]")
	}
	name, argv := args[0], args[1:]
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	} else if err := flagsAfterName(c, name, argv); err != nil {
		return err
	}
	if err := state.ValidateName(name); err != nil {
		return cli.Exit(err, 2)
	}
	if len(argv) == 0 {
		return usagef(c, "missing COMMAND: agt spawn [flags] %s -- COMMAND [ARG...]", name)
	}
	opts, err := spawnOptions(c, name, argv)
	if err != nil {
		return err
	}
	out, err := outputFor(c)
	if err != nil {
		return err
	}
	d, err := openRunDir(c)
	if err != nil {
		return err
	}
	opts.Root = d.Root
	if opts.Prepare, err = workspacePrepare(c, name, opts.Dir); err != nil {
		return err
	}
	spawned, err := spawn.Start(c.Context, opts)
	if err != nil {
		if errors.Is(err, state.ErrNameTaken) {
			return withHint(err, fmt.Sprintf("pick another name, or 'agt stop %s' first", name))
		}
		return err
	}
	follow, wait := c.Bool("follow"), c.Bool("wait")
	if !follow && !wait {
		return printSpawned(out, spawned)
	}
	a, err := d.Agent(name)
	if err != nil {
		return err
	}
	err = followEvents(c.Context, out, []*state.Agent{a}, tailFilter{})
	if c.Context.Err() != nil {
		if wait {
			// Ctrl-C on a CI step: stop the agent, then report the interruption.
			spawn.Stop(context.Background(), a, opts.StopTimeout)
		}
		return cli.Exit("", 130)
	}
	if err != nil || !wait {
		return err
	}
	return exitWithAgent(c, []*state.Agent{a})
}

func spawnOptions(c *cli.Context, name string, argv []string) (spawn.Options, error) {
	dir := c.String("dir")
	if dir == "" {
		var err error
		if dir, err = os.Getwd(); err != nil {
			return spawn.Options{}, fmt.Errorf("find the current directory: %w", err)
		}
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return spawn.Options{}, err
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return spawn.Options{}, fmt.Errorf("working directory %s is not a directory\nhint: give --dir an existing directory", dir)
	}
	env := c.StringSlice("env")
	for _, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return spawn.Options{}, usagef(c, "--env %q: want KEY=VALUE", kv)
		}
	}
	for _, f := range []string{"timeout", "idle-after", "stale-after"} {
		if c.Duration(f) < 0 {
			return spawn.Options{}, usagef(c, "--%s %s: must not be negative", f, c.Duration(f))
		}
	}
	return spawn.Options{
		Name: name, Kind: "exec", Argv: argv, Dir: dir, Env: env,
		StopTimeout: c.Duration("timeout"),
		IdleAfter:   c.Duration("idle-after"),
		StaleAfter:  c.Duration("stale-after"),
	}, nil
}

// printSpawned prints the spawned event: as is in NDJSON, through the template, or as one
// human line.
func printSpawned(out *output, line []byte) error {
	var ev stream.Event
	if err := ev.UnmarshalJSON(line); err != nil {
		return fmt.Errorf("read spawned event: %w", err)
	}
	if out.mode == modeTable {
		_, err := fmt.Fprintf(out.w, "started %s (pid %d): %s\n", ev.Agent, ev.PID, strings.Join(ev.Argv, " "))
		return err
	}
	return out.item(ev, line)
}

// exitWithAgent ends the command with the agents' exit code: the first non-zero one; 1 with a
// note for an agent whose end nobody saw.
func exitWithAgent(c *cli.Context, agents []*state.Agent) error {
	code := 0
	for _, a := range agents {
		st := spawn.Observe(a)
		n, ok := spawn.ExitCode(st)
		if !ok {
			fmt.Fprintf(c.App.ErrWriter, "agt: %s is %s (%s): its exit code is unknown\n", a.Name, st.State, st.Reason)
			n = 1
		}
		if code == 0 {
			code = n
		}
	}
	if code != 0 {
		return cli.Exit("", code)
	}
	return nil
}

// since parses --since: a duration back from now, or an RFC 3339 time.
func parseSince(c *cli.Context, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return time.Now().Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	return time.Time{}, usagef(c, "--since %q: want a duration (10m) or an RFC 3339 time", s)
}
