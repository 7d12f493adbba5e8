package engine

import (
	"os"
	"testing"
	"time"
)

// The captures in testdata are docker service inspect and docker inspect of the tasks of a
// 2-node swarm (Debian's docker.io 20.10): agt's jobs that exited 0 (ok), 3 (bad), run, were
// stopped by agt stop (stopped), wait for a node (pend), and whose image does not exist
// (rej); and a service that is not agt's (other).
func loadJobs(t *testing.T) map[string]*job {
	t.Helper()
	b, err := os.ReadFile("testdata/swarm-services.json")
	if err != nil {
		t.Fatal(err)
	}
	svcs, err := parseServices(b)
	if err != nil {
		t.Fatal(err)
	}
	if b, err = os.ReadFile("testdata/swarm-tasks.json"); err != nil {
		t.Fatal(err)
	}
	tasks, err := parseTasks(b)
	if err != nil {
		t.Fatal(err)
	}
	// The replacement that a stop leaves waiting for no node, until the scale to 0.
	for _, tk := range tasks {
		if svcName(svcs, tk.ServiceID) == "stopped" {
			r := tk
			r.ID, r.CreatedAt, r.DesiredState = "replacement", tk.CreatedAt.Add(time.Second), "running"
			r.Status.State, r.Status.ContainerStatus, r.NodeID = "pending", nil, ""
			tasks = append(tasks, r)
			break
		}
	}
	out := map[string]*job{}
	for _, j := range jobsOf(svcs, tasks) {
		out[j.name()] = j
	}
	return out
}

func svcName(svcs []service, id string) string {
	for _, s := range svcs {
		if s.ID == id {
			return s.Spec.Name
		}
	}
	return ""
}

func TestJobStatus(t *testing.T) {
	jobs := loadJobs(t)
	if _, ok := jobs["other"]; ok {
		t.Error("a service without agt's label is listed")
	}
	code := func(n int) *int { return &n }
	for _, tc := range []struct {
		name, state, reason string
		exit                *int
	}{
		{"ok", "exited", "exit code 0", code(0)},
		{"bad", "failed", "exit code 3", code(3)},
		{"run", "running", "", nil},
		{"stopped", "stopped", "stop", code(143)},
		{"pend", "starting", "pending: no suitable node (insufficient resources on 2 nodes)", nil},
		{"rej", "failed", "rejected: No such image: nosuchimage:1", nil},
	} {
		j, ok := jobs[tc.name]
		if !ok {
			t.Errorf("%s: not listed", tc.name)
			continue
		}
		st := j.status()
		if st.State != tc.state || st.Reason != tc.reason || (st.ExitCode == nil) != (tc.exit == nil) || st.ExitCode != nil && *st.ExitCode != *tc.exit {
			t.Errorf("%s: %s (%s) exit %v, want %s (%s) exit %v", tc.name, st.State, st.Reason, st.ExitCode, tc.state, tc.reason, tc.exit)
		}
		if st.final() != (tc.state != "running" && tc.state != "starting") {
			t.Errorf("%s: final = %v", tc.name, st.final())
		}
	}
	// A task whose container is made but not yet running (docker says starting, exit code 0):
	// it has no exit code yet, whatever docker's zero says.
	r := *jobs["run"]
	tk := *r.task
	tk.Status.State = "starting"
	r.task = &tk
	if st := r.status(); st.State != "starting" || st.ExitCode != nil {
		t.Errorf("a starting task: %s exit %v, want starting and no exit code", st.State, st.ExitCode)
	}
	// A job that waits for a node says so at spawn; one pending on its way to a node does not.
	if st := jobs["pend"].status(); !waitsForNode(st) {
		t.Errorf("pend: %s (%s) does not wait for a node", st.State, st.Reason)
	}
	tk.Status.State, tk.Status.Err = "pending", ""
	if st := r.status(); waitsForNode(st) {
		t.Errorf("a task pending without a reason: %s (%s) waits for a node", st.State, st.Reason)
	}
	if id := jobs["stopped"].task.ID; id == "replacement" {
		t.Error("the replacement that never ran was taken for the job's task")
	}
}

func TestJobStatusStopAsked(t *testing.T) {
	jobs := loadJobs(t)
	run := jobs["run"]
	run.svc.Spec.Labels[labelStop] = "true"
	if st := run.status(); st.State != "stopping" || st.Reason != "stop" {
		t.Errorf("a job agt stop asked to end: %s (%s)", st.State, st.Reason)
	}
	none := &job{svc: run.svc}
	if st := none.status(); st.State != "stopped" {
		t.Errorf("a stopped job without a task: %s", st.State)
	}
	none.svc.Spec.Labels = map[string]string{LabelAgent: run.name()}
	if st := none.status(); st.State != "starting" || st.Reason != "no task yet" {
		t.Errorf("a new job without a task: %s (%s)", st.State, st.Reason)
	}
}

func FuzzParseTasks(f *testing.F) {
	b, _ := os.ReadFile("testdata/swarm-tasks.json")
	f.Add(b)
	f.Add([]byte(`[{"ID":"x","Status":{"State":"running","ContainerStatus":null}}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tasks, err := parseTasks(b)
		if err != nil {
			return
		}
		svcs := []service{{ID: "s"}}
		svcs[0].Spec.Name, svcs[0].Spec.Labels = "x", map[string]string{LabelAgent: "x"}
		for i := range tasks {
			tasks[i].ServiceID = "s"
		}
		for _, j := range jobsOf(svcs, tasks) {
			j.status()
		}
	})
}
