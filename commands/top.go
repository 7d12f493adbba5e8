package commands

import (
	"context"
	"errors"
	"os"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/urfave/cli/v2"

	"agt/config"
	"agt/state"
)

// homeDir is the user's home, which paths shown to people start with ~ for.
var homeDir, _ = os.UserHomeDir()

func topCommand() *cli.Command {
	return &cli.Command{
		Name:  "top",
		Usage: "a live full-screen view of every agent; answer them with a key",
		UsageText: "agt top\n\n" +
			"Shows every agent live, those that need you first, and answers them with a key.\n\n" +
			"EXAMPLES:\n" +
			"   agt top\n" +
			"   agt --run-dir /tmp/ci-agents top",
		Description: helpText("top"),
		Action:      runTop,
	}
}

func runTop(c *cli.Context) error { return topOn(c, nil) }

// topOnHosts is agt top --host: the rows of every place of --host, with a HOST column.
func topOnHosts(c *cli.Context, plan *hostPlan) error { return topOn(c, plan) }

// topOn runs top over the places of plan (nil: this machine's run directory alone).
func topOn(c *cli.Context, plan *hostPlan) error {
	if c.Args().Len() > 0 {
		return usagef(c, "agt top takes no NAME: it shows every agent")
	}
	if !isTerminal(os.Stdin) || !isTerminal(c.App.Writer) {
		return errors.New("agt top needs a terminal\nhint: 'agt ps' lists agents, 'agt tail -f' follows them, in scripts")
	}
	root, err := state.ResolveRoot(c.String("run-dir"))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(c.Context)
	defer cancel()
	f, err := newFleet(ctx, c, plan)
	if err != nil {
		return err
	}
	m := newTopModel(ctx, f, root, os.Getenv("NO_COLOR") == "")
	m.bell = bellWanted()
	p := tea.NewProgram(m, tea.WithContext(ctx), tea.WithOutput(c.App.Writer))
	m.send = p.Send
	go feedTop(ctx, f, p)
	_, err = p.Run()
	if c.Context.Err() != nil {
		return c.Context.Err() // a signal: main exits 128+N, the terminal restored
	}
	if errors.Is(err, tea.ErrInterrupted) {
		return nil
	}
	return err
}

// bellWanted reports whether [notify] lets top and tail -f ring the terminal's bell (bell =
// false says no); yes when agt.toml cannot be read.
func bellWanted() bool {
	dir, _ := os.Getwd()
	cfg, err := config.Load(dir)
	return err != nil || cfg.Notify.Bell
}

// topBatch is how long top gathers changes before it reads them: a busy fleet costs one read
// of each changed agent per batch, however often its files change.
const topBatch = 50 * time.Millisecond

// feedTop sends the program the rows that change, until ctx ends.
func feedTop(ctx context.Context, f *fleet, p *tea.Program) {
	f.run(ctx, func(host string, rows []topRow, logged map[string]bool, all bool) {
		if len(rows) > 0 || len(logged) > 0 || all {
			p.Send(rowsMsg{host: host, rows: rows, logged: logged, all: all})
		}
	})
}

// batches hands fn what changed (as changed says it), a batch at a time, until ctx ends: once
// the watcher says something changed, it waits topBatch, then reads.
func (f *localFleet) batches(ctx context.Context, fn func(rows []topRow, logged map[string]bool, all bool)) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.w.Ready():
		}
		t := time.NewTimer(topBatch)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		fn(f.changed())
	}
}
