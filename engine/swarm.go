package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path"
	"strings"
	"syscall"
	"time"

	"agt/config"
	"agt/hosts"
	"agt/termsafe"
)

// Swarm is Docker Swarm as a place: each agent a service of one task that runs the engine
// contract's agt spawn, through the user's docker CLI (its context and auth).
//
//	spawn  docker secret create (the prompt), docker service create --restart-condition none
//	ps     docker service ls/inspect and docker inspect of their tasks, as agt ps rows
//	tail   docker service logs [-f] --raw, filtered by seq (tail --after resumes)
//	wait   the task's end, and its exit code
//	stop   docker service update (SIGTERM, the grace, 143), then docker service scale NAME=0
//	rm     docker service rm and the prompt's secret
//
// stop ends the task by changing its placement to no node rather than by scaling first:
// the swarm deletes a task that a scale to 0 ended, its exit code and its logs with it,
// within a fraction of a second; a task ended by an update stays in the service's history.
// The scale to 0 that follows removes the replacement, which waits for a node that is not.
type Swarm struct {
	Engine config.Engine
	// Grace is agt's default grace here (stop_timeout): a job's when spawn gives no --timeout.
	Grace time.Duration
	// Poll is how often a follower asks the swarm how its jobs are.
	Poll time.Duration
}

// PollInterval is Swarm.Poll's default.
const PollInterval = 500 * time.Millisecond

// Name is "swarm".
func (s *Swarm) Name() string { return config.EngineSwarm }

// verbs are the commands the swarm answers, with the flags each takes.
var swarmVerbs = map[string][]string{
	"ps":      {"json", "state"},
	"tail":    {"json", "follow", "lines", "after", "type"},
	"wait":    {"json", "format", "timeout"},
	"stop":    {"json", "format", "timeout", "all"},
	"rm":      {"json", "format", "workspace", "force", "all"},
	"inspect": {"json", "format"},
}

// Verbs lists the commands the swarm answers (spawn too).
func (s *Swarm) Verbs() []string {
	out := []string{"spawn"}
	for v := range swarmVerbs {
		out = append(out, v)
	}
	return out
}

// Run runs an agt command line on the swarm.
func (s *Swarm) Run(ctx context.Context, call *hosts.Call) error {
	c, err := parseCall(call.Args)
	if err == nil {
		err = s.run(ctx, c, call)
	}
	var usage *UsageError
	var exit *hosts.ExitError
	var unreach *hosts.Unreachable
	switch {
	case err == nil, errors.As(err, &exit), errors.As(err, &unreach), ctx.Err() != nil:
		return err
	case errors.As(err, &usage):
		return refuse(call, s.Name(), usage.Msg)
	}
	var code exitCode
	if errors.As(err, &code) {
		return &hosts.ExitError{Place: s.Name(), Code: int(code)}
	}
	say(call, err.Error())
	return &hosts.ExitError{Place: s.Name(), Code: 1}
}

func (s *Swarm) run(ctx context.Context, c *call, call *hosts.Call) error {
	if c.verb == "spawn" {
		return s.spawn(ctx, c, call)
	}
	takes, ok := swarmVerbs[c.verb]
	if !ok {
		return usagef("agt %s does not reach a job on the swarm: the swarm answers spawn, ps, tail, wait, stop, rm and inspect", c.verb)
	}
	if err := c.only(s.Name(), takes...); err != nil {
		return err
	}
	switch c.verb {
	case "ps":
		return s.ps(ctx, c, call)
	case "tail":
		return s.tail(ctx, c, call)
	case "wait":
		return s.wait(ctx, c, call)
	case "stop":
		return s.stop(ctx, c, call)
	case "rm":
		return s.rm(ctx, c, call)
	}
	return s.inspect(ctx, c, call)
}

