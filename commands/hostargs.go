package commands

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"agt/config"
	"agt/hosts"
	"agt/state"
)

// hostFlag is -H/--host, taken before the command (agt --host box2 spawn …) and after it
// (agt ps --host all).
func hostFlag() cli.Flag {
	return &cli.StringFlag{
		Name: "host", Aliases: []string{"H"}, EnvVars: []string{"AGT_HOST"},
		Usage: "run on these `HOST`s (comma-separated): names from [hosts] in agt.toml, ssh destinations, local (this machine), or all (this machine and every configured host)",
	}
}

// endOnEOFFlag is agt's hidden --end-on-eof: set by the agt that runs a long command over a
// link, it ends the command when its stdin closes, which is when the link does.
func endOnEOFFlag() cli.Flag {
	return &cli.BoolFlag{Name: "end-on-eof", Hidden: true, Usage: "end when stdin closes (set by agt over ssh)"}
}

// hostsArg is the --host in force: the command's own, else agt's, else $AGT_HOST; "" for none.
// A --host on the command line beats $AGT_HOST at every level (urfave/cli counts the variable
// as the flag set): agt on a host runs agt --host local there, whatever the shell exports.
func hostsArg(c *cli.Context) string {
	env := os.Getenv("AGT_HOST")
	for _, l := range c.Lineage() {
		if l.Command != nil && lookupFlag(l.Command, "host") != nil && l.IsSet("host") && l.String("host") != env {
			return l.String("host")
		}
	}
	if on := c.String("on"); on != "" && lookupFlag(c.Command, "on") != nil {
		return on // spawn --on ENGINE: the engine is the place
	}
	return env
}

// places resolves the host names of one command: [hosts] entries, ssh destinations, local.
type places struct {
	cfg    *config.Config
	runDir string // agt's --run-dir, passed on to the local child
	ctl    string // the private directory of the ssh masters; made when first needed
	verb   string // the command's path: --host all adds engines for those they answer
	byName map[string]hosts.Place
}

func newPlaces(c *cli.Context) (*places, error) {
	dir, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	cfg, err := config.Load(dir)
	if err != nil {
		return nil, err
	}
	return &places{cfg: cfg, runDir: c.String("run-dir"), verb: commandPath(c), byName: map[string]hosts.Place{}}, nil
}

// get returns the place called name.
func (p *places) get(name string) (hosts.Place, error) {
	if pl, ok := p.byName[name]; ok {
		return pl, nil
	}
	var pl hosts.Place
	switch h, ok := p.cfg.Hosts[name]; {
	case name == hosts.Local:
		pl = &hosts.This{RunDir: p.runDir}
	case name == config.HostAll:
		return nil, fmt.Errorf("all is every host: it names no one host")
	case config.IsEngine(name):
		pl = p.engine(name)
	case ok:
		ctl, err := p.control()
		if err != nil {
			return nil, err
		}
		pl = &hosts.SSH{Host: name, Dest: h.SSH, RunDir: h.RunDir, Agt: h.Agt, Control: ctl}
	default:
		if err := config.ValidDestination(name); err != nil {
			return nil, fmt.Errorf("host %q: %v", name, err)
		}
		ctl, err := p.control()
		if err != nil {
			return nil, err
		}
		pl = &hosts.SSH{Host: name, Dest: name, Control: ctl}
	}
	p.byName[name] = pl
	return pl, nil
}

func (p *places) control() (string, error) {
	if p.ctl != "" {
		return p.ctl, nil
	}
	root, err := state.ResolveRoot(p.runDir)
	if err != nil {
		return "", err
	}
	if _, err := state.Open(root); err != nil {
		return "", err
	}
	p.ctl, err = hosts.ControlDir(root)
	return p.ctl, err
}

// list resolves a --host value: names separated by commas, all for this machine and every
// configured host.
func (p *places) list(arg string) ([]hosts.Place, error) {
	var names []string
	for _, n := range strings.Split(arg, ",") {
		switch n = strings.TrimSpace(n); n {
		case "":
			return nil, fmt.Errorf("--host %q: an empty host name", arg)
		case config.HostAll:
			names = append(names, hosts.Local)
			names = append(names, p.cfg.HostNames()...)
			names = append(names, p.configuredEngines(p.verb)...)
		default:
			names = append(names, n)
		}
	}
	var out []hosts.Place
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		pl, err := p.get(n)
		if err != nil {
			return nil, err
		}
		out = append(out, pl)
	}
	return out, nil
}

