// Package engine runs agents as jobs of a cluster engine that places, queues and restarts
// them: Docker Swarm services through the docker CLI, and Kubernetes Jobs as manifests.
//
// Invariants:
//   - A job runs agt spawn --wait --rm --json NAME -- COMMAND (Job.Command): the engine
//     contract of docs/engines.md. Its stdout is agt's NDJSON, its exit code the agent's,
//     SIGTERM gives the agent its grace and then ends the job with 143. The engine's own grace
//     is agt's plus GraceMargin, so that agt's stop, its last events and --rm fit in it.
//   - An engine is a hosts.Place: the commands above it (HOST:NAME as swarm:NAME, --host, the
//     fan-out, the HOST column, spawn --wait's follow and stop) work on what Run answers,
//     which is agt's own NDJSON. What the engine cannot answer exits 2 with a line saying so.
//   - agt runs the engine's own CLI (docker), so the user's contexts and auth apply, and acts
//     only on what carries agt's labels: a service that agt did not create is never stopped
//     or removed.
//   - A prompt goes into an engine secret, never into argv or the environment, which the
//     engine shows to anyone who can inspect the job.
//   - What a job prints is judged parsed: only JSON objects naming the job's own agent pass,
//     each line bounded.
package engine

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"agt/config"
	"agt/hosts"
)

// GraceMargin is what an engine waits beyond agt's grace before it kills a job: agt's stop
// takes the grace, then up to 5 s to confirm that nothing is left (RELIABILITY.md R13), then
// writes its last events and removes the record.
const GraceMargin = 10 * time.Second

// PromptPath is where a job finds its prompt: the engine mounts the secret there.
const PromptPath = "/run/secrets/agt-prompt"

// Labels agt puts on what it creates, and reads back.
const (
	LabelAgent = "agt.agent" // the agent's name: agt acts only on what carries it
	LabelKind  = "agt.kind"  // --agent, when given
)

// Job is an agent to run as a job: the agt spawn that runs in it, and what the engine gives it.
type Job struct {
	Name   string   // the agent's, and the service's or Job's
	Kind   string   // --agent's; "" for a plain command
	Flags  []string // spawn's flags for the agt in the job (--agent=claude, --timeout=30s, …)
	Argv   []string // the command after --
	Prompt *string  // the prompt: it goes into a secret, read from PromptPath
	// Grace is agt's grace in the job (its --timeout); the engine's is Grace+GraceMargin.
	Grace  time.Duration
	Image  string
	Engine config.Engine // resources, labels, the engine's own settings
}

// Command is what the job runs.
func (j *Job) Command() []string {
	cmd := append([]string{"agt", "spawn", "--wait", "--rm", "--json"}, j.Flags...)
	if j.secretPrompt() {
		cmd = append(cmd, "--prompt-file="+PromptPath)
	} else if j.Prompt != nil {
		cmd = append(cmd, "--prompt=") // empty: nothing to hide, and docker refuses an empty secret
	}
	cmd = append(cmd, j.Name)
	if len(j.Argv) > 0 {
		cmd = append(append(cmd, "--"), j.Argv...)
	}
	return cmd
}

// secretPrompt reports whether the job's prompt goes into a secret: one that is not empty.
func (j *Job) secretPrompt() bool { return j.Prompt != nil && *j.Prompt != "" }

// Labels are the job's labels: the engine's from agt.toml, then agt's own.
func (j *Job) Labels() map[string]string {
	l := map[string]string{}
	for k, v := range j.Engine.Labels {
		l[k] = v
	}
	l[LabelAgent] = j.Name
	if j.Kind != "" {
		l[LabelKind] = j.Kind
	}
	return l
}

// EngineGrace is how long the engine lets the job end after SIGTERM.
func (j *Job) EngineGrace() time.Duration { return j.Grace + GraceMargin }

// UsageError is a command that the engine cannot run as asked: exit status 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func usagef(format string, args ...any) error { return &UsageError{fmt.Sprintf(format, args...)} }

// spawnFlags says what becomes of each of spawn's flags in a job: passed to the agt in the
// job, taken by agt here, or refused with the reason.
var spawnFlags = map[string]string{
	"tty":    "a terminal agent needs agt attach, which cannot reach a job: drop --tty",
	"detach": "a terminal agent needs agt attach, which cannot reach a job: drop --detach",
	"count":  "one agent is one job: run agt spawn --on once for each",
	"prompt": "", "json": "", "on": "", "image": "", "dry-run": "", "prompt-file": "",
}

