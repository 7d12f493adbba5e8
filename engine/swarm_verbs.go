package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"agt/hosts"
	"agt/stream"
)

// wait waits until every named job has ended and exits with the first non-zero exit code of
// theirs (the task's: the agent's, or 143 for one that a stop ended).
func (s *Swarm) wait(ctx context.Context, c *call, call *hosts.Call) error {
	if len(c.names) == 0 {
		return usagef("missing NAME: agt wait swarm:NAME...")
	}
	wctx := ctx
	if v, ok := c.get("timeout"); ok {
		d, err := parseGrace(v)
		if err != nil {
			return usagef("--timeout=%s: %v", v, err)
		}
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	for {
		jobs, err := s.jobs(wctx, c.names)
		if err != nil {
			if ctx.Err() == nil && wctx.Err() != nil {
				break
			}
			return err
		}
		if done := s.ended(jobs); done != nil {
			return s.printEnds(c, call, done)
		}
		if pause(wctx, s.poll()) != nil {
			break
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	v, _ := c.get("timeout")
	say(call, fmt.Sprintf("timed out after %s: still running on the swarm", v))
	return exitCode(124)
}

// ended returns the jobs' statuses when every one has ended, else nil.
func (s *Swarm) ended(jobs []*job) []Status {
	out := make([]Status, len(jobs))
	for i, j := range jobs {
		if out[i] = j.status(); !out[i].final() {
			return nil
		}
	}
	return out
}

// printEnds prints how each job ended, and exits with the first non-zero code.
func (s *Swarm) printEnds(c *call, call *hosts.Call, ends []Status) error {
	code := 0
	for _, st := range ends {
		n := 1
		if st.ExitCode != nil {
			n = *st.ExitCode
		} else {
			say(call, fmt.Sprintf("%s is %s (%s): its exit code is unknown", st.Name, st.State, st.Reason))
		}
		if code == 0 {
			code = n
		}
		if f, _ := c.get("format"); f == "table" {
			fmt.Fprintf(call.Stdout, "%s %s (%s)\n", st.Name, st.State, st.Reason)
			continue
		}
		line, _ := json.Marshal(map[string]any{"name": st.Name, "state": st.State, "reason": st.Reason, "exit_code": st.ExitCode})
		fmt.Fprintf(call.Stdout, "%s\n", line)
	}
	if code != 0 {
		return exitCode(code)
	}
	return nil
}

// stopPlacement is the placement that a stop gives a job: no node has this id, so the swarm
// ends the task (SIGTERM, the grace) and its replacement waits, until the scale to 0.
const stopPlacement = "node.id==agt-stopped"

// stop ends the named jobs (or with --all every one that runs): SIGTERM to the job, which
// gives its agent the grace, and ends with 143. It returns once they have ended, printing
// the last state event of each, as agt stop does.
func (s *Swarm) stop(ctx context.Context, c *call, call *hosts.Call) error {
	all := c.bool("all")
	if len(c.names) == 0 && !all {
		return usagef("missing NAME: agt stop swarm:NAME...")
	}
	if v, ok := c.get("timeout"); ok && v != "" {
		say(call, "the swarm gives a job the grace it was started with (spawn's --timeout, and "+GraceMargin.String()+" more): --timeout changes nothing there")
	}
	jobs, err := s.jobs(ctx, c.names)
	var missing *noJob
	if err != nil && !errors.As(err, &missing) {
		return err
	}
	var live []*job
	for _, j := range jobs {
		if st := j.status(); st.final() {
			if !all {
				say(call, fmt.Sprintf("%s already %s", st.Name, st.State))
			}
			continue
		}
		if _, err := s.docker(ctx, nil, "service", "update", "--detach", "--quiet", "--label-add", labelStop+"=true",
			"--constraint-add", stopPlacement, j.svc.ID); err != nil {
			return err
		}
		live = append(live, j)
	}
	var grace time.Duration
	for _, j := range live {
		grace = max(grace, time.Duration(j.svc.Spec.TaskTemplate.ContainerSpec.StopGracePeriod))
	}
	// The swarm kills a job at the end of its grace: a job that outlives it by far is a swarm
	// that lost its node.
	wctx, cancel := context.WithTimeout(ctx, grace+30*time.Second)
	defer cancel()
	var ends []Status
	for len(live) > 0 {
		names := make([]string, len(live))
		for i, j := range live {
			names[i] = j.name()
		}
		jobs, err := s.jobs(wctx, names)
		if err == nil {
			if ends = s.ended(jobs); ends != nil {
				break
			}
		}
		if pause(wctx, s.poll()) != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("stop on the swarm: %v still running %s after SIGTERM\nhint: 'docker service ps %s' shows what the swarm says", names, grace+30*time.Second, names[0])
		}
	}
	for _, j := range live {
		// The replacement that waits for no node goes; the task that ran stays, with its
		// exit code and logs.
		if _, err := s.docker(ctx, nil, "service", "scale", "--detach", j.svc.ID+"=0"); err != nil {
			return err
		}
	}
	// One wait for every job's last log lines, not one each.
	lctx, cancelLogs := context.WithTimeout(ctx, logsSettle)
	defer cancelLogs()
	for _, st := range ends {
		if f, _ := c.get("format"); f == "table" {
			fmt.Fprintf(call.Stdout, "%s %s (%s)\n", st.State, st.Name, exitWords(st))
			continue
		}
		if ev := s.lastState(lctx, st.Name); ev != nil {
			fmt.Fprintf(call.Stdout, "%s\n", ev)
		}
	}
	if missing != nil {
		return missing
	}
	return nil
}

// lastState is the last state event the job printed; nil for none. The swarm collects a task's
// logs after it ends, so a job that has just ended may not show its last lines at once: they
// are looked for again until the last state is a final one, or ctx ends. A job gone, or logs
// that cannot be read, end the search at once.
func (s *Swarm) lastState(ctx context.Context, name string) []byte {
	var last []byte
	for {
		jobs, err := s.jobs(ctx, []string{name})
		if err != nil {
			return last
		}
		evs, _, err := s.logs(ctx, jobs[0])
		if err != nil {
			return last
		}
		for i := len(evs) - 1; i >= 0; i-- {
			if evs[i].typ == "state" {
				last = evs[i].line
				break
			}
		}
		if last != nil && stream.IsFinal(gjson.GetBytes(last, "to").String()) || pause(ctx, s.poll()) != nil {
			return last
		}
	}
}

// logsSettle bounds the wait for the ended jobs' last log lines.
const logsSettle = 5 * time.Second

func exitWords(st Status) string {
	if st.ExitCode == nil {
		return st.Reason
	}
	return fmt.Sprintf("exit %d", *st.ExitCode)
}

// rm removes the named jobs' services and prompt secrets (with --all, every job that has
// ended). A job that runs is refused unless --force, which removes it anyway: the swarm then
// stops it.
func (s *Swarm) rm(ctx context.Context, c *call, call *hosts.Call) error {
	all := c.bool("all")
	if len(c.names) == 0 && !all {
		return usagef("missing NAME: agt rm swarm:NAME...")
	}
	jobs, err := s.jobs(ctx, c.names)
	var missing *noJob
	if err != nil && !errors.As(err, &missing) {
		return err
	}
	var failed error
	for _, j := range jobs {
		st := j.status()
		if !st.final() {
			if all {
				continue
			}
			if !c.bool("force") {
				failed = fmt.Errorf("rm %s: it is %s on the swarm\nhint: 'agt stop swarm:%s' first, or 'agt rm --force swarm:%s'", st.Name, st.State, st.Name, st.Name)
				say(call, failed.Error())
				continue
			}
		}
		if _, err := s.docker(ctx, nil, "service", "rm", j.svc.ID); err != nil {
			return err
		}
		removed := []string{"service"}
		if n, err := s.removeSecrets(ctx, st.Name); err != nil {
			say(call, fmt.Sprintf("rm %s: its prompt's secret stays: %v", st.Name, err))
		} else if n > 0 {
			removed = append(removed, "prompt secret")
		}
		if f, _ := c.get("format"); f == "table" {
			fmt.Fprintf(call.Stdout, "removed %s: %s\n", st.Name, strings.Join(removed, ", "))
			continue
		}
		line, _ := json.Marshal(map[string]any{"name": st.Name, "removed": removed})
		fmt.Fprintf(call.Stdout, "%s\n", line)
	}
	if missing != nil {
		return missing
	}
	if failed != nil {
		return exitCode(1)
	}
	return nil
}
