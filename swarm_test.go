package main

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"agt/pids"
)

// The swarm of the swarm_* scripts: two dockerds (Debian's docker.io), each with its own data
// root, exec root, pidfile, socket and cgroup parent, --storage-driver vfs, no iptables and no
// default bridge, each in a network namespace of its own (ip netns, a veth pair between the
// two), entered with nsenter --net so that it keeps the machine's /sys and its cgroups. The
// first inits a swarm and the second joins it as a worker; agt's test image (a static agt,
// built here with CGO_ENABLED=0, and busybox, imported from a tarball: no registry) is loaded
// into both. It starts once, for the first swarm script, and ends when TestScripts does, and
// with the test binary if that dies (Pdeathsig from a thread that lives as long as the
// swarm). Everything is killed, unmounted and removed at the end, and what a test binary that
// died left is swept at the next start.

// testSwarmImage is agt's test image, in both nodes.
const testSwarmImage = "agt-test:1"

type testNode struct {
	name, dir, ns, addr, sock string
}

type testSwarm struct {
	dir     string // /tmp/agt-swarm-PID-*: roots, sockets, the image's tarball
	prefix  string // agt-swarm-PID: namespaces, cgroups
	nodes   []*testNode
	stop    chan struct{}
	stopped chan struct{}
	reaper  *exec.Cmd // sweeps the swarm when this test binary ends, however it ends
	alive   io.Closer // the reaper's stdin: closed, or gone with this process, it sweeps
}

// swarmReaperEnv makes the test binary a reaper: it waits for its stdin to close (the test
// binary that started it has ended, or tore the swarm down), then sweeps the swarm named by
// the variable (PREFIX:DIR), so that a test binary killed outright (SIGKILL, a timeout)
// leaves no dockerd's containerd, shim, job, namespace or mount behind.
const swarmReaperEnv = "AGT_TEST_SWARM_REAPER"

func init() {
	if v, ok := os.LookupEnv(swarmReaperEnv); ok {
		prefix, dir, _ := strings.Cut(v, ":")
		io.Copy(io.Discard, os.Stdin)
		sweepSwarm(prefix, dir)
		os.Exit(0)
	}
}

// startReaper starts the swarm's reaper, in a process group of its own (a Ctrl-C that ends
// the tests does not end it before it sweeps).
func (s *testSwarm) startReaper() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), swarmReaperEnv+"="+s.prefix+":"+s.dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	w, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	s.reaper, s.alive = cmd, w
	return nil
}

// swarmFixture: the swarm, started once (per run of TestScripts). Why there is none is said
// once, here (go test -v): the scripts' skip line is fixed.
var swarmFixture = &fixture[*testSwarm]{
	start: func() (*testSwarm, error) {
		s, err := newSwarm()
		if err != nil {
			fmt.Fprintf(os.Stderr, "swarm_* scripts skip: %v\n", err)
		}
		return s, err
	},
	stop: func(s *testSwarm) {
		close(s.stop)
		<-s.stopped
	},
}

