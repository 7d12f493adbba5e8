package commands

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"agt/config"
	"agt/spawn"
	"agt/state"
)

// maxGroup bounds spawn --count.
const maxGroup = 100

// isGroupSpawn reports whether spawn starts a group: --count, or a list of kinds.
func isGroupSpawn(c *cli.Context) bool {
	return c.IsSet("count") || strings.Contains(c.String("agent"), ",")
}

// groupDetached refuses what a group's detached agents cannot do: --wait, --follow, --rm, --tty.
func groupDetached(c *cli.Context, group string) error {
	if c.Bool("wait") || c.Bool("follow") || c.Bool("rm") || c.Bool("tty") {
		return usagef(c, "--count starts its agents detached, without --wait, --follow, --rm or --tty: follow them with agt tail -f '%s-*', wait for them with agt wait '%s-*'", group, group)
	}
	return nil
}

// spawnGroup is spawn --count N (or --agent a,b,c): one task as NAME-1…NAME-N, each agent in
// a workspace of its own, the kinds of the list taken in turn. Its agents carry the group
// NAME, which ps shows. The names are checked before any agent starts; an agent that cannot
// start takes those started before it away again, workspaces and records, so that a failed
// group leaves nothing behind.
func spawnGroup(c *cli.Context, group string, argv []string) error {
	kinds := strings.Split(c.String("agent"), ",")
	n := len(kinds)
	if c.IsSet("count") {
		n = c.Int("count")
	}
	switch {
	case n < 1 || n > maxGroup:
		return usagef(c, "--count %d: want 1 to %d agents", n, maxGroup)
	case groupDetached(c, group) != nil:
		return groupDetached(c, group)
	}
	for _, k := range kinds {
		if k == "" && len(kinds) > 1 {
			return usagef(c, "--agent %q: a kind is missing from the list", c.String("agent"))
		}
	}
	d, err := openRunDir(c)
	if err != nil {
		return err
	}
	names := make([]string, n)
	for i := range names {
		names[i] = group + "-" + strconv.Itoa(i+1)
		if err := validNewName(names[i]); err != nil {
			return cli.Exit(err, 2)
		}
		if _, err := d.Agent(names[i]); err == nil {
			return withHint(fmt.Errorf("agent %s exists already: no agent of group %s was started", names[i], group),
				fmt.Sprintf("pick another name, or remove the earlier ones: agt rm --workspace '%s-*'", group))
		}
	}
	out, err := outputFor(c)
	if err != nil {
		return err
	}
	prompt, err := readPrompt(c)
	if err != nil {
		return err
	}
	var started []*state.Agent
	fail := func(err error) error {
		undoGroup(c, started)
		if len(started) > 0 {
			err = fmt.Errorf("%w\n(the %d agent%s of group %s started before it were stopped and removed again)", err, len(started), plural(len(started)), group)
		}
		return err
	}
	for i, name := range names {
		opts, cfg, err := spawnOptionsFor(c, name, argv, kinds[i%len(kinds)], func() (*string, error) { return prompt, nil })
		if err != nil {
			return fail(err)
		}
		opts.Root, opts.Group = d.Root, group
		if opts.Prepare, err = workspacePrepare(c, cfg.Workspace, name, opts.Cwd, opts.Kind == config.Exec, programOf(opts.Argv, opts.Kind == config.Exec), nil); err != nil {
			return fail(err)
		}
		spawned, err := spawn.Start(c.Context, opts)
		if err != nil {
			return fail(fmt.Errorf("spawn %s: %w", name, err))
		}
		if a, err := d.Agent(name); err == nil {
			started = append(started, a)
		}
		if err := printSpawned(out, spawned); err != nil {
			return err
		}
	}
	return nil
}

// undoGroup stops the agents of a group that could not start whole, and removes them with
// their workspaces, which hold nothing yet worth keeping.
func undoGroup(c *cli.Context, agents []*state.Agent) {
	ctx := context.WithoutCancel(c.Context)
	for _, a := range agents {
		if _, err := rmAgent(ctx, a, rmOptions{workspace: true, force: true, grace: 0, registry: registry(c)}); err != nil {
			warn(c, "remove", a.Name, err)
		}
	}
}
