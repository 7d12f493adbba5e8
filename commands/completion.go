package commands

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"

	"agt/spawn"
	"agt/stream"
)

func completionCommand() *cli.Command {
	return &cli.Command{
		Name:  "completion",
		Usage: "print a shell completion script: bash, zsh or fish",
		UsageText: "agt completion bash|zsh|fish\n\n" +
			"Prints a script that completes agt's commands, flags, agent names and kinds.\n\n" +
			"EXAMPLES:\n" +
			"   source <(agt completion bash)                       # in ~/.bashrc\n" +
			"   source <(agt completion zsh)                        # in ~/.zshrc\n" +
			"   agt completion fish > ~/.config/fish/completions/agt.fish",
		Description: helpText("completion"),
		Action: func(c *cli.Context) error {
			if c.Args().Len() != 1 {
				return usagef(c, "want one shell: agt completion bash|zsh|fish")
			}
			spec := completionSpec(c.App)
			switch c.Args().First() {
			case "bash":
				return spec.bash(c.App.Writer, false)
			case "zsh":
				return spec.bash(c.App.Writer, true)
			case "fish":
				return spec.fish(c.App.Writer)
			}
			return usagef(c, "unknown shell %q: want bash, zsh or fish", c.Args().First())
		},
	}
}

// completion is what the scripts complete, read from the app's definitions.
type completion struct {
	commands []completionCommandSpec
	global   []string // the app's flags, spelled as typed
}

type completionCommandSpec struct {
	name, usage string
	flags       []completionFlag
	names       bool     // takes agent NAMEs
	words       []string // fixed words it takes: subcommands, shells
}

type completionFlag struct {
	names  []string // spelled as typed: --agent, -a
	usage  string
	values string // a shell word list, or a command substitution; "" for none, "<file>" for files
	takes  bool   // takes a value
}

// flagValues are the values of flags that have a known set, by the flag's name.
func flagValues() map[string]string {
	states := []string{stream.Starting, stream.Running, stream.Waiting, stream.Stale, stream.Restarting,
		stream.Stopping, stream.Stopped, stream.Exited, stream.Failed, stream.Lost, spawn.Unknown}
	return map[string]string{
		"agent":       "$(agt agents --format '{{.name}}' 2>/dev/null)",
		"state":       strings.Join(states, " "),
		"type":        strings.Join(eventTypes, " "),
		"workspace":   "auto jj git none",
		"restart":     "on-failure always never",
		"format":      "table json",
		"dir":         "<file>",
		"prompt-file": "<file>",
		"run-dir":     "<file>",
	}
}

func completionSpec(app *cli.App) completion {
	values := flagValues()
	flagsOf := func(flags []cli.Flag) []completionFlag {
		var out []completionFlag
		for _, f := range flags {
			if v, ok := f.(cli.VisibleFlag); ok && !v.IsVisible() {
				continue
			}
			cf := completionFlag{takes: takesValueFlag(f), values: values[f.Names()[0]]}
			if u, ok := f.(cli.DocGenerationFlag); ok {
				cf.usage = u.GetUsage()
			}
			for _, n := range f.Names() {
				if len(n) == 1 {
					cf.names = append(cf.names, "-"+n)
				} else {
					cf.names = append(cf.names, "--"+n)
				}
			}
			out = append(out, cf)
		}
		return out
	}
	var spec completion
	for _, f := range flagsOf(app.Flags) {
		spec.global = append(spec.global, f.names...)
	}
	// Set up, the app has its --help and --version among its flags; before, not.
	spec.global = slices.Compact(append(spec.global, "--help", "--version"))
	slices.Sort(spec.global)
	spec.global = slices.Compact(spec.global)
	for _, cmd := range app.VisibleCommands() {
		cs := completionCommandSpec{name: cmd.Name, usage: cmd.Usage, flags: flagsOf(cmd.Flags)}
		synopsis, _, _ := strings.Cut(cmd.UsageText, "\n")
		// A command that takes agents' NAMEs (spawn's NAME is a new one).
		cs.names = strings.Contains(synopsis, "NAME") && cmd.Name != "spawn"
		for _, sub := range cmd.Subcommands {
			cs.words = append(cs.words, sub.Name)
		}
		switch cmd.Name {
		case "completion":
			cs.words = []string{"bash", "zsh", "fish"}
		case "help":
			for _, c := range app.VisibleCommands() {
				cs.words = append(cs.words, c.Name)
			}
		}
		spec.commands = append(spec.commands, cs)
	}
	sort.Slice(spec.commands, func(i, j int) bool { return spec.commands[i].name < spec.commands[j].name })
	return spec
}

func takesValueFlag(f cli.Flag) bool {
	dv, ok := f.(cli.DocGenerationFlag)
	return ok && dv.TakesValue()
}

