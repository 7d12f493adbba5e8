package pids

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A process tree escapes every sweep by pid once its subreaper is gone: a grandchild that
// called setsid and dropped AGT_INSTANCE (setsid env -i …) is then no one's. A cgroup holds
// whatever its processes start, however they start it, and the kernel kills all of it at once
// (cgroup.kill). Where the user may make a cgroup (cgroup v2, in a hierarchy mounted anywhere,
// hybrid machines included, in a subtree delegated to them), each agent gets one:
//
//	BASE/agt-NAME-RANDOM/agent   the agent's process tree
//	BASE/agt-NAME-RANDOM/hooks   the hooks its supervisor runs
//
// BASE is the cgroup the supervisor started in (the user's shell's), or, for a supervisor
// started from inside another agent, the one that agent's cgroup was made in: an agent spawned
// by an agent is not ended with it. No controller is enabled: agt only groups and kills.

// Cgroup is the directory of a cgroup v2, in the file system.
type Cgroup string

// Containment is the cgroup of one agent: Agent holds its process tree, Hooks what its
// supervisor's hooks run; Root holds both, and ending it ends all of them.
type Containment struct {
	Root, Agent, Hooks Cgroup
}

// containmentPrefix starts the name of every cgroup agt makes for an agent.
const containmentPrefix = "agt-"

// ErrNoCgroup reports that no cgroup v2 can be made here: none is mounted, or the user may not
// write where this process is. Stops and reaps then work by pid alone.
var ErrNoCgroup = errors.New("no cgroup v2 this user can make a cgroup in")

// CgroupBase returns the cgroup new containments are made in, with the error that says why
// there is none (wrapping ErrNoCgroup).
func CgroupBase() (Cgroup, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrNoCgroup, err)
	}
	mount, root, ok := cgroup2Mount(string(b))
	if !ok {
		return "", fmt.Errorf("%w: none is mounted", ErrNoCgroup)
	}
	own, err := ownCgroup()
	if err != nil {
		return "", err
	}
	base, err := baseIn(mount, root, own)
	if err != nil {
		return "", err
	}
	if err := unix.Access(string(base), unix.W_OK|unix.X_OK); err != nil {
		return "", fmt.Errorf("%w: %s is not writable (%v)", ErrNoCgroup, base, err)
	}
	if err := unix.Access(base.file("cgroup.procs"), unix.W_OK); err != nil {
		return "", fmt.Errorf("%w: %s is not writable (%v)", ErrNoCgroup, base.file("cgroup.procs"), err)
	}
	return base, nil
}

// baseIn is where containments go for a process in cgroup own, in the hierarchy whose cgroup
// root is mounted at mount: its own cgroup, or the one the agent it runs in was made in.
func baseIn(mount, root, own string) (Cgroup, error) {
	rel, err := filepath.Rel(root, own)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("%w: this process's cgroup %s is outside the mount of %s", ErrNoCgroup, own, root)
	}
	kept := []string{mount}
	for _, name := range strings.Split(rel, "/") {
		if strings.HasPrefix(name, containmentPrefix) {
			break // beside the agent we run in, never inside it
		}
		if name != "" && name != "." {
			kept = append(kept, name)
		}
	}
	return Cgroup(filepath.Join(kept...)), nil
}

// Contain makes the containment of the agent name in CgroupBase, and moves the calling
// process (the agent's supervisor) out of another agent's cgroup first, when it started in one.
func Contain(name string) (*Containment, error) {
	base, err := CgroupBase()
	if err != nil {
		return nil, err
	}
	if own, err := ownCgroup(); err == nil && strings.Contains(own, "/"+containmentPrefix) {
		if err := base.Enter(os.Getpid()); err != nil {
			return nil, fmt.Errorf("leave the cgroup of the agent that started this one: %w", err)
		}
	}
	var b [4]byte // math/rand/v2, not crypto/rand: no package init for every agt start-up
	binary.LittleEndian.PutUint32(b[:], mrand.Uint32())
	c := &Containment{Root: Cgroup(filepath.Join(string(base), containmentPrefix+name+"-"+hex.EncodeToString(b[:])))}
	c.Agent, c.Hooks = Cgroup(filepath.Join(string(c.Root), "agent")), Cgroup(filepath.Join(string(c.Root), "hooks"))
	for _, dir := range []Cgroup{c.Root, c.Agent, c.Hooks} {
		if err := os.Mkdir(string(dir), 0o755); err != nil {
			c.Remove()
			return nil, fmt.Errorf("make cgroup %s: %w", dir, err)
		}
	}
	return c, nil
}

// OpenContainment returns the containment whose root a record names, after checking that it
// is one: a directory agt names, with agent and hooks in it, in a cgroup v2 file system. A
// record is the agent's to write; nothing else is ever killed through it.
func OpenContainment(root string) (*Containment, error) {
	if !filepath.IsAbs(root) || filepath.Clean(root) != root || !strings.HasPrefix(filepath.Base(root), containmentPrefix) {
		return nil, fmt.Errorf("%q is not a cgroup agt made", root)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(root, &st); err != nil {
		return nil, fmt.Errorf("cgroup %s: %w", root, err)
	}
	if st.Type != unix.CGROUP2_SUPER_MAGIC {
		return nil, fmt.Errorf("%s is not in a cgroup v2 file system", root)
	}
	c := &Containment{Root: Cgroup(root), Agent: Cgroup(root + "/agent"), Hooks: Cgroup(root + "/hooks")}
	for _, dir := range []Cgroup{c.Root, c.Agent, c.Hooks} {
		if fi, err := os.Lstat(string(dir)); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("%s is not a cgroup agt made", root)
		}
	}
	return c, nil
}

