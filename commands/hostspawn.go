package commands

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/urfave/cli/v2"

	"agt/hosts"
	"agt/stream"
	"agt/termsafe"
)

// placedSpawnArgs splits spawn's arguments on a host or an engine: HOST:NAME (or NAME), and the
// COMMAND after it; usage is the line a missing NAME is told.
func placedSpawnArgs(c *cli.Context, usage string) (host, name string, argv []string, err error) {
	args := c.Args().Slice()
	if len(args) == 0 {
		return "", "", nil, usagef(c, "missing NAME: %s", usage)
	}
	host, name = hosts.Split(args[0])
	argv = args[1:]
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	} else if err := flagsAfterName(c, args[0], argv); err != nil {
		return "", "", nil, err
	}
	if err := validNewName(name); err != nil {
		return "", "", nil, cli.Exit(err, 2)
	}
	return host, name, argv, nil
}

// spawnOnHosts is spawn on a host. The agent always starts detached there, so that nothing
// that happens to the link can stop, orphan or lose it; --wait and --follow then follow it
// (tailOnHosts' way, resuming after a broken link) and --wait ends with its exit code, which
// the host's agt wait gives. With several hosts (--host a,b,c) and a bare NAME, the agent goes
// to the first one with room under its own max_agents. The prompt goes on stdin, never in argv.
func spawnOnHosts(c *cli.Context, plan *hostPlan) error {
	args := c.Args().Slice()
	host, name, argv, err := placedSpawnArgs(c, "agt spawn [flags] NAME -- COMMAND [ARG...]")
	if err != nil {
		return err
	}
	wait, follow := c.Bool("wait"), c.Bool("follow")
	if isGroupSpawn(c) {
		if err := groupDetached(c, name); err != nil {
			return err
		}
	}
	if c.Bool("rm") && !wait {
		return rmNeedsWait(c, args[0])
	}
	out, err := outputFor(c)
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
	tty := c.Bool("tty")
	attachNow := tty && !follow && !wait && !c.Bool("detach") && isTerminal(os.Stdin) && isTerminal(c.App.Writer)
	remote := append([]string{"spawn"}, flags...)
	remote = append(remote, "--json")
	if tty {
		remote = append(remote, "--detach") // attached below, over a terminal of ssh's
	}
	if prompt != nil {
		remote = append(remote, "--prompt-file=-")
	}
	remote = append(remote, name)
	if len(argv) > 0 {
		remote = append(append(remote, "--"), argv...)
	}
	candidates := plan.chosen
	if host != "" {
		candidates = []hosts.Place{plan.groups[0].place}
	}
	place, spawned, err := placeAgent(c, candidates, name, remote, prompt)
	if err != nil {
		return err
	}
	if attachNow {
		return attachOnPlace(c, place, name)
	}
	if !follow && !wait {
		for _, line := range spawned { // a group's agents, one each
			if out.mode == modeTable {
				line = relabel(line, qualified(place.Name(), nameOf(line)))
			}
			if err := printSpawned(out, line); err != nil {
				return err
			}
		}
		return nil
	}
	if out.mode == modeTable {
		out.view = newTranscript(out, []string{qualified(place.Name(), name)})
	}
	fl := &hostFollower{out: out, errw: c.App.ErrWriter}
	if !wait {
		return fl.follow(c.Context, place, []string{name}) // Ctrl-C leaves it running
	}
	return waitOnPlace(c, fl, place, name)
}