func newSwarm() (*testSwarm, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("the swarm needs root (dockerd, network namespaces)")
	}
	for _, prog := range []string{"dockerd", "docker", "busybox", "ip", "nsenter", "go"} {
		if _, err := exec.LookPath(prog); err != nil {
			return nil, fmt.Errorf("the swarm needs %s (Debian: docker.io, busybox-static, iproute2, util-linux)", prog)
		}
	}
	if out, err := exec.Command("busybox").CombinedOutput(); err != nil || !bytes.Contains(out, []byte("BusyBox")) || !static("busybox") {
		return nil, fmt.Errorf("the swarm's image needs a static busybox (Debian: busybox-static)")
	}
	sweepStaleSwarms()
	prefix := fmt.Sprintf("agt-swarm-%d", os.Getpid())
	dir, err := os.MkdirTemp("", prefix+"-")
	if err != nil {
		return nil, err
	}
	s := &testSwarm{dir: dir, prefix: prefix, stop: make(chan struct{}), stopped: make(chan struct{})}
	block := os.Getpid() % 16384 * 4 // a /30 of 10.202.0.0/16 of its own: tests at once do not clash
	for i, name := range []string{"node1", "node2"} {
		s.nodes = append(s.nodes, &testNode{name: name, dir: filepath.Join(dir, name), ns: prefix + "-" + name,
			addr: fmt.Sprintf("10.202.%d.%d", block>>8, block&255+1+i), sock: filepath.Join(dir, name, "docker.sock")})
	}
	fail := func(err error) (*testSwarm, error) {
		s.teardown(nil)
		return nil, err
	}
	if err := s.startReaper(); err != nil {
		return fail(err)
	}
	if err := s.buildImage(); err != nil {
		return fail(err)
	}
	a, b := s.nodes[0], s.nodes[1]
	vethA, vethB := fmt.Sprintf("as%da", os.Getpid()%100000), fmt.Sprintf("as%db", os.Getpid()%100000)
	for _, args := range [][]string{
		{"netns", "add", a.ns}, {"netns", "add", b.ns},
		{"link", "add", vethA, "netns", a.ns, "type", "veth", "peer", "name", vethB, "netns", b.ns},
		{"-n", a.ns, "addr", "add", a.addr + "/30", "dev", vethA}, {"-n", b.ns, "addr", "add", b.addr + "/30", "dev", vethB},
		{"-n", a.ns, "link", "set", vethA, "up"}, {"-n", b.ns, "link", "set", vethB, "up"},
		{"-n", a.ns, "link", "set", "lo", "up"}, {"-n", b.ns, "link", "set", "lo", "up"},
	} {
		if err := run("ip", args...); err != nil {
			return fail(err)
		}
	}
	started := make(chan error, 1)
	go s.serve(started)
	if err := <-started; err != nil {
		<-s.stopped
		return nil, err
	}
	return s, nil
}

// static reports whether the program prog is a static executable: one with no interpreter.
func static(prog string) bool {
	path, err := exec.LookPath(prog)
	if err != nil {
		return false
	}
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false
		}
	}
	return true
}