// End kills every process in the containment and waits up to wait for them to be gone, then
// removes it. It fails when processes outlive that, and leaves the cgroups then.
func (c *Containment) End(wait time.Duration) error {
	if err := c.Root.Kill(); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := c.Root.WaitEmpty(wait); err != nil {
		return err
	}
	return c.Remove()
}

// Remove removes the containment's cgroups, those the agent made inside included; each must
// be empty of processes.
func (c *Containment) Remove() error { return c.Root.remove() }

func (c Cgroup) file(name string) string { return filepath.Join(string(c), name) }

// Enter moves process pid into the cgroup.
func (c Cgroup) Enter(pid int) error {
	return os.WriteFile(c.file("cgroup.procs"), []byte(strconv.Itoa(pid)), 0)
}

// Make makes the cgroup, and returns its directory as Open does.
func (c Cgroup) Make() (*os.File, error) {
	if err := os.Mkdir(string(c), 0o755); err != nil {
		return nil, fmt.Errorf("make cgroup %s: %w", c, err)
	}
	return c.Open()
}

// Open returns the cgroup's directory, for starting a process in it (SysProcAttr.CgroupFD).
func (c Cgroup) Open() (*os.File, error) {
	fd, err := unix.Open(string(c), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open cgroup %s: %w", c, err)
	}
	return os.NewFile(uintptr(fd), string(c)), nil
}

// Procs returns the processes in the cgroup and every cgroup below it.
func (c Cgroup) Procs() ([]int, error) {
	var out []int
	err := filepath.WalkDir(string(c), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // a cgroup removed under us: nothing in it
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(filepath.Join(path, "cgroup.procs"))
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		for f := range bytes.FieldsSeq(b) {
			if pid, err := strconv.Atoi(string(f)); err == nil && pid > 0 {
				out = append(out, pid)
			}
		}
		return nil
	})
	return out, err
}

// Populated reports whether any process is in the cgroup or below it.
func (c Cgroup) Populated() bool {
	f, err := os.Open(c.file("cgroup.events"))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "populated "); ok {
			return v != "0"
		}
	}
	return false
}

// Kill sends SIGKILL to every process in the cgroup and below it, at once, through cgroup.kill;
// on kernels before 5.14, frozen first, then one by one.
func (c Cgroup) Kill() error {
	err := os.WriteFile(c.file("cgroup.kill"), []byte("1"), 0)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if _, serr := os.Stat(string(c)); serr != nil {
		return serr // the cgroup itself is gone
	}
	// Frozen, nothing in it can fork while the list is read and signalled.
	frozen := os.WriteFile(c.file("cgroup.freeze"), []byte("1"), 0) == nil
	procs, err := c.Procs()
	for _, pid := range procs {
		unix.Kill(pid, syscall.SIGKILL)
	}
	if frozen {
		os.WriteFile(c.file("cgroup.freeze"), []byte("0"), 0) // a killed process dies once thawed
	}
	return err
}

// WaitEmpty waits up to wait for the cgroup to hold no process.
func (c Cgroup) WaitEmpty(wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for tick := time.Millisecond; c.Populated(); tick = min(2*tick, 50*time.Millisecond) {
		if time.Now().After(deadline) {
			procs, _ := c.Procs()
			return fmt.Errorf("cgroup %s still holds %d processes after %v", c, len(procs), wait)
		}
		time.Sleep(tick)
	}
	return nil
}

// remove removes the cgroup and those below it, deepest first.
func (c Cgroup) remove() error {
	entries, err := os.ReadDir(string(c))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if e.IsDir() {
			errs = append(errs, Cgroup(filepath.Join(string(c), e.Name())).remove())
		}
	}
	if err := unix.Rmdir(string(c)); err != nil && !errors.Is(err, unix.ENOENT) {
		errs = append(errs, fmt.Errorf("remove cgroup %s: %w", c, err))
	}
	return errors.Join(errs...)
}

// cgroup2Mount finds the cgroup v2 hierarchy in a /proc/self/mountinfo, wherever it is mounted
// (/sys/fs/cgroup, or /sys/fs/cgroup/unified beside v1 controllers on a hybrid machine): its
// mount point and the cgroup mounted there.
func cgroup2Mount(mountinfo string) (mount, root string, ok bool) {
	for line := range strings.SplitSeq(mountinfo, "\n") {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 1 || g[0] != "cgroup2" {
			continue
		}
		return unescapeMount(f[4]), unescapeMount(f[3]), true
	}
	return "", "", false
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ownCgroup is this process's cgroup v2 path, as /proc/self/cgroup says ("0::/user.slice/…").
func ownCgroup() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrNoCgroup, err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: this process is in no cgroup v2", ErrNoCgroup)
}