// placeAgent runs the detached spawn on the first of candidates that takes the agent: past a
// host that is full (exit 75) or that cannot be reached to the next. It returns where the
// agent went and its spawned events (a group's are several), tagged with the host.
//
// A first signal lets the spawn finish (spawn --wait then stops the agent): cut short on the
// way, it would leave an agent that nobody follows. A second one abandons it. On a swarm the
// first one does: a job may wait for a node for ever, and the swarm's spawn removes a job
// cut short.
func placeAgent(c *cli.Context, candidates []hosts.Place, name string, args []string, prompt *string) (hosts.Place, [][]byte, error) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(c.Context))
	defer cancel()
	var first <-chan struct{}
	if len(candidates) == 1 && isSwarm(candidates[0]) {
		first = c.Context.Done()
	}
	go func() {
		select {
		case <-first:
			cancel()
		case <-Again(c.Context):
			cancel()
		case <-ctx.Done():
		}
	}()
	var full []string
	for i, pl := range candidates {
		var spawned [][]byte
		lw := &lineWriter{fn: func(line []byte) error {
			if t := tagHost(line, pl.Name()); t != nil && gjson.GetBytes(t, "type").String() == "spawned" {
				spawned = append(spawned, t)
			}
			return nil
		}}
		call := &hosts.Call{Args: args, Stdout: lw, Stderr: &hostDiagnostics{w: c.App.ErrWriter, host: pl.Name()}}
		if prompt != nil {
			call.Stdin = strings.NewReader(*prompt)
		}
		err := pl.Run(ctx, call)
		lw.Close()
		last := i == len(candidates)-1
		var exit *hosts.ExitError
		switch {
		case err == nil && spawned != nil:
			return pl, spawned, nil
		case err == nil:
			return nil, nil, fmt.Errorf("spawn on %s said nothing of the agent it started", pl.Name())
		case ctx.Err() != nil:
			return nil, nil, c.Context.Err()
		case errors.As(err, &exit) && exit.Code == exitFull:
			full = append(full, pl.Name())
			if last {
				return nil, nil, cli.Exit(fmt.Sprintf("no room for %s on %s: each runs max_agents agents", name, strings.Join(full, ", ")), exitFull)
			}
		case errors.As(err, &exit):
			return nil, nil, cli.Exit("", exit.Code) // the host's agt said why
		case hosts.IsUnreachable(err) && !last:
			printHostError(c.App.ErrWriter, pl.Name(), err)
		default:
			printHostError(c.App.ErrWriter, pl.Name(), err)
			return nil, nil, cli.Exit("", 1)
		}
		PrintError(c.App.ErrWriter, "trying "+candidates[i+1].Name())
	}
	return nil, nil, cli.Exit("", 1)
}

// waitOnPlace is spawn --wait on a host: it follows the agent until it ends and exits with its
// exit code. A signal (Ctrl-C, SIGTERM, SIGHUP) sends the stop to the host, with the agent's
// grace (a second one kills it at once), and the stop's events still print. With --rm the
// host removes the record at the end, however it ended.
func waitOnPlace(c *cli.Context, fl *hostFollower, place hosts.Place, name string) error {
	fl.out.w = keepWaiting(c, fl.out.w, qualified(place.Name(), name))
	follow, stopFollowing, stopped := stopOnSignal(c, func() error { return stopOnPlace(c, place, name) })
	defer stopFollowing()
	var stopErr error
	// A conversation waits for its next message once a turn ends: its first turn is what
	// spawn --wait waits for (or its stop to ask you), its result the exit code, as here.
	var turn *firstTurn
	if conversationOnPlace(c, place, name) {
		turn = &firstTurn{}
		fl.until = turn.ends
	}
	err := fl.follow(follow, place, []string{name})
	if turn != nil && c.Bool("rm") && c.Context.Err() == nil && err == nil {
		stopErr = stopOnPlace(c, place, name) // it waits for input: --rm ends it
	}
	stopFollowing()
	if serr := stopped(); serr != nil {
		stopErr = serr
	}
	switch {
	case err != nil || c.Context.Err() != nil:
	case turn != nil && turn.done:
		err = turn.exit(qualified(place.Name(), name))
	default:
		err = exitOnPlace(c, place, name) // it ended (before its turn did, for a conversation)
	}
	if stopErr != nil {
		PrintError(c.App.ErrWriter, termsafe.Text(fmt.Sprintf("stop %s: %v\nhint: it may still run there: 'agt stop %s' once the host answers",
			qualified(place.Name(), name), stopErr, qualified(place.Name(), name))))
	}
	if c.Bool("rm") && stopErr == nil {
		rmOnPlace(c, place, name)
	}
	if c.Context.Err() != nil {
		return c.Context.Err() // main exits 128+N
	}
	if err != nil && !isExit(err) {
		printHostError(c.App.ErrWriter, place.Name(), err)
		return cli.Exit("", 1)
	}
	return err
}

// firstTurn watches a conversation's events for the end of its first turn: its result, or its
// stop to ask a person (a permission, a plan), as send --wait does.
type firstTurn struct {
	done, ok bool
	asks     string
}

func (t *firstTurn) ends(line []byte) bool {
	if t.done {
		return true
	}
	switch gjson.GetBytes(line, "type").Str {
	case "state":
		why := gjson.GetBytes(line, "reason").Str
		if gjson.GetBytes(line, "to").Str == stream.Waiting && (why == stream.ReasonPermission || why == stream.ReasonPlan) {
			t.asks, t.done = why, true
		}
	case "result":
		t.ok, t.done = gjson.GetBytes(line, "ok").Bool(), true
	}
	return t.done
}

