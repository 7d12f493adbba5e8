package engine

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"agt/config"
)

func TestParseCall(t *testing.T) {
	c, err := parseCall([]string{"tail", "--follow", "--after=fix=3", "--json", "fix", "b*", "--", "x", "--y"})
	if err != nil {
		t.Fatal(err)
	}
	if c.verb != "tail" || !c.bool("follow") || !c.bool("json") || !slices.Equal(c.names, []string{"fix", "b*"}) || !slices.Equal(c.argv, []string{"x", "--y"}) {
		t.Fatalf("call = %+v", c)
	}
	if v, _ := c.get("after"); v != "fix=3" {
		t.Fatalf("after = %q", v)
	}
	if err := c.only("swarm", "follow", "json"); err == nil || !strings.Contains(err.Error(), "--after") {
		t.Fatalf("only = %v", err)
	}
	if _, err := parseCall([]string{"ps", "-q"}); err == nil {
		t.Fatal("a short flag passed")
	}
}

func TestSpawnJob(t *testing.T) {
	e := config.Engine{Name: "swarm", Image: "agents:1", Labels: map[string]string{"team": "core"}}
	j, err := SpawnJob([]string{"spawn", "--agent=claude", "--on=swarm", "--json", "--prompt-file=-", "fix", "--", "make", "-j4"},
		strings.NewReader("fix the bug"), e, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"agt", "spawn", "--wait", "--rm", "--json", "--agent=claude", "--timeout=30s", "--prompt-file=" + PromptPath, "fix", "--", "make", "-j4"}
	if !slices.Equal(j.Command(), want) {
		t.Fatalf("command = %q, want %q", j.Command(), want)
	}
	if j.Kind != "claude" || *j.Prompt != "fix the bug" || j.EngineGrace() != 40*time.Second || j.Image != "agents:1" {
		t.Fatalf("job = %+v", j)
	}
	l := j.Labels()
	if l[LabelAgent] != "fix" || l[LabelKind] != "claude" || l["team"] != "core" {
		t.Fatalf("labels = %v", l)
	}

	// -t is the job's grace, as agt's flags take it; --image beats agt.toml's.
	j, err = SpawnJob([]string{"spawn", "--timeout=5", "--image=other:2", "x"}, nil, e, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if j.Grace != 5*time.Second || j.Image != "other:2" || !slices.Contains(j.Command(), "--timeout=5") {
		t.Fatalf("job = %+v %q", j, j.Command())
	}

	for _, tc := range []struct {
		args []string
		e    config.Engine
		want string
	}{
		{[]string{"spawn", "--tty=true", "x"}, e, "--tty"},
		{[]string{"spawn", "--count=3", "x"}, e, "one agent is one job"},
		{[]string{"spawn", "x"}, config.Engine{Name: "swarm"}, "no image for swarm"},
		{[]string{"spawn", "--image=-x", "x"}, e, "--image"},
		{[]string{"spawn", "--prompt-file=task.md", "x"}, e, "secret"},
		{[]string{"spawn", "--timeout=soon", "x"}, e, "--timeout=soon"},
		{[]string{"spawn", "a", "b"}, e, "want one NAME"},
	} {
		_, err := SpawnJob(tc.args, nil, tc.e, time.Minute)
		var usage *UsageError
		if !errors.As(err, &usage) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("SpawnJob(%q) = %v, want a usage error with %q", tc.args, err, tc.want)
		}
	}
	// An empty prompt (--prompt '', an empty file) makes no secret, which docker refuses
	// empty: the job gets it as --prompt=, and an empty prompt file as it would here.
	j, err = SpawnJob([]string{"spawn", "--prompt-file=-", "x"}, strings.NewReader(""), e, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if cmd := j.Command(); !slices.Contains(cmd, "--prompt=") || slices.Contains(cmd, "--prompt-file="+PromptPath) {
		t.Errorf("an empty prompt: %q", cmd)
	}
	if out := SwarmCommands(j); strings.Contains(out, "secret") {
		t.Errorf("an empty prompt makes a secret:\n%s", out)
	}
	if out, err := Manifest(j); err != nil || bytes.Contains(out, []byte("Secret")) {
		t.Errorf("an empty prompt makes a Secret (%v):\n%s", err, out)
	}
	// --tty=false is no terminal.
	if _, err := SpawnJob([]string{"spawn", "--tty=false", "x"}, nil, e, time.Minute); err != nil {
		t.Errorf("--tty=false: %v", err)
	}
}

func TestServiceCreate(t *testing.T) {
	e := config.Engine{Name: "swarm", Image: "agents:1", Memory: 2 << 30, MemoryLimit: 4 << 30, CPUs: 1.5,
		Env: []string{"ANTHROPIC_API_KEY"}, Args: []string{"--constraint", "node.role==worker"}}
	p := "secret words"
	j := &Job{Name: "fix", Grace: 30 * time.Second, Image: "agents:1", Engine: e, Prompt: &p}
	args := (&Swarm{Engine: e}).serviceCreate(j, "agt-prompt-1")
	line := strings.Join(args, " ")
	for _, want := range []string{
		"service create --detach --quiet --name fix --restart-condition none --stop-signal SIGTERM --stop-grace-period 40s",
		"--label agt.agent=fix --container-label agt.agent=fix",
		"--reserve-memory 2147483648 --limit-memory 4294967296 --reserve-cpu 1.5",
		"--env ANTHROPIC_API_KEY --secret source=agt-prompt-1,target=agt-prompt,mode=0400 --constraint node.role==worker agents:1 agt spawn --wait --rm",
	} {
		if !strings.Contains(line, want) {
			t.Errorf("service create lacks %q:\n%s", want, line)
		}
	}
	if strings.Contains(line, p) {
		t.Errorf("the prompt is in argv: %s", line)
	}
}
