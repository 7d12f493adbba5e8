package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEngines(t *testing.T) {
	for _, tc := range []struct {
		name, user, project string
		want                func(c *Config) bool
		err                 string
	}{
		{name: "none", want: func(c *Config) bool { return !c.Engine(EngineSwarm).Set && c.Engine(EngineSwarm).Name == EngineSwarm }},
		{
			name: "swarm", project: "[engines.swarm]\nimage = \"agents:1\"\nmemory = \"2GiB\"\nmemory_limit = 4294967296\ncpus = 1.5\nlabels = { team = \"core\" }\nenv = [\"ANTHROPIC_API_KEY\"]\nargs = [\"--constraint\", \"node.labels.agents==yes\"]\n",
			want: func(c *Config) bool {
				e := c.Engine(EngineSwarm)
				return e.Set && e.Image == "agents:1" && e.Memory == 2<<30 && e.MemoryLimit == 4<<30 && e.CPUs == 1.5 &&
					e.Labels["team"] == "core" && e.Env[0] == "ANTHROPIC_API_KEY" && len(e.Args) == 2
			},
		},
		{
			name: "merged key by key", user: "[engines.k8s]\nimage = \"agents:1\"\nnamespace = \"agents\"\n", project: "[engines.k8s]\nmemory = \"512MiB\"\ncpus = 2\n",
			want: func(c *Config) bool {
				e := c.Engine(EngineK8s)
				return e.Image == "agents:1" && e.Namespace == "agents" && e.Memory == 512<<20 && e.CPUs == 2
			},
		},
		{name: "unknown engine", project: "[engines.nomad]\nimage = \"x\"\n", err: "[engines.nomad]: not an engine agt knows"},
		{name: "unknown key", project: "[engines.swarm]\nimgae = \"x\"\n", err: "unknown key engines.swarm.imgae"},
		{name: "swarm key on k8s", project: "[engines.k8s]\ncontext = \"prod\"\n", err: "context: only [engines.swarm] takes it"},
		{name: "k8s key on swarm", project: "[engines.swarm]\nnamespace = \"a\"\n", err: "namespace: only [engines.k8s] takes it"},
		{name: "bad size", project: "[engines.swarm]\nmemory = \"lots\"\n", err: "memory: want a size"},
		{name: "limit below", project: "[engines.swarm]\nmemory = \"2GiB\"\nmemory_limit = \"1GiB\"\n", err: "memory_limit is below memory"},
		{name: "bad cpus", project: "[engines.swarm]\ncpus = 0\n", err: "cpus = 0"},
		{name: "image with a space", project: "[engines.swarm]\nimage = \"a b\"\n", err: "image: \"a b\" holds a space"},
		{name: "image as an option", project: "[engines.swarm]\nimage = \"--privileged\"\n", err: "starts with '-'"},
		{name: "agt's label", project: "[engines.swarm]\nlabels = { \"agt.agent\" = \"x\" }\n", err: "agt.* labels are agt's own"},
		{name: "bad label value", project: "[engines.k8s]\nlabels = { team = \"a b\" }\n", err: "labels.team"},
		{name: "agt's variable", project: "[engines.swarm]\nenv = [\"AGT_HOST\"]\n", err: "env: \"AGT_HOST\""},
		{name: "variable with a space", project: "[engines.swarm]\nenv = [\"A B\"]\n", err: "env: \"A B\""},
		{name: "label prefix with a space", project: "[engines.k8s]\nlabels = { \"a b/c\" = \"x\" }\n", err: "prefix is no DNS subdomain"},
		{name: "label with a prefix", project: "[engines.k8s]\nlabels = { \"example.com/team\" = \"core\" }\n", want: func(c *Config) bool { return c.Engine(EngineK8s).Labels["example.com/team"] == "core" }},
		{name: "a host named swarm", project: "[hosts]\nswarm = \"box\"\n", err: "host name \"swarm\" is reserved"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
			if tc.user != "" {
				os.MkdirAll(filepath.Join(dir, "config", "agt"), 0o700)
				os.WriteFile(filepath.Join(dir, "config", "agt", "config.toml"), []byte(tc.user), 0o600)
			}
			if tc.project != "" {
				os.WriteFile(filepath.Join(dir, "agt.toml"), []byte(tc.project), 0o600)
			}
			c, err := Load(dir)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.want(c) {
				t.Fatalf("engines = %+v", c.Engines)
			}
		})
	}
}
