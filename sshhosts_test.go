package main

import (
	"bytes"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// The SSH hosts of the host_* scripts: two sshd's, each in a network namespace of its own
// (ip netns add, a veth pair to this one), with their own host keys, authorized_keys and
// sshd_config (MaxSessions left at its default, 10). The filesystem is shared; each host's
// root has a home of its own and /bin/sh for a shell (a private /etc/passwd, bound over the
// real one in the host's mount namespace), so that nothing of the machine's own dotfiles
// runs. They start once, for the first host script, and stop when TestScripts ends; sshd dies
// with the test binary too (Pdeathsig from a thread that lives as long as the hosts do).
// Stale namespaces of a test binary that died are removed at the next start.

// testHostNames are the hosts every host script has: h1, h2 (sshd's), and down (nothing
// listens: connection refused).
var testHostNames = []string{"h1", "h2"}

type testHost struct {
	name, ns, veth, addr, home string
}

type sshHosts struct {
	dir        string // keys, configs, homes
	key        string // the client's private key
	knownHosts string
	hosts      []*testHost
	stop       chan struct{} // closed: sshd's are killed and the namespaces removed
	stopped    chan struct{}
}

// sshHostsFixture: the hosts, started once (per run of TestScripts).
var sshHostsFixture = &fixture[*sshHosts]{start: newSSHHosts, stop: func(h *sshHosts) {
	close(h.stop)
	<-h.stopped
}}

func newSSHHosts() (*sshHosts, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("SSH hosts need root (network namespaces)")
	}
	sshd, err := exec.LookPath("sshd")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/sshd"); serr != nil {
			return nil, fmt.Errorf("SSH hosts need sshd (Debian's openssh-server)")
		}
		sshd = "/usr/sbin/sshd"
	}
	for _, prog := range []string{"ssh", "ssh-keygen", "ip"} {
		if _, err := exec.LookPath(prog); err != nil {
			return nil, fmt.Errorf("SSH hosts need %s", prog)
		}
	}
	sweepStaleNamespaces()
	dir, err := os.MkdirTemp("", "agt-hosts-")
	if err != nil {
		return nil, err
	}
	h := &sshHosts{dir: dir, key: filepath.Join(dir, "id"), knownHosts: filepath.Join(dir, "known_hosts"),
		stop: make(chan struct{}), stopped: make(chan struct{})}
	fail := func(err error) (*sshHosts, error) {
		h.teardown(nil)
		return nil, err
	}
	if err := run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "agt-test", "-f", h.key); err != nil {
		return fail(err)
	}
	pub, err := os.ReadFile(h.key + ".pub")
	if err != nil {
		return fail(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o600); err != nil {
		return fail(err)
	}
	os.MkdirAll("/run/sshd", 0o755) // sshd's privilege separation directory
	passwd, err := os.ReadFile("/etc/passwd")
	if err != nil {
		return fail(err)
	}
	bindir := strings.SplitN(os.Getenv("PATH"), string(os.PathListSeparator), 2)[0] // testscript's: agt, fakeagent
	var known bytes.Buffer
	for i, name := range testHostNames {
		th := &testHost{name: name, ns: fmt.Sprintf("agt-test-%d-%s", os.Getpid(), name),
			veth: fmt.Sprintf("at%d%s", os.Getpid()%100000, name), home: filepath.Join(dir, name, "home")}
		h.hosts = append(h.hosts, th)
		// A /30 of 10.201.0.0/16 of its own, by pid: tests running at once do not clash.
		block := (os.Getpid()*len(testHostNames) + i) % 16384 * 4
		local := fmt.Sprintf("10.201.%d.%d", block>>8, block&255+1)
		th.addr = fmt.Sprintf("10.201.%d.%d", block>>8, block&255+2)
		if err := os.MkdirAll(th.home, 0o700); err != nil {
			return fail(err)
		}
		hostKey := filepath.Join(dir, name, "host_key")
		if err := run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", hostKey); err != nil {
			return fail(err)
		}
		hpub, _ := os.ReadFile(hostKey + ".pub")
		fmt.Fprintf(&known, "%s %s", name, hpub)
		rootLine := regexp.MustCompile(`(?m)^root:.*$`)
		if err := os.WriteFile(filepath.Join(dir, name, "passwd"), rootLine.ReplaceAll(passwd, []byte("root:x:0:0:root:"+th.home+":/bin/sh")), 0o644); err != nil {
			return fail(err)
		}
		config := strings.Join([]string{
			"Port 22", "ListenAddress 0.0.0.0", "HostKey " + hostKey,
			"AuthorizedKeysFile " + filepath.Join(dir, "authorized_keys"),
			"PidFile none", "UsePAM no", "PermitRootLogin prohibit-password", "StrictModes no",
			"AcceptEnv AGT_TEST_SCRIPT GORACE XDG_CONFIG_HOME",
			"SetEnv PATH=" + bindir + ":/usr/local/bin:/usr/bin:/bin",
			"LogLevel ERROR", "",
		}, "\n")
		if err := os.WriteFile(filepath.Join(dir, name, "sshd_config"), []byte(config), 0o600); err != nil {
			return fail(err)
		}
		for _, args := range [][]string{
			{"netns", "add", th.ns},
			{"link", "add", th.veth, "type", "veth", "peer", "name", "eth0", "netns", th.ns},
			{"addr", "add", local + "/30", "dev", th.veth},
			{"link", "set", th.veth, "up"},
			{"-n", th.ns, "addr", "add", th.addr + "/30", "dev", "eth0"},
			{"-n", th.ns, "link", "set", "eth0", "up"},
			{"-n", th.ns, "link", "set", "lo", "up"},
		} {
			if err := run("ip", args...); err != nil {
				return fail(err)
			}
		}
	}
	if err := os.WriteFile(h.knownHosts, known.Bytes(), 0o600); err != nil {
		return fail(err)
	}
	started := make(chan error, 1)
	go h.serve(sshd, started)
	if err := <-started; err != nil {
		<-h.stopped
		return nil, err
	}
	return h, nil
}

