package commands

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"slices"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"agt/config"
	"agt/sandbox"
	"agt/state"
)

// sandboxFlags are spawn's --sandbox[=bwrap|none] and --sandbox-net on|none.
func sandboxFlags() []cli.Flag {
	return []cli.Flag{
		&bareFlag{&cli.GenericFlag{
			Name:    "sandbox",
			Usage:   "run the agent's processes in a sandbox where they change their workspace and nothing else (--sandbox or --sandbox=bwrap: bubblewrap; --sandbox=none: not, whatever agt.toml says); see docs/sandbox.md",
			Value:   &sandboxValue{},
			EnvVars: []string{"AGT_SANDBOX"},
		}},
		&cli.StringFlag{Name: "sandbox-net", Usage: "the sandbox's network: on (the host's) or none (loopback alone)", DefaultText: "on, or sandbox_net", EnvVars: []string{"AGT_SANDBOX_NET"}},
	}
}

// bareFlag is a flag given bare (--sandbox) or with its value after = (--sandbox=bwrap), never
// with the value as the next argument, which is NAME.
type bareFlag struct{ *cli.GenericFlag }

func (f *bareFlag) TakesValue() bool { return false }
func (f *bareFlag) String() string   { return cli.FlagStringer(f) }

// sandboxValue is the value of --sandbox as given (a bare --sandbox gives "true"), checked by
// tool: the flag package would call a bad one "an invalid boolean value".
type sandboxValue struct{ given string }

func (v *sandboxValue) IsBoolFlag() bool       { return true }
func (v *sandboxValue) String() string         { return v.given }
func (v *sandboxValue) Set(given string) error { v.given = given; return nil }

// tool is the sandbox --sandbox asks for: bwrap, or none (agt.toml's turned off).
func (v *sandboxValue) tool() (string, error) {
	switch v.given {
	case "true", "1", sandbox.Bwrap:
		return sandbox.Bwrap, nil
	case "false", "0", "none":
		return "none", nil
	}
	return "", fmt.Errorf("--sandbox=%s: want --sandbox, --sandbox=bwrap or --sandbox=none", v.given)
}

// sandboxSpec is the sandbox of a spawn of kind, as the flags and agt.toml say; nil for none.
// It resolves the declared paths in the agent's environment (env over agt's), and checks
// that bubblewrap can make a sandbox here, so that a spawn that cannot have one fails at once
// with the reason.
func sandboxSpec(c *cli.Context, cfg *config.Config, kind *config.Kind, env []string) (*state.Sandbox, error) {
	s := cfg.SandboxFor(kind)
	if c.IsSet("sandbox") {
		tool, err := c.Generic("sandbox").(*sandboxValue).tool()
		if err != nil {
			return nil, usagef(c, "%v", err)
		}
		s.Tool = tool
		if tool == "none" {
			s.Tool = ""
		}
	}
	if c.IsSet("sandbox-net") {
		net := c.String("sandbox-net")
		if !slices.Contains(config.SandboxNets, net) {
			return nil, usagef(c, "--sandbox-net %q: want %s", net, strings.Join(config.SandboxNets, " or "))
		}
		if s.Tool == "" {
			return nil, usagef(c, "--sandbox-net %s needs a sandbox: add --sandbox, or set sandbox = \"bwrap\" in agt.toml", net)
		}
		s.Net = net
	}
	if s.Tool == "" {
		return nil, nil
	}
	sb, err := sandbox.Resolve(s.Tool, s.Net, s.RW, s.RO, sandbox.Lookup(append(os.Environ(), env...)))
	if err != nil {
		return nil, fmt.Errorf("sandbox of %s: %w", kind.Name, err)
	}
	if err := sandbox.Probe(c.Context, sb.Net, nil); err != nil {
		if os.Getenv(sandbox.Marker) != "" {
			return nil, withHint(err, "bubblewrap cannot make a sandbox inside its own: spawn it with --sandbox=none, and it runs in this one")
		}
		return nil, err
	}
	return sb, nil
}

// nobody is the ordinary user doctor tries a sandbox as, when it runs as root.
const nobody = 65534

// sandboxChecks are doctor's rows on sandboxes: whether this user can have one, and, for root,
// whether an ordinary user can (unprivileged user namespaces). Each tries an empty sandbox.
func sandboxChecks() []doctorCheck {
	ctx := context.Background()
	who := fmt.Sprintf("uid %d", os.Getuid())
	if u, err := user.Current(); err == nil {
		who = u.Username
	}
	version := ""
	if p, err := sandbox.FindBwrap(); err == nil {
		if b, err := exec.Command(p, "--version").Output(); err == nil {
			version = strings.TrimSpace(string(b)) + ": "
		}
	}
	err := sandbox.Probe(ctx, sandbox.NetOn, nil)
	rows := []doctorCheck{{Check: "sandbox", OK: err == nil, optional: true,
		Detail: fmt.Sprintf("%sagt spawn --sandbox works for %s: its agents change their workspace and nothing else", version, who)}}
	if err != nil {
		rows[0].Detail = fmt.Sprintf("agt spawn --sandbox fails for %s: %s", who, strings.TrimPrefix(err.Error(), "sandbox: "))
	}
	if os.Geteuid() != 0 {
		return rows
	}
	err = sandbox.Probe(ctx, sandbox.NetOn, &syscall.Credential{Uid: nobody, Gid: nobody})
	row := doctorCheck{Check: "sandbox as a user", OK: err == nil, optional: true,
		Detail: fmt.Sprintf("an ordinary user (uid %d) can have a sandbox too: the kernel allows unprivileged user namespaces (%s)", nobody, sandbox.UserNSSettings())}
	if err != nil {
		row.Detail = fmt.Sprintf("an ordinary user (uid %d) cannot have a sandbox: %s", nobody, strings.TrimPrefix(err.Error(), "sandbox: "))
	}
	return append(rows, row)
}

// sandboxLine says what a sandbox lets the agent reach besides its workspace: "bwrap, network
// on; writes ~/.claude; reads ~/.gitconfig".
func sandboxLine(s *state.Sandbox, home string) string {
	net := sandbox.NetOn
	if s.Net != "" {
		net = s.Net
	}
	line := s.Tool + ", network " + net
	for _, l := range []struct {
		verb  string
		paths []string
	}{{"writes", s.RW}, {"reads", s.RO}} {
		if len(l.paths) == 0 {
			continue
		}
		shown := make([]string, len(l.paths))
		for i, p := range l.paths {
			shown[i] = tildePath(p, home)
		}
		line += "; " + l.verb + " " + strings.Join(shown, ", ")
	}
	return line
}