// buildImage builds a static agt from this module and makes agt's test image of it and
// busybox: a tarball with /bin (busybox and its applets, agt), /tmp and /root.
func (s *testSwarm) buildImage() error {
	root := filepath.Join(s.dir, "image")
	bin := filepath.Join(root, "bin")
	for _, d := range []string{bin, filepath.Join(root, "root"), filepath.Join(root, "tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	os.Chmod(filepath.Join(root, "tmp"), 0o1777)
	build := exec.Command("go", "build", "-tags", "urfave_cli_no_docs", "-o", filepath.Join(bin, "agt"), ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build a static agt for the swarm's image: %v\n%s", err, out)
	}
	busybox, _ := exec.LookPath("busybox")
	b, err := os.ReadFile(busybox)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(bin, "busybox"), b, 0o755); err != nil {
		return err
	}
	for _, applet := range []string{"sh", "sleep", "echo", "cat", "true", "false", "kill", "seq", "printf", "env", "ls"} {
		if err := os.Symlink("busybox", filepath.Join(bin, applet)); err != nil {
			return err
		}
	}
	return run("tar", "-C", root, "-cf", filepath.Join(s.dir, "image.tar"), ".")
}

// dockerd is the command line of node n's dockerd.
func (s *testSwarm) dockerd(n *testNode) *exec.Cmd {
	return exec.Command("nsenter", "--net=/run/netns/"+n.ns, "dockerd",
		"--storage-driver", "vfs", "--data-root", filepath.Join(n.dir, "root"), "--exec-root", filepath.Join(n.dir, "exec"),
		"--pidfile", filepath.Join(n.dir, "dockerd.pid"), "--host", "unix://"+n.sock,
		"--cgroup-parent", "/"+s.prefix+"-"+n.name, "--iptables=false", "--ip6tables=false", "--bridge=none",
		"--log-level", "warn")
}

// docker runs the docker CLI against node n.
func (s *testSwarm) docker(n *testNode, stdin []byte, args ...string) (string, error) {
	cmd := exec.Command("docker", args...)
	cmd.Env = append(os.Environ(), "DOCKER_HOST=unix://"+n.sock, "DOCKER_CONFIG="+filepath.Join(s.dir, "docker-config"))
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("docker %s on %s: %v\n%s", strings.Join(args, " "), n.name, err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// serve starts both dockerds from a thread of its own, which lives until stop (Pdeathsig),
// makes the swarm and loads the image.
func (s *testSwarm) serve(started chan<- error) {
	runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
	defer close(s.stopped)
	var procs []*exec.Cmd
	defer func() { s.teardown(procs) }()
	for _, n := range s.nodes {
		os.MkdirAll(n.dir, 0o700)
		logf, err := os.Create(filepath.Join(n.dir, "dockerd.log"))
		if err != nil {
			started <- err
			return
		}
		cmd := s.dockerd(n)
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		err = cmd.Start()
		logf.Close()
		if err != nil {
			started <- err
			return
		}
		procs = append(procs, cmd)
	}
	fail := func(err error) {
		for _, n := range s.nodes {
			log, _ := os.ReadFile(filepath.Join(n.dir, "dockerd.log"))
			err = fmt.Errorf("%v\n%s's dockerd:\n%s", err, n.name, log)
		}
		started <- err
	}
	for _, n := range s.nodes {
		deadline := time.Now().Add(60 * time.Second)
		for {
			if _, err := s.docker(n, nil, "version"); err == nil {
				break
			} else if time.Now().After(deadline) {
				fail(fmt.Errorf("dockerd of %s does not answer: %v", n.name, err))
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	a, b := s.nodes[0], s.nodes[1]
	steps := []func() error{
		func() error {
			_, err := s.docker(a, nil, "swarm", "init", "--advertise-addr", a.addr, "--listen-addr", a.addr+":2377")
			return err
		},
		func() error {
			token, err := s.docker(a, nil, "swarm", "join-token", "--quiet", "worker")
			if err != nil {
				return err
			}
			_, err = s.docker(b, nil, "swarm", "join", "--token", token, "--advertise-addr", b.addr, "--listen-addr", b.addr+":2377", a.addr+":2377")
			return err
		},
	}
	tarball, err := os.ReadFile(filepath.Join(s.dir, "image.tar"))
	if err != nil {
		fail(err)
		return
	}
	for _, n := range s.nodes {
		steps = append(steps, func() error {
			_, err := s.docker(n, tarball, "import", "--change", "ENV PATH=/bin", "--change", "ENV HOME=/root",
				"--change", "WORKDIR /root", "-", testSwarmImage)
			return err
		})
	}
	for _, step := range steps {
		if err := step(); err != nil {
			fail(err)
			return
		}
	}
	// Both nodes ready, so that the swarm may place a job on either.
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, err := s.docker(a, nil, "node", "ls", "--format", "{{.Status}}")
		if err == nil && strings.Count(out, "Ready") == 2 {
			break
		}
		if time.Now().After(deadline) {
			fail(fmt.Errorf("the swarm's nodes are not ready: %s %v", out, err))
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	started <- nil
	<-s.stop
}

// teardown kills the dockerds and everything they started (containerd, its shims, the jobs'
// processes: whatever runs in their network namespaces, cgroups or under the swarm's
// directory), unmounts what they mounted, and removes the namespaces, cgroups and directory.
func (s *testSwarm) teardown(procs []*exec.Cmd) {
	for _, p := range procs {
		p.Process.Kill()
		p.Wait()
	}
	sweepSwarm(s.prefix, s.dir)
	if s.reaper != nil {
		s.alive.Close()
		s.reaper.Wait()
	}
}

// sweepSwarm ends what a swarm of prefix (agt-swarm-PID) with its files in dir left.
func sweepSwarm(prefix, dir string) {
	cgroups, _ := filepath.Glob("/sys/fs/cgroup/*/" + prefix + "-*")
	if more, _ := filepath.Glob("/sys/fs/cgroup/" + prefix + "-*"); len(more) > 0 {
		cgroups = append(cgroups, more...)
	}
	killWhere(func(p pids.Proc) bool {
		if dir != "" {
			if cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.PID)); err == nil && bytes.Contains(cmd, []byte(dir)) {
				return true
			}
		}
		cg, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", p.PID))
		return bytes.Contains(cg, []byte("/"+prefix+"-"))
	})
	namespaces, _ := filepath.Glob("/run/netns/" + prefix + "-*")
	for _, ns := range namespaces {
		removeNamespace(filepath.Base(ns))
	}
	if dir != "" {
		unmountUnder(dir)
		os.RemoveAll(dir)
	}
	// Deepest first: a cgroup goes once its children have.
	sort.Slice(cgroups, func(i, j int) bool { return len(cgroups[i]) > len(cgroups[j]) })
	for _, cg := range cgroups {
		removeCgroupTree(cg)
	}
}

// removeCgroupTree removes a cgroup directory and its children, deepest first.
func removeCgroupTree(dir string) {
	var dirs []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		syscall.Rmdir(dirs[i])
	}
}

// unmountUnder detaches every mount under dir (dockerd's data root and the network
// namespaces it binds), deepest first.
func unmountUnder(dir string) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var points []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			points = append(points, f[4])
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	for _, p := range points {
		syscall.Unmount(p, syscall.MNT_DETACH)
	}
}

// sweepStaleSwarms ends the swarms of test binaries that died without teardown.
func sweepStaleSwarms() {
	var prefixes []string
	for _, pattern := range []string{"/run/netns/agt-swarm-*", "/sys/fs/cgroup/*/agt-swarm-*", filepath.Join(os.TempDir(), "agt-swarm-*")} {
		matches, _ := filepath.Glob(pattern)
		for _, m := range matches {
			f := strings.SplitN(filepath.Base(m), "-", 4)
			if len(f) < 3 {
				continue
			}
			pid, err := strconv.Atoi(f[2])
			if err != nil || pid == os.Getpid() {
				continue
			}
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
				continue // a test binary that runs
			}
			prefixes = append(prefixes, "agt-swarm-"+f[2])
		}
	}
	for _, p := range prefixes {
		dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), p+"-*"))
		sweepSwarm(p, "")
		for _, d := range dirs {
			sweepSwarm(p, d)
		}
	}
}

