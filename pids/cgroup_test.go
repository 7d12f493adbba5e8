package pids

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestCgroup2Mount(t *testing.T) {
	hybrid := `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`
	unified := "29 23 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"
	container := "700 690 0:26 /docker/abc /sys/fs/cgroup ro,nosuid master:4 - cgroup2 cgroup rw\n"
	spaced := `50 23 0:26 / /mnt/my\040cgroups rw - cgroup2 none rw` + "\n"
	tests := []struct{ info, mount, root string }{
		{hybrid, "/sys/fs/cgroup/unified", "/"},
		{unified, "/sys/fs/cgroup", "/"},
		{container, "/sys/fs/cgroup", "/docker/abc"},
		{spaced, "/mnt/my cgroups", "/"},
	}
	for _, tt := range tests {
		mount, root, ok := cgroup2Mount(tt.info)
		if !ok || mount != tt.mount || root != tt.root {
			t.Errorf("cgroup2Mount = %q %q %v, want %q %q", mount, root, ok, tt.mount, tt.root)
		}
	}
	if _, _, ok := cgroup2Mount(strings.SplitN(hybrid, "\n", 4)[0]); ok {
		t.Error("cgroup2Mount found a cgroup v2 in a table without one")
	}
}

func TestBaseIn(t *testing.T) {
	tests := []struct{ mount, root, own, want string }{
		{"/sys/fs/cgroup/unified", "/", "/", "/sys/fs/cgroup/unified"},
		{"/sys/fs/cgroup", "/", "/user.slice/user-1000.slice/user@1000.service/app.slice/term.scope",
			"/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/term.scope"},
		// A supervisor started by an agent makes its cgroup beside that agent's, not in it.
		{"/sys/fs/cgroup", "/", "/u.slice/agt-outer-0a1b2c3d/agent", "/sys/fs/cgroup/u.slice"},
		{"/sys/fs/cgroup", "/", "/u.slice/agt-outer-0a1b2c3d/hooks/x", "/sys/fs/cgroup/u.slice"},
		{"/sys/fs/cgroup", "/docker/abc", "/docker/abc/sub", "/sys/fs/cgroup/sub"},
	}
	for _, tt := range tests {
		got, err := baseIn(tt.mount, tt.root, tt.own)
		if err != nil || string(got) != tt.want {
			t.Errorf("baseIn(%q, %q, %q) = %q, %v; want %q", tt.mount, tt.root, tt.own, got, err, tt.want)
		}
	}
	if _, err := baseIn("/sys/fs/cgroup", "/docker/abc", "/other"); err == nil {
		t.Error("baseIn accepted a cgroup outside the mount")
	}
}

func TestOpenContainmentRefuses(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "agt-x-12345678")
	for _, d := range []string{fake, fake + "/agent", fake + "/hooks"} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, root := range []string{fake, "relative/agt-x", "/sys/fs/cgroup", "/sys/fs/cgroup/../cgroup/agt-x", ""} {
		if _, err := OpenContainment(root); err == nil {
			t.Errorf("OpenContainment(%q) accepted it", root)
		}
	}
}

// contained makes a containment for the test, or skips where no cgroup v2 can be made.
func contained(t *testing.T) *Containment {
	t.Helper()
	if _, err := CgroupBase(); err != nil {
		t.Skipf("no cgroup here: %v", err)
	}
	c, err := Contain("test-" + strconv.Itoa(os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.End(5 * time.Second) })
	return c
}

// TestContainmentEndsWhatEscaped: a grandchild that left its session and its environment
// (setsid env -i), whose parent is gone, is still in the agent's cgroup: a Tree with the
// cgroup finds it, and End kills it and removes the cgroups.
func TestContainmentEndsWhatEscaped(t *testing.T) {
	c := contained(t)
	fd, err := c.Agent.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	pidFile := filepath.Join(t.TempDir(), "pid")
	// setsid -f forks, and its parent exits at once: the grandchild is an orphan.
	cmd := exec.Command("setsid", "-f", "env", "-i", "sh", "-c", `echo $$ > "$1"; exec sleep 300`, "sh", pidFile)
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(fd.Fd())}
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	var pid int
	deadline := time.Now().Add(10 * time.Second)
	for pid == 0 && time.Now().Before(deadline) {
		b, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		time.Sleep(10 * time.Millisecond)
	}
	id, err := Of(pid)
	if err != nil {
		t.Fatalf("the grandchild: %v", err)
	}
	defer Signal(id, syscall.SIGKILL)
	if !c.Root.Populated() || !c.Agent.Populated() || c.Hooks.Populated() {
		t.Errorf("populated: root %v agent %v hooks %v", c.Root.Populated(), c.Agent.Populated(), c.Hooks.Populated())
	}
	members, err := Tree{Cgroup: c.Agent}.Members()
	if err != nil || len(members) != 1 || members[0] != id {
		t.Errorf("members = %v, %v; want the grandchild %v", members, err, id)
	}
	if err := c.End(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if id.Alive() {
		t.Errorf("the grandchild %d outlived End", pid)
	}
	if _, err := os.Stat(string(c.Root)); !os.IsNotExist(err) {
		t.Errorf("the cgroup is still there: %v", err)
	}
}

// TestOpenContainmentOfContain: what Contain made, a record's path opens again.
func TestOpenContainmentOfContain(t *testing.T) {
	c := contained(t)
	got, err := OpenContainment(string(c.Root))
	if err != nil || *got != *c {
		t.Fatalf("OpenContainment = %+v, %v; want %+v", got, err, c)
	}
	if err := os.Mkdir(string(c.Agent)+"/made-by-the-agent", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := got.End(5 * time.Second); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkContainEnd: what containment adds to one agent's life, its start and its end: the
// cgroups made and opened, then killed, waited for and removed.
func BenchmarkContainEnd(b *testing.B) {
	if _, err := CgroupBase(); err != nil {
		b.Skipf("no cgroup here: %v", err)
	}
	for b.Loop() {
		c, err := Contain("bench")
		if err != nil {
			b.Fatal(err)
		}
		f, err := c.Agent.Open()
		if err != nil {
			b.Fatal(err)
		}
		f.Close()
		if err := c.End(time.Second); err != nil {
			b.Fatal(err)
		}
	}
}
