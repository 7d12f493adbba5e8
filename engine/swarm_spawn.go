package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"agt/hosts"
)

// spawn submits the job as a service and returns once its agent runs, printing the spawned
// event the job printed (agt spawn's own answer). A job that ends before its agent starts
// (an image that cannot be pulled, agt refusing the flags) leaves nothing behind, and its
// reason is said. A job that waits for a node says so once, and is waited for: queueing is
// the swarm's.
func (s *Swarm) spawn(ctx context.Context, c *call, call *hosts.Call) error {
	j, err := SpawnJob(call.Args, call.Stdin, s.Engine, s.Grace)
	if err != nil {
		return err
	}
	jobs, err := s.jobs(ctx, nil)
	if err != nil {
		return err
	}
	for _, o := range jobs {
		if o.name() == j.Name {
			return fmt.Errorf("agent %q already exists on the swarm (%s)\nhint: pick another name, or free this one: 'agt stop swarm:%s' if it runs, then 'agt rm swarm:%s'",
				j.Name, o.status().State, j.Name, j.Name)
		}
	}
	secret := ""
	if j.secretPrompt() {
		if secret, err = s.promptSecret(ctx, j); err != nil {
			return err
		}
	}
	if _, err := s.docker(ctx, nil, s.serviceCreate(j, secret)...); err != nil {
		if ctx.Err() != nil { // cut short: the service may have been made all the same
			s.docker(context.WithoutCancel(ctx), nil, "service", "rm", j.Name)
		}
		s.removeSecrets(context.WithoutCancel(ctx), j.Name)
		return err
	}
	err = s.awaitStart(ctx, j.Name, call)
	if err != nil && ctx.Err() != nil {
		// Interrupted before its agent started (a job that waits for a node may wait for
		// ever): a job left queued would start later, followed by nobody.
		clean := context.WithoutCancel(ctx)
		s.docker(clean, nil, "service", "rm", j.Name)
		s.removeSecrets(clean, j.Name)
		say(call, fmt.Sprintf("spawn %s on the swarm: interrupted before it started; removed it", j.Name))
	}
	return err
}

// serviceCreate is the docker service create command line of job j, whose prompt is in
// secret ("" for none).
func (s *Swarm) serviceCreate(j *Job, secret string) []string {
	args := []string{"service", "create", "--detach", "--quiet", "--name", j.Name,
		"--restart-condition", "none", "--stop-signal", "SIGTERM",
		"--stop-grace-period", j.EngineGrace().String()}
	for _, kv := range sortedLabels(j.Labels()) {
		args = append(args, "--label", kv, "--container-label", kv)
	}
	e := j.Engine
	if e.Memory > 0 {
		args = append(args, "--reserve-memory", strconv.FormatInt(e.Memory, 10))
	}
	if e.MemoryLimit > 0 {
		args = append(args, "--limit-memory", strconv.FormatInt(e.MemoryLimit, 10))
	}
	if e.CPUs > 0 {
		args = append(args, "--reserve-cpu", strconv.FormatFloat(e.CPUs, 'f', -1, 64))
	}
	for _, name := range e.Env {
		args = append(args, "--env", name) // docker takes the value from its own environment
	}
	if secret != "" {
		args = append(args, "--secret", "source="+secret+",target="+strings.TrimPrefix(PromptPath, "/run/secrets/")+",mode=0400")
	}
	args = append(args, e.Args...)
	return append(append(args, j.Image), j.Command()...)
}

// promptSecret puts the job's prompt into a secret of its own, labelled as the job is, and returns the secret's name. The prompt goes on docker's stdin.
func (s *Swarm) promptSecret(ctx context.Context, j *Job) (string, error) {
	name := promptSecretName()
	args := []string{"secret", "create"}
	for _, kv := range sortedLabels(j.Labels()) {
		args = append(args, "--label", kv)
	}
	_, err := s.docker(ctx, strings.NewReader(*j.Prompt), append(args, name, "-")...)
	return name, err
}

