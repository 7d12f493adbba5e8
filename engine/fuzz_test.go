package engine

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"agt/config"
)

// FuzzSpawnJob: whatever spawn's words, a job that is made runs agt spawn --wait --rm --json
// with its name once and its command after --, and never gives docker a word before the image
// that the user did not configure (an image that is an option, a flag that is not one).
func FuzzSpawnJob(f *testing.F) {
	f.Add("spawn\x00--agent=claude\x00--timeout=5\x00fix\x00--\x00sh\x00-c\x00echo hi", "the task", "agents:1")
	f.Add("spawn\x00--tty\x00fix", "", "agents:1")
	f.Add("spawn\x00--image=--privileged\x00fix\x00--\x00x", "", "")
	f.Add("spawn\x00--prompt-file=-\x00fix", "a: b\n---", "agents:1")
	f.Fuzz(func(t *testing.T, words, prompt, image string) {
		args := strings.Split(words, "\x00")
		j, err := SpawnJob(args, strings.NewReader(prompt), config.Engine{Name: config.EngineSwarm, Image: image}, 30*time.Second)
		if err != nil {
			return
		}
		cmd := j.Command()
		if !slices.Equal(cmd[:5], []string{"agt", "spawn", "--wait", "--rm", "--json"}) {
			t.Fatalf("command %q", cmd)
		}
		if config.ValidImage(j.Image) != nil {
			t.Fatalf("image %q passed", j.Image)
		}
		for _, fl := range j.Flags {
			if !strings.HasPrefix(fl, "--") || !strings.Contains(fl, "=") {
				t.Fatalf("flag %q in %q", fl, cmd)
			}
		}
		if j.EngineGrace() < GraceMargin {
			t.Fatalf("grace %v", j.EngineGrace())
		}
		create := (&Swarm{Engine: j.Engine}).serviceCreate(j, "")
		at := slices.Index(create, j.Image)
		if at < 0 || !slices.Equal(create[at+1:], cmd) {
			t.Fatalf("docker %q does not end with image %q and %q", create, j.Image, cmd)
		}
	})
}

// FuzzParseServices: whatever docker service inspect prints, parsing it ends, and a job's
// status is one of agt's states.
func FuzzParseServices(f *testing.F) {
	b, _ := os.ReadFile("testdata/swarm-services.json")
	f.Add(b)
	f.Add([]byte(`[{"ID":"s","Spec":{"Name":"x","Labels":{"agt.agent":"x"}}}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		svcs, err := parseServices(b)
		if err != nil {
			return
		}
		for _, j := range jobsOf(svcs, nil) {
			if st := j.status(); st.State == "" {
				t.Fatalf("no state for %+v", j)
			}
		}
	})
}
