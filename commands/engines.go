package commands

import (
	"errors"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"agt/config"
	"agt/engine"
	"agt/hosts"
)

// Engines are places too (docs/engines.md): swarm:NAME, --host swarm, spawn --on swarm. The
// swarm answers agt's commands through the docker CLI; Kubernetes gets Jobs that agt writes
// (spawn --on k8s --dry-run) and kubectl runs.

// engineFlags are spawn's flags for an engine.
func engineFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "on", Usage: "run the agent as a job of `ENGINE`: swarm (a Docker Swarm service, through the docker CLI) or k8s (with --dry-run: the Kubernetes Job to give kubectl); docs/engines.md"},
		&cli.StringFlag{Name: "image", Usage: "with --on: the job's `IMAGE` (the agent's CLI and a static agt; default: image in [engines.ENGINE] of agt.toml)"},
		&cli.BoolFlag{Name: "dry-run", Usage: "with --on: print what would be submitted (a Job for kubectl create -f -, or the docker commands) and start nothing"},
	}
}

// engine returns the place of an engine, as agt.toml configures it.
func (p *places) engine(name string) hosts.Place {
	if name == config.EngineK8s {
		return engine.K8s{}
	}
	return &engine.Swarm{Engine: p.cfg.Engine(name), Grace: p.cfg.StopTimeout}
}

// isSwarm reports whether place is the swarm, whose spawn may wait for a node for ever.
func isSwarm(place hosts.Place) bool {
	_, ok := place.(*engine.Swarm)
	return ok
}

// engineVerbs are the commands that --host all takes to the engines agt.toml configures.
var engineVerbs = []string{"ps", "tail", "wait", "stop", "rm"}

// configuredEngines are the engines --host all adds for command path: those agt.toml
// configures, for the commands they answer.
func (p *places) configuredEngines(path string) []string {
	var out []string
	for _, n := range config.EngineNames {
		if p.cfg.Engine(n).Set && n != config.EngineK8s && slices.Contains(engineVerbs, path) {
			out = append(out, n)
		}
	}
	return out
}

// checkEngineFlags refuses spawn's engine flags where no engine runs the agent.
func checkEngineFlags(c *cli.Context) error {
	for _, f := range []string{"image", "dry-run"} {
		if c.IsSet(f) {
			return usagef(c, "--%s goes with --on ENGINE: agt spawn --on swarm --%s …", f, f)
		}
	}
	return nil
}

// spawnOnPlaces is spawn on hosts and engines: --on, a job's dry run, then spawnOnHosts.
func spawnOnPlaces(c *cli.Context, plan *hostPlan) error {
	on := c.String("on")
	if on != "" && !config.IsEngine(on) {
		return usagef(c, "--on %q: want an engine, %s (hosts are --host's)", on, strings.Join(config.EngineNames, " or "))
	}
	if on != "" && hostGiven(c) {
		return usagef(c, "give --on or --host, not both")
	}
	if on != "" && c.Args().Len() > 0 {
		if host, name := hosts.Split(c.Args().First()); host != "" && host != on {
			return usagef(c, "%s: --on %s runs it there; name it %s or %s:%s", c.Args().First(), on, name, on, name)
		}
	}
	var place hosts.Place
	if len(plan.groups) == 1 {
		place = plan.groups[0].place
	} else if len(plan.chosen) == 1 {
		place = plan.chosen[0]
	}
	if place == nil || !config.IsEngine(place.Name()) {
		if err := checkEngineFlags(c); err != nil {
			return err
		}
		return spawnOnHosts(c, plan)
	}
	if !c.Bool("dry-run") {
		if place.Name() == config.EngineK8s {
			return usagef(c, "agt spawn --on k8s needs --dry-run: agt writes the Job, kubectl submits it\nhint: agt spawn --on k8s --dry-run NAME -- COMMAND | kubectl create -f -")
		}
		return spawnOnHosts(c, plan)
	}
	for _, f := range []string{"wait", "follow", "rm"} {
		if c.Bool(f) {
			return usagef(c, "--dry-run starts nothing to --%s for: the job itself runs agt spawn --wait --rm", f)
		}
	}
	return dryRun(c, plan.places, place.Name())
}

// dryRun prints what spawn --on ENGINE would submit: the Kubernetes Job (and its prompt's
// Secret), or the docker commands.
func dryRun(c *cli.Context, p *places, on string) error {
	_, name, argv, err := placedSpawnArgs(c, "agt spawn --on "+on+" --dry-run NAME -- COMMAND")
	if err != nil {
		return err
	}
	prompt, err := readPrompt(c)
	if err != nil {
		return err
	}
	flags, err := forwardFlags(c, "json", "format", "prompt", "prompt-file", "wait", "follow", "rm", "detach")
	if err != nil {
		return err
	}
	call := append([]string{"spawn"}, flags...)
	var stdin io.Reader
	if prompt != nil {
		call, stdin = append(call, "--prompt-file=-"), strings.NewReader(*prompt)
	}
	call = append(call, name)
	if len(argv) > 0 {
		call = append(append(call, "--"), argv...)
	}
	job, err := engine.SpawnJob(call, stdin, p.cfg.Engine(on), p.cfg.StopTimeout)
	var usage *engine.UsageError
	if errors.As(err, &usage) {
		return usagef(c, "%s", usage.Msg)
	} else if err != nil {
		return err
	}
	var out []byte
	if on == config.EngineK8s {
		if out, err = engine.Manifest(job); err != nil {
			return cli.Exit(err, 2)
		}
	} else {
		out = []byte(engine.SwarmCommands(job))
	}
	_, err = c.App.Writer.Write(out)
	return err
}

// hostGiven reports whether a --host is on the command line (at any level).
func hostGiven(c *cli.Context) bool {
	env := os.Getenv("AGT_HOST")
	for _, l := range c.Lineage() {
		if l.Command != nil && lookupFlag(l.Command, "host") != nil && l.IsSet("host") && l.String("host") != env {
			return true
		}
	}
	return false
}
