package engine

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"time"
)

// The swarm's view of agt's jobs: each service that carries agt's label, and the task that
// ran it. A pure function of what docker inspect prints, tested on its own.

// service is what agt reads of a service: docker service inspect's fields.
type service struct {
	ID        string    `json:"ID"`
	CreatedAt time.Time `json:"CreatedAt"`
	Spec      struct {
		Name         string            `json:"Name"`
		Labels       map[string]string `json:"Labels"`
		TaskTemplate struct {
			ContainerSpec struct {
				StopGracePeriod int64 `json:"StopGracePeriod"` // nanoseconds
			} `json:"ContainerSpec"`
		} `json:"TaskTemplate"`
	} `json:"Spec"`
}

// task is what agt reads of a task: docker inspect's fields.
type task struct {
	ID           string    `json:"ID"`
	ServiceID    string    `json:"ServiceID"`
	NodeID       string    `json:"NodeID"`
	CreatedAt    time.Time `json:"CreatedAt"`
	DesiredState string    `json:"DesiredState"`
	Status       struct {
		Timestamp       time.Time `json:"Timestamp"`
		State           string    `json:"State"`
		Message         string    `json:"Message"`
		Err             string    `json:"Err"`
		ContainerStatus *struct {
			ContainerID string `json:"ContainerID"`
			ExitCode    int    `json:"ExitCode"`
		} `json:"ContainerStatus"`
	} `json:"Status"`
}

// ran reports whether the task got a container: it is the one that ran the agent.
func (t *task) ran() bool {
	return t.Status.ContainerStatus != nil && t.Status.ContainerStatus.ContainerID != ""
}

// job is one agent on the swarm: its service, and the task that runs or ran it (nil before
// the swarm made one).
type job struct {
	svc  service
	task *task
}

func (j *job) name() string { return j.svc.Spec.Labels[LabelAgent] }

// stopAsked reports whether agt stop asked this job to end (a label on the service).
func (j *job) stopAsked() bool { return j.svc.Spec.Labels[labelStop] != "" }

// labelStop marks a service whose job agt stop ended.
const labelStop = "agt.stop"

// jobsOf pairs services with their tasks. A service counts only when agt's label names it as
// it is named; its task is the latest that got a container, else the latest.
func jobsOf(svcs []service, tasks []task) []*job {
	byService := map[string][]*task{}
	for i := range tasks {
		t := &tasks[i]
		byService[t.ServiceID] = append(byService[t.ServiceID], t)
	}
	var out []*job
	for _, s := range svcs {
		if s.Spec.Name == "" || s.Spec.Labels[LabelAgent] != s.Spec.Name {
			continue // not agt's
		}
		j := &job{svc: s}
		ts := byService[s.ID]
		sort.SliceStable(ts, func(a, b int) bool { return ts[a].CreatedAt.Before(ts[b].CreatedAt) })
		for _, t := range ts {
			if t.ran() || j.task == nil || !j.task.ran() {
				j.task = t
			}
		}
		out = append(out, j)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].name() < out[b].name() })
	return out
}

// parseServices and parseTasks read docker inspect's JSON arrays.
func parseServices(b []byte) ([]service, error) {
	var s []service
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("read docker service inspect: %v", err)
	}
	return s, nil
}

func parseTasks(b []byte) ([]task, error) {
	var t []task
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("read docker inspect of tasks: %v", err)
	}
	return t, nil
}

// Status is a job as agt ps shows an agent: its state in agt's words.
type Status struct {
	Name     string    `json:"name"`
	Kind     string    `json:"kind"`
	State    string    `json:"state"`
	Reason   string    `json:"reason"`
	Error    string    `json:"error"`
	ExitCode *int      `json:"exit_code"`
	Started  time.Time `json:"started"`
	Since    time.Time `json:"since"`
	Updated  time.Time `json:"updated"`
	// What agt ps always has, which a job cannot tell from outside.
	PID      int      `json:"pid"`
	Restarts int      `json:"restarts"`
	Turns    int      `json:"turns"`
	CostUSD  *float64 `json:"cost_usd"`
	Dir      string   `json:"dir"`
	// The swarm's own names for it.
	Engine  string `json:"engine"`
	Service string `json:"service"`
	Task    string `json:"task,omitempty"`
	Node    string `json:"node,omitempty"`
	// SwarmState is the task's state in the swarm's words (pending, running, complete…).
	SwarmState string `json:"swarm_state,omitempty"`
}

// final reports whether the job has ended: its task will not run again.
func (s *Status) final() bool {
	switch s.State {
	case "exited", "failed", "stopped", "lost":
		return true
	}
	return false
}

// status maps a job onto agt's states: what the swarm says of its task, and whether agt
// stop asked it to end.
func (j *job) status() Status {
	s := Status{Name: j.name(), Kind: j.svc.Spec.Labels[LabelKind], Engine: "swarm", Service: j.svc.ID,
		Started: j.svc.CreatedAt, Since: j.svc.CreatedAt, Updated: j.svc.CreatedAt}
	t := j.task
	if t == nil {
		s.State, s.Reason = "starting", "no task yet"
		if j.stopAsked() {
			s.State, s.Reason = "stopped", "stop"
		}
		return s
	}
	s.Task, s.Node, s.SwarmState = t.ID, t.NodeID, t.Status.State
	s.Since, s.Updated = t.Status.Timestamp, t.Status.Timestamp
	// Only a task that ran and ended has an exit code: docker shows 0 for a container that is
	// made but not started yet.
	if t.ran() && slices.Contains([]string{"complete", "failed", "shutdown", "remove", "rejected", "orphaned"}, t.Status.State) {
		if code := t.Status.ContainerStatus.ExitCode; code >= 0 {
			s.ExitCode = &code
		}
	}
	switch t.Status.State {
	case "new", "pending", "assigned", "accepted", "preparing", "ready", "starting":
		s.State, s.Reason = "starting", t.Status.State
		if t.Status.Err != "" {
			s.Reason += ": " + t.Status.Err // no suitable node (insufficient resources on 2 nodes)
		}
		if j.stopAsked() {
			s.State, s.Reason = "stopping", "stop"
		}
	case "running":
		s.State = "running"
		if j.stopAsked() || t.DesiredState == "shutdown" || t.DesiredState == "remove" {
			s.State, s.Reason = "stopping", "stop"
		}
	case "complete":
		s.State, s.Reason = "exited", "exit code 0"
	case "failed":
		s.State, s.Reason, s.Error = "failed", t.Status.Err, t.Status.Err
		if s.ExitCode != nil {
			s.Reason = fmt.Sprintf("exit code %d", *s.ExitCode)
		}
	case "shutdown", "remove":
		s.State, s.Reason = "stopped", "stop"
		if !j.stopAsked() {
			s.Reason = "shut down by the swarm"
		}
	case "rejected":
		s.State, s.Reason, s.Error = "failed", "rejected: "+t.Status.Err, t.Status.Err
	case "orphaned":
		s.State, s.Reason = "lost", "orphaned: its node is gone"
	default:
		s.State, s.Reason = "unknown", "swarm state "+t.Status.State
	}
	return s
}
