package commands

import (
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"agt/config"
)

func agentsCommand() *cli.Command {
	return &cli.Command{
		Name:  "agents",
		Usage: "list the agent kinds agt can spawn",
		UsageText: "agt agents [--json | --format TEMPLATE]\n\n" +
			"Lists every agent kind, built-in or from agt.toml, and how agt runs it.\n\n" +
			"EXAMPLES:\n" +
			"   agt agents\n" +
			"   agt agents | jq -r 'select(.installed) | .name'\n" +
			"   agt agents | jq -r 'select(.version != \"\" and .version != .tested) | .name'",
		Description: helpText("agents"),
		Flags:       []cli.Flag{jsonFlag(), formatFlag("agents", agentRow{}, "{{.name}} {{.installed}}")},
		Action: func(c *cli.Context) error {
			if c.Args().Len() > 0 {
				return usagef(c, "agents takes no arguments")
			}
			out, err := outputFor(c)
			if err != nil {
				return err
			}
			dir, err := os.Getwd()
			if err != nil {
				return err
			}
			cfg, err := config.Load(dir)
			if err != nil {
				return err
			}
			var rows [][]string
			for _, name := range config.Names(cfg.Kinds) {
				k := cfg.Kinds[name]
				r := agentRow{Kind: k, Installed: k.Installed(), Prompt: k.PromptVia()}
				if t, ok := config.TestedRelease(k.Binary()); ok {
					r.Tested = t.Version
				}
				if r.Installed && k.Binary() != "" {
					r.Version = config.InstalledVersion(k.Binary())
				}
				switch out.mode {
				case modeTable:
					installed := "yes"
					if !r.Installed {
						installed = "no"
					}
					source := "built-in"
					if !k.Builtin {
						source = "agt.toml"
					}
					argv := strings.Join(k.Start, " ")
					if k.Name == config.Exec {
						argv = "COMMAND after --"
					}
					rows = append(rows, []string{k.Name, k.Format, installed, dash(r.Version), testedText(r), dash(r.Prompt), source, dash(strings.Join(slices.Concat(k.AutoArgs, k.SandboxArgs), " ")), argv})
				default:
					if err := out.item(r, nil); err != nil {
						return err
					}
				}
			}
			if out.mode == modeTable {
				return out.table([]string{"KIND", "FORMAT", "INSTALLED", "VERSION", "TESTED", "PROMPT", "FROM", "IN A SANDBOX", "ARGV"}, rows)
			}
			return nil
		},
	}
}

// agentRow is one kind as agents lists it: the NDJSON fields, and what templates name.
type agentRow struct {
	*config.Kind
	Installed bool `json:"installed"`
	// Prompt says how the prompt reaches it: stdin (out of the process table), argv (readable
	// by every local user in ps), env, or "".
	Prompt string `json:"prompt"`
	// Version is the version of its program installed, "" when unknown; Tested the one agt's
	// real-agent tests passed with, "" when none was tested.
	Version string `json:"version"`
	Tested  string `json:"tested"`
}

// testedText says whether agt was tested with the version installed: yes, no (and the tested
// one), or "-" when there is nothing to compare.
func testedText(r agentRow) string {
	switch {
	case r.Tested == "":
		return "-"
	case r.Version == r.Tested:
		return "yes"
	case r.Version == "":
		return "? (" + r.Tested + ")"
	}
	return "no (" + r.Tested + ")"
}