// exitCode ends a command with a status, having said what there was to say.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// say writes a diagnostic line (or several) for the user, as agt's own.
func say(call *hosts.Call, msg string) {
	if call.Stderr != nil {
		fmt.Fprintf(call.Stderr, "agt: %s\n", strings.ReplaceAll(termsafe.Text(strings.TrimRight(msg, "\n")), "\n", "\nagt: "))
	}
}

// maxDockerOutput bounds what agt keeps of one docker command's output.
const maxDockerOutput = 64 << 20

// docker runs the docker CLI with args (after --context, when agt.toml names one) and returns
// its stdout. The command gets a process group of its own: a Ctrl-C at the terminal reaches
// agt, which decides, and not a docker service update half-way.
func (s *Swarm) docker(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	var out, errs bounded
	out.max, errs.max = maxDockerOutput, 64<<10
	cmd := s.command(ctx, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, &out, &errs
	if err := cmd.Run(); err != nil {
		return nil, s.failed(ctx, args, errs.String(), err)
	}
	return out.Bytes(), nil
}

// command is the docker command line of args.
func (s *Swarm) command(ctx context.Context, args ...string) *exec.Cmd {
	if s.Engine.Context != "" {
		args = append([]string{"--context", s.Engine.Context}, args...)
	}
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// failed says why a docker command failed: docker missing, a daemon that cannot be reached
// (*hosts.Unreachable, which a follower tries again), or docker's own last line.
func (s *Swarm) failed(ctx context.Context, args []string, stderr string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, exec.ErrNotFound) {
		return errors.New("cannot reach the swarm: docker not found\nhint: agt runs the docker CLI, with your contexts and auth; install it (Debian: docker.io)")
	}
	line := lastLine(stderr)
	if line == "" {
		line = err.Error()
	}
	for _, down := range []string{"Cannot connect to the Docker daemon", "error during connect", "connection refused", "no such host", "i/o timeout"} {
		if strings.Contains(line, down) {
			return &hosts.Unreachable{Place: s.Name(), Reason: line}
		}
	}
	if strings.Contains(line, "not a swarm manager") {
		return fmt.Errorf("docker %s: %s\nhint: agt reaches a swarm through a manager: 'docker swarm init', or a docker context whose daemon is one ([engines.swarm] context)", args[0], line)
	}
	verb := args[0]
	if len(args) > 1 && !strings.HasPrefix(args[1], "-") {
		verb += " " + args[1]
	}
	return &dockerError{verb: verb, line: line}
}

// dockerError is a docker command that failed, in docker's words.
type dockerError struct{ verb, line string }

func (e *dockerError) Error() string { return "docker " + e.verb + ": " + e.line }

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// agtWords is the reason in what an agt wrote on stderr: its last line that is not a hint.
func agtWords(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" && !strings.HasPrefix(l, "agt: hint:") && !strings.HasPrefix(l, "hint:") {
			return l
		}
	}
	return ""
}

// bounded keeps what is written to it, up to max bytes.
type bounded struct {
	bytes.Buffer
	max int
}

func (b *bounded) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// list returns every job of agt's on the swarm: four docker commands, however many jobs.
func (s *Swarm) list(ctx context.Context) ([]*job, error) {
	ids, err := s.docker(ctx, nil, "service", "ls", "--quiet", "--filter", "label="+LabelAgent)
	if err != nil {
		return nil, err
	}
	svcIDs := strings.Fields(string(ids))
	if len(svcIDs) == 0 {
		return nil, nil
	}
	b, err := s.docker(ctx, nil, append([]string{"service", "inspect"}, svcIDs...)...)
	if err != nil {
		return nil, s.gone(ctx, err)
	}
	svcs, err := parseServices(b)
	if err != nil {
		return nil, err
	}
	b, err = s.docker(ctx, nil, append([]string{"service", "ps", "--quiet", "--no-trunc"}, svcIDs...)...)
	if err != nil {
		return nil, s.gone(ctx, err)
	}
	var tasks []task
	if taskIDs := strings.Fields(string(b)); len(taskIDs) > 0 {
		if b, err = s.docker(ctx, nil, append([]string{"inspect", "--type", "task"}, taskIDs...)...); err != nil {
			return nil, s.gone(ctx, err)
		}
		if tasks, err = parseTasks(b); err != nil {
			return nil, err
		}
	}
	return jobsOf(svcs, tasks), nil
}

