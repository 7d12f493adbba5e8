package commands

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"

	"github.com/tidwall/gjson"
	"github.com/urfave/cli/v2"

	"agt/config"
	"agt/hosts"
	"agt/spawn"
	"agt/stream"
	"agt/termsafe"
)

func hostsCommand() *cli.Command {
	return &cli.Command{
		Name:  "hosts",
		Usage: "list the hosts agt runs agents on, whether each answers, its agt and its agents",
		UsageText: "agt hosts [--json | --format T] [HOST...]\n" +
			"agt hosts install HOST...\n\n" +
			"Lists the hosts agt runs agents on: whether each answers, its agt and its agents.\n\n" +
			"EXAMPLES:\n" +
			"   agt hosts\n" +
			"   agt hosts install box2\n" +
			"   agt hosts --format '{{.host}} {{.version}}' box2 dev@box3.example.com",
		Description: helpText("hosts"),
		Flags:       []cli.Flag{jsonFlag(), formatFlag("hosts", hostRow{}, "{{.host}} {{.reachable}}")},
		Action:      runHosts,
		Subcommands: []*cli.Command{{
			Name:  "install",
			Usage: "copy this agt to hosts",
			UsageText: "agt hosts install HOST...\n\n" +
				"Copies this agt to each HOST, of the same OS and architecture.\n\n" +
				"EXAMPLES:\n" +
				"   agt hosts install box2",
			Description: helpText("hosts install"),
			Flags:       []cli.Flag{jsonFlag()},
			Action:      runHostsInstall,
		}},
	}
}

// hostRow is one host as agt hosts shows it: the NDJSON fields, and what templates name.
type hostRow struct {
	Host      string `json:"host"`
	SSH       string `json:"ssh,omitempty"`
	RunDir    string `json:"run_dir,omitempty"`
	Reachable bool   `json:"reachable"`
	Error     string `json:"error,omitempty"`
	hosts.Info
	Agents int `json:"agents"`
	Alive  int `json:"alive"`
}

func runHosts(c *cli.Context) error {
	if err := flagsAfterName(c, "", c.Args().Slice()); err != nil {
		return err
	}
	out, err := outputFor(c)
	if err != nil {
		return err
	}
	p, err := newPlaces(c)
	if err != nil {
		return err
	}
	names := c.Args().Slice()
	if len(names) == 0 {
		names = append([]string{hosts.Local}, p.cfg.HostNames()...)
		names = append(names, p.configuredEngines("ps")...)
	}
	rows := make([]hostRow, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		pl, err := p.get(n)
		if err != nil {
			return usagef(c, "%v", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rows[i] = hostStatus(c.Context, pl)
		}()
	}
	wg.Wait()
	failed := false
	table := make([][]string, len(rows))
	for i, r := range rows {
		failed = failed || !r.Reachable
		if out.mode != modeTable {
			if err := out.item(r, nil); err != nil {
				return err
			}
			continue
		}
		reach := "yes"
		if !r.Reachable {
			reach = "no: " + oneLine(r.Error, 80)
		}
		version, agents := "-", "-"
		if r.Version != "" {
			version = oneLine(r.Version, 40)
		}
		if r.Reachable {
			agents = fmt.Sprintf("%d (%d alive)", r.Agents, r.Alive)
		}
		table[i] = []string{r.Host, dash(r.SSH), reach, version, agents, dash(oneLine(r.Agt, 60))}
	}
	if out.mode == modeTable {
		if err := out.table([]string{"HOST", "SSH", "REACHABLE", "VERSION", "AGENTS", "AGT"}, table); err != nil {
			return err
		}
	}
	if failed {
		return cli.Exit("", 1)
	}
	return nil
}

// hostStatus asks a place what agt hosts shows of it.
func hostStatus(ctx context.Context, pl hosts.Place) hostRow {
	r := hostRow{Host: pl.Name()}
	if s, ok := pl.(*hosts.SSH); ok {
		r.SSH, r.RunDir = s.Dest, s.RunDir
		info, err := s.Probe(ctx)
		if err != nil {
			r.Error = hostReason(err)
			if info != nil {
				r.Info = *info
			}
			return r
		}
		r.Info = *info
	} else if _, here := pl.(*hosts.This); here {
		b := readBuildInfo("")
		exe, _ := os.Executable()
		r.Info = hosts.Info{Agt: exe, Version: b.String(), Revision: b.Revision, Protocol: hosts.Protocol, OS: runtime.GOOS, Arch: runtime.GOARCH}
	}
	var out, errs bytes.Buffer
	if err := pl.Run(ctx, &hosts.Call{Args: []string{"ps", "--json"}, Stdout: &out, Stderr: &errs}); err != nil {
		r.Error = hostReason(err) + " " + oneLine(errs.String(), 200)
		return r
	}
	r.Reachable = true
	for _, line := range bytes.Split(out.Bytes(), []byte{'\n'}) {
		if st := gjson.GetBytes(line, "state"); st.Exists() {
			r.Agents++
			if s := st.String(); !stream.IsFinal(s) && s != stream.Lost && s != spawn.Unknown {
				r.Alive++
			}
		}
	}
	return r
}

// hostReason is what a failure at a host says, its first line (not the hint), printable.
func hostReason(err error) string {
	if u, ok := err.(*hosts.Unreachable); ok {
		return termsafe.Text(u.Reason)
	}
	first, _, _ := strings.Cut(err.Error(), "\n")
	return termsafe.Text(oneLine(first, 300))
}

// installed is what agt hosts install says of each host: where agt went, and what it says.
type installed struct {
	Host string `json:"host"`
	SSH  string `json:"ssh"`
	hosts.Info
}

func runHostsInstall(c *cli.Context) error {
	names := c.Args().Slice()
	if len(names) == 0 {
		return usagef(c, "missing HOST: agt hosts install HOST...")
	}
	if err := flagsAfterName(c, "", names); err != nil {
		return err
	}
	p, err := newPlaces(c)
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this agt: %w", err)
	}
	out := &output{w: c.App.Writer, mode: modeJSON}
	if !c.Bool("json") && isTerminal(c.App.Writer) {
		out.mode = modeTable
	}
	failed := false
	for _, n := range names {
		pl, err := p.get(n)
		if err != nil {
			return usagef(c, "%v", err)
		}
		s, ok := pl.(*hosts.SSH)
		if !ok && config.IsEngine(n) {
			return usagef(c, "%s is an engine: its jobs run the agt of their image (docs/engines.md)", n)
		} else if !ok {
			return usagef(c, "%s is this machine: agt is here already", n)
		}
		info, err := s.Install(c.Context, exe)
		if err != nil {
			printHostError(c.App.ErrWriter, n, err)
			failed = true
			continue
		}
		r := installed{Host: n, SSH: s.Dest, Info: *info}
		human := fmt.Sprintf("installed agt %s on %s at %s", info.Version, n, info.Agt)
		if err := out.line(r, termsafe.Text(human)); err != nil {
			return err
		}
	}
	if failed {
		return cli.Exit("", 1)
	}
	return nil
}