// bash writes the bash script; for zsh, the same behind zsh's bashcompinit, which runs bash
// completion functions.
func (s completion) bash(w io.Writer, zsh bool) error {
	var b strings.Builder
	if zsh {
		b.WriteString("#compdef agt\n# zsh completion for agt: source <(agt completion zsh)\n")
		b.WriteString("autoload -U +X compinit && compinit\nautoload -U +X bashcompinit && bashcompinit\n")
	} else {
		b.WriteString("# bash completion for agt: source <(agt completion bash)\n")
	}
	var names []string
	for _, c := range s.commands {
		names = append(names, c.name)
	}
	b.WriteString(`_agt() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    local cmd= i
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in
            --run-dir) ((i++)) ;;
            -*) ;;
            *) cmd=${COMP_WORDS[i]}; break ;;
        esac
    done
    # After --, the words are the agent's command's own.
    local j
    for ((j = i + 1; j < COMP_CWORD; j++)); do
        if [[ ${COMP_WORDS[j]} == -- ]]; then
            COMPREPLY=($(compgen -c -- "$cur"))
            return
        fi
    done
    local values=
    case $cmd:$prev in
`)
	// Values of flags, by command: rm's --workspace is a switch, spawn's takes a mode.
	for _, c := range append([]completionCommandSpec{{flags: s.globalFlags()}}, s.commands...) {
		for _, f := range c.flags {
			if !f.takes {
				continue
			}
			var pats []string
			for _, n := range f.names {
				pats = append(pats, c.name+":"+n)
			}
			switch f.values {
			case "":
				fmt.Fprintf(&b, "        %s) return ;;\n", strings.Join(pats, "|")) // free text
			case "<file>":
				fmt.Fprintf(&b, "        %s) COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n", strings.Join(pats, "|"))
			default:
				fmt.Fprintf(&b, "        %s) values=\"%s\" ;;\n", strings.Join(pats, "|"), f.values)
			}
		}
	}
	b.WriteString(`    esac
    if [[ -n $values ]]; then
        COMPREPLY=($(compgen -W "$values" -- "$cur"))
        return
    fi
    local flags= words=
    case $cmd in
        '')
            COMPREPLY=($(compgen -W "` + strings.Join(append(names, s.global...), " ") + `" -- "$cur"))
            return ;;
`)
	for _, c := range s.commands {
		var flags []string
		for _, f := range c.flags {
			flags = append(flags, f.names...)
		}
		words := strings.Join(c.words, " ")
		if c.names {
			words = strings.TrimSpace(words + " $(agt ps -q 2>/dev/null)")
		}
		fmt.Fprintf(&b, "        %s) flags=\"%s\"; words=\"%s\" ;;\n", c.name, strings.Join(flags, " "), words)
	}
	b.WriteString(`    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$flags" -- "$cur"))
    else
        COMPREPLY=($(compgen -W "$words" -- "$cur"))
    fi
}
complete -o default -F _agt agt
`)
	_, err := io.WriteString(w, b.String())
	return err
}

// globalFlags are the app's own flags as completionFlags (only --run-dir takes a value).
func (s completion) globalFlags() []completionFlag {
	return []completionFlag{{names: []string{"--run-dir"}, takes: true, values: "<file>"}}
}

// fish writes the fish script: one complete line per command and flag.
func (s completion) fish(w io.Writer) error {
	var b strings.Builder
	b.WriteString("# fish completion for agt: agt completion fish > ~/.config/fish/completions/agt.fish\n")
	b.WriteString("complete -c agt -f\n")
	b.WriteString("complete -c agt -n __fish_use_subcommand -l run-dir -r -F -d 'where agents'\\''s records live'\n")
	for _, c := range s.commands {
		fmt.Fprintf(&b, "complete -c agt -n __fish_use_subcommand -a %s -d %s\n", c.name, fishQuote(c.usage))
	}
	for _, c := range s.commands {
		cond := "'__fish_seen_subcommand_from " + c.name + "'"
		for _, f := range c.flags {
			fmt.Fprintf(&b, "complete -c agt -n %s", cond)
			for _, n := range f.names {
				if strings.HasPrefix(n, "--") {
					fmt.Fprintf(&b, " -l %s", n[2:])
				} else {
					fmt.Fprintf(&b, " -s %s", n[1:])
				}
			}
			switch {
			case f.values == "<file>":
				b.WriteString(" -r -F")
			case f.values != "":
				fmt.Fprintf(&b, " -x -a %s", fishQuote(strings.ReplaceAll(f.values, "$(", "(")))
			case f.takes:
				b.WriteString(" -x")
			}
			fmt.Fprintf(&b, " -d %s\n", fishQuote(firstLine(f.usage)))
		}
		words := strings.Join(c.words, " ")
		if c.names {
			words = strings.TrimSpace(words + " (agt ps -q 2>/dev/null)")
		}
		if words != "" {
			fmt.Fprintf(&b, "complete -c agt -n %s -a %s\n", cond, fishQuote(words))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// fishQuote quotes s for fish, in single quotes.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