// setupSwarmScript gives a swarm_* script the swarm: DOCKER_HOST is its manager, and
// [engines.swarm] in agt's user config names the test image and labels everything the
// script submits, so that the script's end removes it.
func setupSwarmScript(env *testscript.Env) error {
	if !strings.HasPrefix(filepath.Base(env.WorkDir), "script-swarm_") {
		return nil
	}
	s, err := swarmFixture.get()
	if err != nil {
		return nil // [!swarm] skips the script
	}
	label := fmt.Sprintf("%s-%d", strings.TrimPrefix(filepath.Base(env.WorkDir), "script-"), os.Getpid())
	if len(label) > 63 {
		label = label[len(label)-63:]
	}
	env.Setenv("DOCKER_HOST", "unix://"+s.nodes[0].sock)
	env.Setenv("DOCKER_CONFIG", filepath.Join(env.WorkDir, ".docker"))
	env.Setenv("SWARM_LABEL", label)
	env.Defer(func() {
		a := s.nodes[0]
		if ids, err := s.docker(a, nil, "service", "ls", "--quiet", "--filter", "label=agt-test-script="+label); err == nil && ids != "" {
			s.docker(a, nil, append([]string{"service", "rm"}, strings.Fields(ids)...)...)
		}
		if ids, err := s.docker(a, nil, "secret", "ls", "--quiet", "--filter", "label=agt-test-script="+label); err == nil && ids != "" {
			s.docker(a, nil, append([]string{"secret", "rm"}, strings.Fields(ids)...)...)
		}
	})
	dir := filepath.Join(env.WorkDir, ".config", "agt")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	cfg := fmt.Sprintf("[engines.swarm]\nimage = %q\nlabels = { agt-test-script = %q }\n", testSwarmImage, label)
	return os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg), 0o600)
}