// hostPlan is where one command runs when hosts are in play: each place with the agent names
// it is given there, in the order the user gave them.
type hostPlan struct {
	groups []placeNames
	// named: the command named agents (else each place runs it for all of its own).
	named bool
	// places resolves more names (spawn places among --host's).
	places *places
	// chosen are the places of --host (or the one of a HOST:NAME), in order.
	chosen []hosts.Place
}

type placeNames struct {
	place hosts.Place
	names []string
}

// planHosts splits a command's NAME arguments (the first n of args; n < 0: all of them) by
// host. A NAME is HOST:NAME or bare; a bare one is on the one host of --host, or local when
// there is none. It returns nil when no host is in play (no --host, or --host local, and no
// HOST:NAME): the command runs here as it always has.
//
// With spread (spawn), a bare NAME with several hosts is not an error: the command picks one.
func planHosts(c *cli.Context, args []string, n int, spread bool) (*hostPlan, error) {
	if n < 0 || n > len(args) {
		n = len(args)
	}
	arg := hostsArg(c)
	qualified := false
	for _, a := range args[:n] {
		if strings.Contains(a, ":") {
			qualified = true
		}
	}
	if !qualified && (arg == "" || arg == hosts.Local) {
		return nil, nil
	}
	p, err := newPlaces(c)
	if err != nil {
		return nil, err
	}
	plan := &hostPlan{places: p, named: n > 0}
	if arg == "" {
		arg = hosts.Local
	}
	if plan.chosen, err = p.list(arg); err != nil {
		return nil, usagef(c, "%v", err)
	}
	at := map[string]int{}
	for _, a := range args[:n] {
		host, name := hosts.Split(a)
		if err := state.ValidateName(name); err != nil && !isPattern(name) {
			return nil, cli.Exit(err, 2)
		}
		var pl hosts.Place
		switch {
		case host != "":
			if pl, err = p.get(host); err != nil {
				return nil, usagef(c, "%s: %v", a, err)
			}
		case len(plan.chosen) == 1:
			pl = plan.chosen[0]
		case spread:
			continue
		default:
			return nil, usagef(c, "%s: --host names %d hosts; say which one runs it, as in %s:%s", a, len(plan.chosen), plan.chosen[1].Name(), name)
		}
		i, ok := at[pl.Name()]
		if !ok {
			i = len(plan.groups)
			at[pl.Name()] = i
			plan.groups = append(plan.groups, placeNames{place: pl})
		}
		plan.groups[i].names = append(plan.groups[i].names, name)
	}
	if n == 0 {
		for _, pl := range plan.chosen {
			plan.groups = append(plan.groups, placeNames{place: pl})
		}
	}
	return plan, nil
}

// forwardFlags writes back, for the agt on a host, the command's flags that were set (on its
// command line, or by their AGT_* variables), except those in skip: what stays here.
func forwardFlags(c *cli.Context, skip ...string) ([]string, error) {
	var out []string
	for _, f := range c.Command.Flags {
		name := f.Names()[0]
		if slices.Contains(skip, name) || name == "host" || name == "help" || !c.IsSet(name) {
			continue
		}
		flag := "--" + name + "="
		switch f := f.(type) {
		case *cli.BoolFlag:
			out = append(out, fmt.Sprintf("%s%t", flag, c.Bool(name)))
		case *cli.StringFlag, *formatFlagType:
			out = append(out, flag+c.String(name))
		case *cli.IntFlag:
			out = append(out, fmt.Sprintf("%s%d", flag, c.Int(name)))
		case *cli.Float64Flag:
			out = append(out, fmt.Sprintf("%s%v", flag, c.Float64(name)))
		case *cli.DurationFlag:
			out = append(out, flag+c.Duration(name).String())
		case *cli.GenericFlag:
			out = append(out, flag+fmt.Sprint(c.Generic(name)))
		case *cli.StringSliceFlag:
			for _, v := range c.StringSlice(name) {
				out = append(out, flag+v)
			}
		default: // a flag of its own kind (spawn's --sandbox): its value as it prints
			v := c.Generic(name)
			if v == nil {
				return nil, fmt.Errorf("--%s (%T) cannot be passed to a host", name, f)
			}
			out = append(out, flag+fmt.Sprint(v))
		}
	}
	return out, nil
}
