package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestHostsTable(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "xdg"))
	user := filepath.Join(dir, "xdg", "agt", "config.toml")
	if err := os.MkdirAll(filepath.Dir(user), 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(user, "[hosts]\nbox1 = \"dev@box1\"\nbox2 = \"old\"\n")
	proj := filepath.Join(dir, "proj")
	os.Mkdir(proj, 0o700)
	write(filepath.Join(proj, "agt.toml"), "[hosts.box2]\nssh = \"box2.example\"\nrun_dir = \"/srv/agt\"\nagt = \"~/bin/agt\"\n[hosts.box3]\n")
	c, err := Load(proj)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Host{
		"box1": {Name: "box1", SSH: "dev@box1"},
		"box2": {Name: "box2", SSH: "box2.example", RunDir: "/srv/agt", Agt: "~/bin/agt"},
		"box3": {Name: "box3", SSH: "box3"},
	}
	if !reflect.DeepEqual(c.Hosts, want) {
		t.Errorf("hosts = %+v\nwant %+v", c.Hosts, want)
	}
	if got := c.HostNames(); !reflect.DeepEqual(got, []string{"box1", "box2", "box3"}) {
		t.Errorf("HostNames = %q", got)
	}
}

func TestHostsTableErrors(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for _, tt := range []struct{ toml, want string }{
		{"[hosts]\nall = \"x\"", `host name "all" is reserved`},
		{"[hosts]\nlocal = \"x\"", `host name "local" is reserved`},
		{"[hosts]\nBox = \"x\"", `host name "Box"`},
		{"[hosts]\n\"a:b\" = \"x\"", `host name "a:b"`},
		{"[hosts]\nb = \"-oProxyCommand=x\"", `starts with '-'`},
		{"[hosts]\nb = \"a b\"", `space or control`},
		{"[hosts]\nb = 3", `want an ssh destination`},
		{"[hosts.b]\nport = \"22\"", `unknown key port`},
		{"[hosts.b]\nrun_dir = \"rel/dir\"", `want an absolute path or one under ~/`},
		{"[hosts.b]\nagt = \"/\"", `want a path below it`},
		{"[hosts.b]\nagt = 1", `agt: want a string`},
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "agt.toml"), []byte(tt.toml), 0o600)
		_, err := Load(dir)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: err %v, want %q", tt.toml, err, tt.want)
		}
	}
}