// exit is how a turn that came to its end ends the command: nil for an ok result, exit 1 for
// a failed one, exitNeedsYou with a hint when it stopped to ask q's user.
func (t *firstTurn) exit(q string) error {
	switch {
	case t.asks != "":
		return cli.Exit(fmt.Sprintf("%s waits for you (%s)\nhint: 'agt permissions %s' shows what it asks; 'agt approve %s' or 'agt deny %s' answers",
			q, t.asks, q, q, q), exitNeedsYou)
	case !t.ok:
		return errTurnFailed
	}
	return nil
}

// conversationOnPlace asks the host whether its agent takes turns.
func conversationOnPlace(c *cli.Context, place hosts.Place, name string) bool {
	var out bytes.Buffer
	err := place.Run(context.WithoutCancel(c.Context), &hosts.Call{Args: []string{"inspect", "--json", name}, Stdout: &out, Stderr: new(bytes.Buffer)})
	return err == nil && gjson.GetBytes(out.Bytes(), "conversation").Bool()
}

// stopOnPlace stops the agent on its host after the signal that cancelled c, with the agent's
// own grace, trying again while the host cannot be reached; a second signal kills it at once
// (or, while the host cannot be reached, gives up).
func stopOnPlace(c *cli.Context, place hosts.Place, name string) error {
	if isTerminal(c.App.ErrWriter) {
		fmt.Fprintf(c.App.ErrWriter, "agt: stopping %s (Ctrl-C again kills it now)\n", qualified(place.Name(), name))
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(c.Context))
	defer cancel()
	stop := func(args ...string) error {
		var errs bytes.Buffer
		err := place.Run(ctx, &hosts.Call{Args: append(append([]string{"stop"}, args...), name), Stdout: new(bytes.Buffer), Stderr: &errs})
		var exit *hosts.ExitError
		if errors.As(err, &exit) {
			return errors.New(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(errs.String()), "agt: ")))
		}
		return err
	}
	done := make(chan error, 1)
	go func() {
		delay := reconnectMin
		for {
			err := stop()
			if err == nil || !hosts.IsUnreachable(err) || ctx.Err() != nil {
				done <- err
				return
			}
			if hosts.Pause(ctx, delay) != nil {
				done <- err
				return
			}
			delay = min(2*delay, reconnectMax)
		}
	}()
	select {
	case err := <-done:
		return err
	case <-Again(c.Context):
		go stop("--timeout=0") // cuts the first stop's grace short
		select {
		case err := <-done:
			return err
		case <-Again(c.Context):
			cancel()
			return <-done
		}
	}
}

// exitOnPlace ends spawn --wait with the agent's exit code, as the host's agt wait gives it.
func exitOnPlace(c *cli.Context, place hosts.Place, name string) error {
	err := againPlace{Place: place, errw: c.App.ErrWriter}.Run(c.Context, &hosts.Call{Args: []string{"wait", "--json", name}, Stdout: new(bytes.Buffer),
		Stderr: &hostDiagnostics{w: c.App.ErrWriter, host: place.Name()}})
	return passExit(c, place, err)
}

// rmOnPlace is spawn --rm on a host: the record goes, and the workspace with it unless that
// holds unsaved work (then it stays, listed by agt workspaces there).
func rmOnPlace(c *cli.Context, place hosts.Place, name string) {
	ctx := context.WithoutCancel(c.Context)
	var errs bytes.Buffer
	err := place.Run(ctx, &hosts.Call{Args: []string{"rm", "--workspace", "--json", name}, Stdout: new(bytes.Buffer), Stderr: &errs})
	if err == nil {
		return
	}
	if !hosts.IsUnreachable(err) {
		// Refused: its workspace holds unsaved work. The record goes alone.
		if err = place.Run(ctx, &hosts.Call{Args: []string{"rm", "--json", name}, Stdout: new(bytes.Buffer), Stderr: &errs}); err == nil {
			PrintError(c.App.ErrWriter, fmt.Sprintf("kept the workspace of %s: it holds unsaved work\nhint: 'agt workspaces --host %s' lists it; 'agt workspaces prune --force --host %s' removes it",
				qualified(place.Name(), name), place.Name(), place.Name()))
			return
		}
	}
	printHostError(c.App.ErrWriter, place.Name(), fmt.Errorf("rm %s: %v %s\nhint: its record stays; 'agt rm --workspace %s' tries again",
		name, err, strings.TrimSpace(errs.String()), qualified(place.Name(), name)))
}

// isExit reports whether err is an exit status to pass on.
func isExit(err error) bool {
	var coder cli.ExitCoder
	return errors.As(err, &coder)
}