// removeSecrets removes the prompt secrets of agent name; it reports what it removed.
func (s *Swarm) removeSecrets(ctx context.Context, name string) (int, error) {
	b, err := s.docker(ctx, nil, "secret", "ls", "--quiet", "--filter", "label="+LabelAgent+"="+name)
	if err != nil {
		return 0, err
	}
	ids := strings.Fields(string(b))
	if len(ids) == 0 {
		return 0, nil
	}
	_, err = s.docker(ctx, nil, append([]string{"secret", "rm"}, ids...)...)
	return len(ids), err
}

// awaitStart waits for the job's spawned event and prints it.
func (s *Swarm) awaitStart(ctx context.Context, name string, call *hosts.Call) error {
	var spawned []byte
	fl := &follower{s: s, name: name, pass: func(ev event) bool {
		if ev.typ == "spawned" {
			spawned = ev.line
			return false
		}
		return true
	}}
	said := ""
	st, err := fl.run(ctx, func(st Status) {
		if waitsForNode(st) && st.Reason != said {
			said = st.Reason
			say(call, fmt.Sprintf("%s waits on the swarm: %s", name, st.Reason))
		}
	})
	if err != nil {
		return err
	}
	if spawned != nil {
		_, err := fmt.Fprintf(call.Stdout, "%s\n", spawned)
		return err
	}
	// It ended, and its agent never started: say why, and take away what is left.
	why := st.Reason
	if st.Error != "" && !strings.Contains(why, st.Error) {
		why += ": " + st.Error
	}
	if j, err := fl.job(context.WithoutCancel(ctx)); err == nil {
		if _, words, err := s.logs(context.WithoutCancel(ctx), j); err == nil && words != "" {
			why = strings.TrimPrefix(words, "agt: ") // what the agt in the job said
		}
	}
	clean := context.WithoutCancel(ctx)
	s.docker(clean, nil, "service", "rm", name)
	s.removeSecrets(clean, name)
	say(call, fmt.Sprintf("spawn %s on the swarm: %s", name, why))
	if st.ExitCode != nil && *st.ExitCode != 0 {
		return exitCode(*st.ExitCode)
	}
	return exitCode(1)
}

// waitsForNode reports whether a starting job waits for a node, as the swarm says why ("no
// suitable node (insufficient resources on 2 nodes)"). A task is pending without a reason for
// a moment on its way to a node: that is no wait to report at every spawn.
func waitsForNode(st Status) bool {
	return st.State == "starting" && st.SwarmState == "pending" && st.Reason != "pending"
}

// SwarmCommands is what spawn --on swarm runs for job j, as shell command lines: a dry run.
func SwarmCommands(j *Job) string {
	docker := "docker"
	if j.Engine.Context != "" {
		docker += " --context " + hosts.Quote(j.Engine.Context)
	}
	var b strings.Builder
	secret := ""
	if j.secretPrompt() {
		secret = promptSecretName()
		create := []string{"secret", "create"}
		for _, kv := range sortedLabels(j.Labels()) {
			create = append(create, "--label", kv)
		}
		fmt.Fprintf(&b, "printf '%%s' %s | %s %s -\n", hosts.Quote(*j.Prompt), docker, hosts.Words(append(create, secret)))
	}
	s := &Swarm{Engine: j.Engine}
	fmt.Fprintf(&b, "%s %s\n", docker, hosts.Words(s.serviceCreate(j, secret)))
	return b.String()
}

// promptSecretName names a new prompt secret: agt-prompt- and 12 random hex digits (a
// secret's name holds at most 64 characters; an agent's name may take 63).
func promptSecretName() string {
	var b [6]byte
	rand.Read(b[:])
	return "agt-prompt-" + hex.EncodeToString(b[:])
}

// sortedLabels lists labels as KEY=VALUE, sorted.
func sortedLabels(labels map[string]string) []string {
	out := make([]string, 0, len(labels))
	for k, v := range labels {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