// SpawnJob reads a spawn as the hosts layer writes it (spawn [--flag=value…] NAME [-- ARGV],
// the prompt on stdin under --prompt-file=-) into a job of engine e. grace is agt's default
// grace (stop_timeout) when the spawn gives no --timeout.
func SpawnJob(args []string, stdin io.Reader, e config.Engine, grace time.Duration) (*Job, error) {
	c, err := parseCall(args)
	if err != nil {
		return nil, err
	}
	if c.verb != "spawn" || len(c.names) != 1 {
		return nil, usagef("want one NAME: agt spawn --on %s [flags] NAME -- COMMAND", e.Name)
	}
	j := &Job{Name: c.names[0], Argv: c.argv, Grace: grace, Image: e.Image, Engine: e}
	timeout := false
	for _, f := range c.flags {
		why, known := spawnFlags[f.name]
		switch {
		case why != "":
			if f.value != "false" {
				return nil, usagef("--%s: %s", f.name, why)
			}
		case f.name == "image":
			j.Image = f.value
		case f.name == "prompt-file":
			if f.value != "-" || stdin == nil {
				return nil, usagef("--prompt-file=%s: a job reads its prompt from a secret that agt makes of it", f.value)
			}
			b, err := io.ReadAll(io.LimitReader(stdin, maxPrompt+1))
			if err != nil {
				return nil, fmt.Errorf("read the prompt: %w", err)
			}
			if len(b) > maxPrompt {
				return nil, usagef("the prompt is over %d KiB, the most a secret holds", maxPrompt>>10)
			}
			p := string(b)
			j.Prompt = &p
		case known:
		default:
			if f.name == "agent" {
				j.Kind = f.value
			}
			if f.name == "timeout" {
				d, err := parseGrace(f.value)
				if err != nil {
					return nil, usagef("--timeout=%s: %v", f.value, err)
				}
				j.Grace, timeout = d, true
			}
			j.Flags = append(j.Flags, "--"+f.name+"="+f.value)
		}
	}
	if !timeout {
		j.Flags = append(j.Flags, "--timeout="+j.Grace.String()) // the engine's grace is counted from it
	}
	if j.Image == "" {
		return nil, usagef("no image for %s: set image in [engines.%s] of agt.toml, or give --image\nhint: docs/engines.md shows how to build one: the agent's CLI and a static agt", e.Name, e.Name)
	}
	if err := config.ValidImage(j.Image); err != nil {
		return nil, usagef("--image: %v", err)
	}
	return j, nil
}

// maxPrompt bounds a prompt: a Docker secret holds at most 500 KiB.
const maxPrompt = 500 << 10

// parseGrace reads a grace as agt's flags take it: a duration, or seconds.
func parseGrace(s string) (time.Duration, error) {
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return d, nil
	}
	var secs float64
	if _, err := fmt.Sscanf(s, "%g", &secs); err == nil && secs >= 0 && fmt.Sprint(secs) == strings.TrimSpace(s) {
		return time.Duration(secs * float64(time.Second)), nil
	}
	return 0, fmt.Errorf("want a duration such as 30s")
}

// call is an agt command line as the hosts layer hands it to a place: the command, its flags
// (each --name or --name=value), the names and, after --, spawn's command.
type call struct {
	verb  string
	flags []flag
	names []string
	argv  []string
}

type flag struct{ name, value string }

// parseCall reads args. Flags come as forwardFlags writes them, --name=value, or as the
// hosts layer adds them, --name (true).
func parseCall(args []string) (*call, error) {
	if len(args) == 0 {
		return nil, usagef("no command")
	}
	c := &call{verb: args[0]}
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			c.argv = args[i+1:]
			return c, nil
		case strings.HasPrefix(a, "--") && len(a) > 2:
			name, value, ok := strings.Cut(a[2:], "=")
			if !ok {
				value = "true"
			}
			c.flags = append(c.flags, flag{name, value})
		case strings.HasPrefix(a, "-") && a != "-":
			return nil, usagef("%s %s: agt gives flags to an engine as --name=value", c.verb, a)
		default:
			c.names = append(c.names, a)
		}
	}
	return c, nil
}

// get returns the value of flag name ("" when not given) and whether it was given.
func (c *call) get(name string) (string, bool) {
	for i := len(c.flags) - 1; i >= 0; i-- {
		if c.flags[i].name == name {
			return c.flags[i].value, true
		}
	}
	return "", false
}

// all returns every value of a repeated flag.
func (c *call) all(name string) []string {
	var out []string
	for _, f := range c.flags {
		if f.name == name {
			out = append(out, f.value)
		}
	}
	return out
}

func (c *call) bool(name string) bool {
	v, _ := c.get(name)
	return v == "true"
}

// only refuses a flag that the engine does not take for this command.
func (c *call) only(place string, takes ...string) error {
	for _, f := range c.flags {
		if !slices.Contains(takes, f.name) {
			return usagef("%s %s --%s: not something %s answers", place, c.verb, f.name, place)
		}
	}
	return nil
}

// refuse is what an engine answers to a command it does not run: a line on stderr, exit 2.
func refuse(call *hosts.Call, place, msg string) error {
	if call.Stderr != nil {
		fmt.Fprintf(call.Stderr, "agt: %s\n", strings.ReplaceAll(msg, "\n", "\nagt: "))
	}
	return &hosts.ExitError{Place: place, Code: 2}
}

// pause waits d or until ctx ends.
func pause(ctx context.Context, d time.Duration) error { return hosts.Pause(ctx, d) }