// serve starts every host's sshd from a thread of its own, which lives until stop: sshd's
// Pdeathsig fires when the thread that started it ends, which is when the hosts stop or the
// test binary dies.
func (h *sshHosts) serve(sshd string, started chan<- error) {
	runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
	defer close(h.stopped)
	var procs []*exec.Cmd
	defer func() { h.teardown(procs) }()
	for _, th := range h.hosts {
		d := filepath.Join(h.dir, th.name)
		logf, err := os.Create(filepath.Join(d, "sshd.log"))
		if err != nil {
			started <- err
			return
		}
		cmd := exec.Command("ip", "netns", "exec", th.ns, "sh", "-c",
			`mount --bind "$1" /etc/passwd && exec "$2" -D -e -f "$3"`, "sh",
			filepath.Join(d, "passwd"), sshd, filepath.Join(d, "sshd_config"))
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
	for _, th := range h.hosts {
		deadline := time.Now().Add(20 * time.Second)
		for {
			c, err := net.DialTimeout("tcp", th.addr+":22", time.Second)
			if err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				log, _ := os.ReadFile(filepath.Join(h.dir, th.name, "sshd.log"))
				started <- fmt.Errorf("sshd of %s does not answer at %s: %v\n%s", th.name, th.addr, err, log)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	started <- nil
	<-h.stop
}

// teardown kills the sshd's and whatever still runs in the namespaces (their sessions), and
// removes the namespaces and the directory.
func (h *sshHosts) teardown(procs []*exec.Cmd) {
	for _, p := range procs {
		p.Process.Kill()
		p.Wait()
	}
	for _, th := range h.hosts {
		removeNamespace(th.ns)
	}
	os.RemoveAll(h.dir)
}

// removeNamespace kills every process in the network namespace ns, then removes it (its veth
// pair goes with it).
func removeNamespace(ns string) {
	for i := 0; i < 50; i++ {
		out, _ := exec.Command("ip", "netns", "pids", ns).Output()
		f := strings.Fields(string(out))
		if len(f) == 0 {
			break
		}
		for _, p := range f {
			if pid, err := strconv.Atoi(p); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	exec.Command("ip", "netns", "del", ns).Run()
}

// sweepStaleNamespaces removes the namespaces of test binaries that died without teardown.
func sweepStaleNamespaces() {
	entries, _ := os.ReadDir("/run/netns")
	re := regexp.MustCompile(`^agt-test-(\d+)-`)
	for _, e := range entries {
		m := re.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		if pid, _ := strconv.Atoi(m[1]); pid != os.Getpid() {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
				removeNamespace(e.Name())
			}
		}
	}
}

func run(prog string, args ...string) error {
	if out, err := exec.Command(prog, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %v\n%s", prog, strings.Join(args, " "), err, out)
	}
	return nil
}

// setupHostScript gives a host_* script its hosts: an ssh config naming h1, h2 and down (the
// user's ~/.ssh/config, through an ssh on PATH that reads it and logs its arguments to
// $WORK/ssh.argv), and [hosts] in agt's user config naming h1 and h2, each with a run directory of this
// script's ($WORK/h1, $WORK/h2); down is a destination only. A file $WORK/down-h1 makes ssh
// fail to reach h1 while it exists; $WORK/hold-follow holds the connections of tail --follow. What runs on the hosts carries the script's marker, so the
// script's cleanup ends it.
func setupHostScript(env *testscript.Env, marker string) error {
	if !strings.HasPrefix(filepath.Base(env.WorkDir), "script-host_") {
		return nil
	}
	h, err := sshHostsFixture.get()
	if err != nil {
		return nil // [!hosts] skips the script
	}
	work := env.WorkDir
	var cfg strings.Builder
	for _, th := range h.hosts {
		fmt.Fprintf(&cfg, "Host %s\n  HostName %s\n  HostKeyAlias %s\n", th.name, th.addr, th.name)
	}
	fmt.Fprintf(&cfg, "Host down\n  HostName 127.0.0.1\n  Port 9\n")
	fmt.Fprintf(&cfg, "Host *\n  User root\n  IdentityFile %s\n  IdentitiesOnly yes\n  UserKnownHostsFile %s\n"+
		"  StrictHostKeyChecking yes\n  LogLevel ERROR\n  SetEnv %s=%s GORACE=atexit_sleep_ms=0 XDG_CONFIG_HOME=%s\n",
		h.key, h.knownHosts, testMarker, marker, filepath.Join(work, ".remote-config"))
	sshDir, bin := filepath.Join(work, ".ssh"), filepath.Join(work, ".bin")
	for _, d := range []string{sshDir, bin, filepath.Join(work, ".config", "agt")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(sshDir, "config"), []byte(cfg.String()), 0o600); err != nil {
		return err
	}
	ssh, err := exec.LookPath("ssh")
	if err != nil {
		return err
	}
	// A script takes a host down by creating $WORK/down-HOST: ssh then fails to reach it, as
	// it would a host whose network went. While $WORK/hold-follow exists, the connection of a
	// tail --follow waits before it opens, as a slow handshake would.
	wrapper := fmt.Sprintf("#!/bin/sh\nprintf '%%s\\n' \"$*\" >> %[1]s\n"+
		"for h in h1 h2; do case \" $* \" in *\" -- $h \"*) if [ -e %[2]s/down-$h ]; then echo \"ssh: connect to host $h port 22: Connection refused\" >&2; exit 255; fi;; esac; done\n"+
		"case \" $* \" in *\" tail --follow \"*) while [ -e %[2]s/hold-follow ]; do sleep 0.01; done;; esac\n"+
		"exec %[3]s -F %[4]s \"$@\"\n",
		filepath.Join(work, "ssh.argv"), work, ssh, filepath.Join(sshDir, "config"))
	if err := os.WriteFile(filepath.Join(bin, "ssh"), []byte(wrapper), 0o755); err != nil {
		return err
	}
	env.Setenv("PATH", bin+string(os.PathListSeparator)+env.Getenv("PATH"))
	// The agt the hosts run: testscript's, on the PATH their sshd gives them.
	env.Setenv("HOSTHOME1", h.hosts[0].home)
	env.Setenv("HOSTAGT", filepath.Join(strings.SplitN(os.Getenv("PATH"), string(os.PathListSeparator), 2)[0], "agt"))
	var hosts strings.Builder
	for _, th := range h.hosts {
		fmt.Fprintf(&hosts, "[hosts.%s]\nssh = %q\nrun_dir = %q\n", th.name, th.name, filepath.Join(work, th.name))
	}
	return os.WriteFile(filepath.Join(work, ".config", "agt", "config.toml"), []byte(hosts.String()), 0o600)
}

// signalproc SIG REGEXP: wait until a live process of this script has a command line matching
// REGEXP, then send SIG (KILL, TERM, INT) to every such process.
func cmdSignalProc(ts *testscript.TestScript, neg bool, args []string) {
	noNegation(ts, neg, "signalproc")
	if len(args) != 2 {
		ts.Fatalf("usage: signalproc SIG REGEXP")
	}
	sig, ok := map[string]syscall.Signal{"KILL": syscall.SIGKILL, "TERM": syscall.SIGTERM, "INT": syscall.SIGINT}[args[0]]
	if !ok {
		ts.Fatalf("unknown signal %q", args[0])
	}
	re, err := regexp.Compile(args[1])
	ts.Check(err)
	var found map[int]string
	poll(ts, "a process matching "+args[1], func() bool {
		found = maps.Collect(scriptProcs(ts, re))
		return len(found) > 0
	})
	for pid, cmd := range found {
		ts.Logf("signal %s to %d %s", args[0], pid, cmd)
		ts.Check(syscall.Kill(pid, sig))
	}
}
