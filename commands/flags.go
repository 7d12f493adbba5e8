package commands

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"agt/state"
	"agt/termsafe"
)

func runDirFlag() cli.Flag {
	return &cli.StringFlag{
		Name:    "run-dir",
		Usage:   "where agents' records live (default $XDG_STATE_HOME/agt or ~/.local/state/agt)",
		EnvVars: []string{"AGT_RUN_DIR"},
	}
}

func jsonFlag() cli.Flag {
	return &cli.BoolFlag{Name: "json", Usage: "print NDJSON even on a terminal", EnvVars: []string{"AGT_JSON"}}
}

// durationValue is the value of a duration flag. Besides Go durations (30s, 1m30s) it takes a
// bare number as seconds (-t 5), as docker's -t does.
type durationValue time.Duration

func (d *durationValue) Set(s string) error {
	if n, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(n, 0) && !math.IsNaN(n) {
		*d = durationValue(n * float64(time.Second))
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration such as 30s or 1m30s, or a number of seconds")
	}
	*d = durationValue(v)
	return nil
}

func (d *durationValue) String() string { return time.Duration(*d).String() }

// durationFlag is a flag taking a duration or a number of seconds; read it with flagDuration.
func durationFlag(name, alias, usage, defaultText string, envVars ...string) cli.Flag {
	f := &cli.GenericFlag{Name: name, Usage: usage, DefaultText: defaultText, EnvVars: envVars, Value: new(durationValue)}
	if alias != "" {
		f.Aliases = []string{alias}
	}
	return f
}

// flagDuration is the value of a durationFlag; 0 when it was not given.
func flagDuration(c *cli.Context, name string) time.Duration {
	if v, ok := c.Generic(name).(*durationValue); ok {
		return time.Duration(*v)
	}
	return 0
}

// openRunDir opens the run directory named by --run-dir, $AGT_RUN_DIR or the XDG default.
func openRunDir(c *cli.Context) (*state.Dir, error) {
	root, err := state.ResolveRoot(c.String("run-dir"))
	if err != nil {
		return nil, err
	}
	return state.Open(root)
}

// targets opens the agents that a command's NAME arguments name, after rejecting flags written
// after them. With no NAME it takes every agent when all is set, and is otherwise a usage error
// that shows synopsis.
func targets(c *cli.Context, synopsis string, all bool) ([]*state.Agent, error) {
	names, err := names(c)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 && !all {
		return nil, usagef(c, "missing NAME: %s", synopsis)
	}
	if c.IsSet("timeout") && flagDuration(c, "timeout") < 0 {
		return nil, usagef(c, "-t %s: must not be negative", flagDuration(c, "timeout"))
	}
	for _, n := range names {
		if err := state.ValidateName(n); err != nil && !isPattern(n) {
			return nil, cli.Exit(err, 2)
		}
	}
	d, err := openRunDir(c)
	if err != nil {
		return nil, err
	}
	if names, err = expandPatterns(d, names); err != nil {
		return nil, err
	}
	return agentsNamed(d, names)
}

// warn prints an error about one agent on stderr, each of its lines (hints too) prefixed;
// nothing once the command was interrupted (main then exits 130).
func warn(c *cli.Context, verb, name string, err error) {
	if c.Context.Err() != nil {
		return
	}
	PrintError(c.App.ErrWriter, fmt.Sprintf("%s %s: %v", verb, name, err))
}

// PrintError writes an error message to w, each of its lines (hints too) prefixed "agt: ", and
// what an agent wrote in it (a reason, a tool's name) escaped.
func PrintError(w io.Writer, msg string) {
	for _, line := range strings.Split(termsafe.Text(msg), "\n") {
		fmt.Fprintf(w, "agt: %s\n", line)
	}
}

// grace is the grace of a stop between SIGTERM and SIGKILL, as spawn.Stop takes it: -t when
// given (0 kills at once, as docker's does), else -1, each agent's own --timeout. targets
// checks that -t is not negative.
func grace(c *cli.Context) time.Duration {
	if c.IsSet("timeout") {
		return flagDuration(c, "timeout")
	}
	return -1
}

// agentsNamed opens the named agents, or every agent when names is empty.
// An unknown name is an error with a hint.
func agentsNamed(d *state.Dir, names []string) ([]*state.Agent, error) {
	if len(names) == 0 {
		return d.Agents()
	}
	agents := make([]*state.Agent, 0, len(names))
	for _, n := range names {
		a, err := d.Agent(n)
		if err != nil {
			return nil, withHint(err, "run 'agt ps' to list agents")
		}
		agents = append(agents, a)
	}
	return agents, nil
}

// hinted is an error with a hint for the user on its own line.
type hinted struct {
	err  error
	hint string
}

func (h hinted) Error() string { return h.err.Error() + "\nhint: " + h.hint }
func (h hinted) Unwrap() error { return h.err }

func withHint(err error, hint string) error { return hinted{err, hint} }