// gone reads a docker command that failed because a service or task went away between two
// of list's commands (an rm elsewhere, a task the swarm replaced: "No such service", "task …
// not found") as a reason to list again.
func (s *Swarm) gone(ctx context.Context, err error) error {
	var d *dockerError
	if !errors.As(err, &d) {
		return err
	}
	if line := strings.ToLower(d.line); strings.Contains(line, "no such") || strings.Contains(line, "not found") {
		return fmt.Errorf("%w (%v)", errRelist, err)
	}
	return err
}

var errRelist = errors.New("the swarm's jobs changed while agt read them")

// relists bounds the lists of jobs that one read takes when the swarm keeps changing under it.
const relists = 5

// jobs returns the jobs named (each a name or a pattern), or all of them when names is
// empty. A name that names no job is an error after the others are returned.
func (s *Swarm) jobs(ctx context.Context, names []string) ([]*job, error) {
	all, err := s.list(ctx)
	for tries := 1; errors.Is(err, errRelist) && tries < relists; tries++ {
		all, err = s.list(ctx)
	}
	if err != nil || len(names) == 0 {
		return all, err
	}
	var out []*job
	var missing []string
	seen := map[string]bool{}
	for _, n := range names {
		found := false
		for _, j := range all {
			if ok, _ := path.Match(n, j.name()); ok || n == j.name() {
				found = true
				if !seen[j.name()] {
					seen[j.name()] = true
					out = append(out, j)
				}
			}
		}
		if !found {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return out, &noJob{names: missing}
	}
	return out, nil
}

// noJob is names that name no job of agt's on the swarm.
type noJob struct{ names []string }

func (e *noJob) Error() string {
	return fmt.Sprintf("no agent named %q on the swarm\nhint: 'agt ps --host swarm' lists them", strings.Join(e.names, `", "`))
}

// ps prints each job as agt ps prints an agent.
func (s *Swarm) ps(ctx context.Context, c *call, call *hosts.Call) error {
	jobs, err := s.jobs(ctx, c.names)
	var missing *noJob
	if err != nil && !errors.As(err, &missing) {
		return err
	}
	states := map[string]bool{}
	for _, v := range c.all("state") {
		for _, st := range strings.Split(v, ",") {
			states[st] = true
		}
	}
	enc := json.NewEncoder(call.Stdout)
	for _, j := range jobs {
		st := j.status()
		if len(states) > 0 && !states[st.State] {
			continue
		}
		if err := enc.Encode(st); err != nil {
			return err
		}
	}
	return err
}

// inspect prints what the swarm says of each job: its service and its task, as docker
// inspect gives them.
func (s *Swarm) inspect(ctx context.Context, c *call, call *hosts.Call) error {
	if len(c.names) == 0 {
		return usagef("missing NAME: agt inspect swarm:NAME")
	}
	jobs, err := s.jobs(ctx, c.names)
	for _, j := range jobs {
		st := j.status()
		if f, _ := c.get("format"); f == "table" {
			fmt.Fprintf(call.Stdout, "name: %s\nengine: swarm\nservice: %s\nstate: %s (%s)\nswarm state: %s\nnode: %s\n",
				st.Name, st.Service, st.State, st.Reason, st.SwarmState, st.Node)
			continue
		}
		line, _ := json.Marshal(struct {
			Status
			Conversation bool  `json:"conversation"`
			SwarmService any   `json:"swarm_service"`
			SwarmTask    *task `json:"swarm_task"`
		}{Status: st, SwarmService: j.svc, SwarmTask: j.task})
		fmt.Fprintf(call.Stdout, "%s\n", line)
	}
	return err
}
