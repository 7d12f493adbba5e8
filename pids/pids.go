// Package pids records process identities that survive PID reuse: an
// Identity is a PID together with the process start time (field 22 of
// /proc/PID/stat) and the boot id, and it names at most one process ever.
//
// Invariants:
//   - A signal is only ever sent to a process whose PID, start time and boot
//     id all match the recorded Identity. Anything else is ErrGone, never a
//     signal: a PID now naming another process, a zombie, an identity from an
//     earlier boot, an identity without a boot id.
//   - Signals go through a pidfd opened before the identity is checked, so the
//     process checked is the process signalled (see Signal for kernels
//     without pidfd_open).
//   - EPERM is an error, never evidence that a process is alive.
//   - The calling process is never a member of a Tree, and neither are zombies.
//   - Only a cgroup that Contain made, or that OpenContainment checked is one it made, is
//     ever killed or removed (cgroup.go): a Containment holds one agent and its hooks.
package pids

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrGone reports that no live process has the identity asked about: it
// exited, it is a zombie, its PID now names another process, or the identity
// is from an earlier boot.
var ErrGone = errors.New("process is gone")

// Identity names one process across PID reuse and reboots.
type Identity struct {
	PID   int
	Start uint64 // starttime, clock ticks since boot (field 22 of /proc/PID/stat)
	Boot  string // /proc/sys/kernel/random/boot_id
}

var bootID = sync.OnceValues(func() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("read boot id: %w", err)
	}
	id := strings.TrimSpace(string(b))
	if id == "" {
		return "", errors.New("read boot id: empty")
	}
	return id, nil
})

// BootID returns the id of the running boot. It is read once and cached.
func BootID() (string, error) { return bootID() }

// Of returns the identity of the live process pid. It returns ErrGone when
// there is no such process or it is a zombie.
func Of(pid int) (Identity, error) {
	p, err := readProc(pid)
	if err != nil {
		return Identity{}, err
	}
	if p.zombie() {
		return Identity{}, fmt.Errorf("pid %d: %w", pid, ErrGone)
	}
	return p.Identity, nil
}

// Self returns the identity of the calling process.
func Self() (Identity, error) { return Of(os.Getpid()) }

// String formats id as "PID START BOOT", the pid-file format.
func (id Identity) String() string {
	return fmt.Sprintf("%d %d %s", id.PID, id.Start, id.Boot)
}

// Parse reads an identity written by String. One trailing newline is allowed.
func Parse(s string) (Identity, error) {
	f := strings.Split(strings.TrimSuffix(s, "\n"), " ")
	if len(f) != 3 {
		return Identity{}, fmt.Errorf("parse process identity %q: want \"PID START BOOT\"", s)
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return Identity{}, fmt.Errorf("parse process identity %q: pid %q is not a positive number", s, f[0])
	}
	start, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return Identity{}, fmt.Errorf("parse process identity %q: start time %q is not a number", s, f[1])
	}
	if f[2] == "" || strings.ContainsFunc(f[2], func(r rune) bool { return r <= ' ' || r > '~' }) {
		return Identity{}, fmt.Errorf("parse process identity %q: bad boot id %q", s, f[2])
	}
	return Identity{PID: pid, Start: start, Boot: f[2]}, nil
}

// Alive reports whether a live, non-zombie process has exactly this PID,
// start time and boot id.
func (id Identity) Alive() bool {
	cur, err := Of(id.PID)
	return err == nil && cur == id
}

// Signal sends sig to the process id names, and to no other. It returns
// ErrGone, without signalling anything, when that process no longer exists:
// its PID is free or names another process, it is a zombie, or id is from
// another boot or has no boot id. EPERM and other failures are returned as
// errors.
func Signal(id Identity, sig syscall.Signal) error {
	if err := verifiable(id); err != nil {
		return err
	}
	fd, err := unix.PidfdOpen(id.PID, 0)
	if errors.Is(err, unix.ENOSYS) {
		// No pidfd_open (before Linux 5.3). A race remains: the process can
		// exit and its PID be reused between the check and kill(2).
		if err := verify(id); err != nil {
			return err
		}
		return sent(id, unix.Kill(id.PID, sig))
	}
	if err != nil {
		return sent(id, err)
	}
	defer unix.Close(fd)
	// The pidfd pins the process the PID named when it was opened; checking
	// the identity now proves that process is the one recorded.
	if err := verify(id); err != nil {
		return err
	}
	return sent(id, unix.PidfdSendSignal(fd, sig, nil, 0))
}

// verifiable rejects identities that can never name a live process here.
func verifiable(id Identity) error {
	boot, err := BootID()
	if err != nil {
		return err
	}
	if id.PID <= 0 || id.Boot == "" || id.Boot != boot {
		return fmt.Errorf("pid %d: %w", id.PID, ErrGone)
	}
	return nil
}

// verify checks that id.PID names the process id records, right now.
func verify(id Identity) error {
	cur, err := Of(id.PID)
	if err != nil {
		return err
	}
	if cur != id {
		return fmt.Errorf("pid %d: %w", id.PID, ErrGone)
	}
	return nil
}

// sent maps the result of sending a signal to id.
func sent(id Identity, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.ESRCH):
		return fmt.Errorf("pid %d: %w", id.PID, ErrGone)
	default:
		return fmt.Errorf("signal pid %d: %w", id.PID, err)
	}
}

// Proc is one process as /proc/PID/stat describes it.
type Proc struct {
	Identity
	PPID, PGID, SID int
	State           byte   // R, S, D, Z, T, …
	Comm            string // the command name, as ps -o comm shows it
	CPU             uint64 // clock ticks on a processor, its own and its waited-for children's
}

func (p Proc) zombie() bool { return p.State == 'Z' || p.State == 'X' }

// Scan returns every process in /proc, zombies included (see State).
// Processes that exit during the scan are skipped, and so are processes that
// /proc hides from the caller (hidepid): the caller could not signal them.
func Scan() ([]Proc, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, fmt.Errorf("scan processes: %w", err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("scan processes: %w", err)
	}
	procs := make([]Proc, 0, len(names))
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid <= 0 {
			continue
		}
		p, err := readProc(pid)
		if errors.Is(err, ErrGone) || errors.Is(err, fs.ErrPermission) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("scan processes: %w", err)
		}
		procs = append(procs, p)
	}
	return procs, nil
}

// readProc reads /proc/pid/stat. It returns ErrGone when there is no such
// process; zombies are returned as they are.
func readProc(pid int) (Proc, error) {
	if pid <= 0 {
		return Proc{}, fmt.Errorf("pid %d: %w", pid, ErrGone)
	}
	boot, err := BootID()
	if err != nil {
		return Proc{}, err
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESRCH) {
		return Proc{}, fmt.Errorf("pid %d: %w", pid, ErrGone)
	}
	if err != nil {
		return Proc{}, fmt.Errorf("read process %d: %w", pid, err)
	}
	p, err := parseStat(b)
	if err != nil {
		return Proc{}, fmt.Errorf("read process %d: %w", pid, err)
	}
	p.PID, p.Boot = pid, boot
	return p, nil
}

// parseStat reads state, ppid, pgrp, session and starttime from a
// /proc/PID/stat line. The command name in parentheses may itself hold
// spaces and parentheses, so fields are counted from the last ')'.
func parseStat(b []byte) (Proc, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Proc{}, errors.New("malformed stat: no command name")
	}
	// After ")" come fields 3 (state) onwards: field n is f[n-3].
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 22-2 || len(f[0]) != 1 {
		return Proc{}, errors.New("malformed stat: too few fields")
	}
	var p Proc
	var errs [4]error
	if j := bytes.IndexByte(b, '('); j >= 0 && j < i {
		p.Comm = string(b[j+1 : i])
	}
	p.State = f[0][0]
	p.PPID, errs[0] = strconv.Atoi(f[4-3])
	p.PGID, errs[1] = strconv.Atoi(f[5-3])
	p.SID, errs[2] = strconv.Atoi(f[6-3])
	p.Start, errs[3] = strconv.ParseUint(f[22-3], 10, 64)
	if err := errors.Join(errs[:]...); err != nil {
		return Proc{}, fmt.Errorf("malformed stat: %w", err)
	}
	for _, n := range f[14-3 : 17-3+1] { // utime, stime, cutime, cstime
		t, _ := strconv.ParseUint(n, 10, 64)
		p.CPU += t
	}
	return p, nil
}

// CPU returns the clock ticks process id has spent on a processor, its own and its waited-for
// children's; ErrGone when it is not the process id names.
func CPU(id Identity) (uint64, error) {
	p, err := readProc(id.PID)
	if err != nil {
		return 0, err
	}
	if p.Start != id.Start {
		return 0, fmt.Errorf("pid %d: %w", id.PID, ErrGone)
	}
	return p.CPU, nil
}

// HasEnv reports whether the environment of process pid holds exactly the
// entry kv ("AGT_INSTANCE=abc"). It is false on any error, including a
// process whose environment the caller may not read, and for a moment during
// execve, before the new environment is in place.
func HasEnv(pid int, kv string) bool {
	if pid <= 0 || kv == "" {
		return false
	}
	i := strings.IndexByte(kv, '=')
	return i >= 0 && envEntry(pid, kv[:i+1]) == kv
}

// envEntry returns the "NAME=value" entry of process pid's environment for name ("NAME="),
// "" when it has none or cannot be read.
func envEntry(pid int, name string) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return ""
	}
	for e := range bytes.SplitSeq(b, []byte{0}) {
		if bytes.HasPrefix(e, []byte(name)) {
			return string(e)
		}
	}
	return ""
}

// Tree describes an agent's processes. Its members are the union of:
//   - the process group Group (the agent leader's PID: agents run with
//     setsid, so their group id is the leader's PID). While Leader is alive
//     every process of the group counts. Once Leader is gone the PID may have
//     been reused, so a process counts only if its session is also Group and
//     it is a descendant of Root or carries Env;
//   - every descendant of Root (the supervisor's PID; Root itself excluded),
//     found by following parent links;
//   - every process whose environment holds the entry Env, when Env != "".
//
// The calling process and zombies are never members.
type Tree struct {
	Leader    Identity
	Group     int
	Root      int
	Env       string
	GroupOnly bool // for tests: skip the descendant and Env sweeps
	// Walk says Root is a live child subreaper that every member descends from (the
	// supervisor: the orphans of its agent come back to it). Members then follows the
	// kernel's children links down from Root instead of reading all of /proc, so its cost
	// is the tree's size, not the machine's. The Group and Env tests are not needed then.
	Walk bool
	// Spared, when set, lists processes that, with all below them, are never members (the
	// supervisor's hooks). It is called after /proc is read: a process started before the
	// read and registered with the start is always known to it.
	Spared func() []int
	// Nested, when set, tells another agent's supervisor, started from inside this agent and
	// adopted by its subreaper: it and all below it are never members. It is asked only of
	// processes outside Group, so nothing in the agent's own group is ever spared.
	Nested func(Proc) bool
	// Cgroup, when set, holds the agent's processes: every process in it, or below it, is a
	// member however it left the others (setsid env -i, a dead subreaper).
	Cgroup Cgroup
}

// inCgroup is the set of the processes in t.Cgroup, nil when it has none.
func (t Tree) inCgroup() map[int]bool {
	if t.Cgroup == "" || t.GroupOnly {
		return nil
	}
	procs, _ := t.Cgroup.Procs()
	set := make(map[int]bool, len(procs))
	for _, pid := range procs {
		set[pid] = true
	}
	return set
}

// Members returns the identities of the tree's live processes, by PID.
func (t Tree) Members() ([]Identity, error) {
	if t.Walk && !t.GroupOnly && t.Root > 0 {
		// The children links are not read atomically: a process whose parent exits during the
		// walk moves to the root's list, which may have been read already. Its parent is then
		// seen exited, its children moved (the kernel moves them before the parent turns
		// zombie), so a second walk finds them: an empty tree is believed once two say so.
		for try := 0; try < 2; try++ {
			procs, ok := descendants(t.Root)
			if !ok {
				break
			}
			if ids := t.walked(procs); len(ids) > 0 || try == 1 {
				return ids, nil
			}
		}
	}
	snap, err := TakeSnapshot()
	if err != nil {
		return nil, err
	}
	return t.MembersIn(snap), nil
}

// Snapshot is one read of /proc that many trees can be matched against (agt reap over a
// thousand lost agents): what a tree asks of a process, its children and its environment, is
// worked out once for all of them.
type Snapshot struct {
	Procs    []Proc
	children map[int][]int
	env      map[string]map[int]string // variable name → pid → its "NAME=value" entry, "" if none
}

// TakeSnapshot reads /proc.
func TakeSnapshot() (*Snapshot, error) {
	procs, err := Scan()
	if err != nil {
		return nil, err
	}
	s := &Snapshot{Procs: procs, children: make(map[int][]int), env: make(map[string]map[int]string)}
	for _, p := range procs {
		s.children[p.PPID] = append(s.children[p.PPID], p.PID)
	}
	return s, nil
}

// hasEnv is HasEnv, each process's environment read at most once per variable name.
func (s *Snapshot) hasEnv(pid int, kv string) bool {
	i := strings.IndexByte(kv, '=')
	if i < 0 || pid <= 0 {
		return false
	}
	name := kv[:i+1]
	byPID := s.env[name]
	if byPID == nil {
		byPID = make(map[int]string)
		s.env[name] = byPID
	}
	entry, ok := byPID[pid]
	if !ok {
		entry = envEntry(pid, name)
		byPID[pid] = entry
	}
	return entry == kv
}

// MembersIn is Members over a snapshot of /proc.
func (t Tree) MembersIn(s *Snapshot) []Identity {
	procs, children := s.Procs, s.children
	// Another agent's supervisor (spawned from inside this agent, then adopted by our
	// subreaper) is not ours, nor is anything below it.
	spared := make(map[int]bool)
	if t.Nested != nil || t.Spared != nil {
		var queue []int
		if t.Spared != nil {
			queue = t.Spared()
		}
		for _, p := range procs {
			if t.Nested != nil && p.PID != t.Root && p.PGID != t.Group && !p.zombie() && t.Nested(p) {
				queue = append(queue, p.PID)
			}
		}
		for len(queue) > 0 {
			pid := queue[0]
			queue = queue[1:]
			if !spared[pid] {
				spared[pid] = true
				queue = append(queue, children[pid]...)
			}
		}
	}
	desc := make(map[int]bool)
	if t.Root > 0 {
		queue := slices.Clone(children[t.Root])
		for len(queue) > 0 {
			pid := queue[0]
			queue = queue[1:]
			if !desc[pid] && pid != t.Root && !spared[pid] {
				desc[pid] = true
				queue = append(queue, children[pid]...)
			}
		}
	}
	hasEnv := func(pid int) bool { return t.Env != "" && s.hasEnv(pid, t.Env) }
	leaderAlive := t.Leader.Alive()
	cg := t.inCgroup()

	self := os.Getpid()
	var ids []Identity
	for _, p := range procs {
		if p.PID == self || p.zombie() || spared[p.PID] {
			continue
		}
		inGroup := t.Group > 0 && p.PGID == t.Group &&
			(leaderAlive || (p.SID == t.Group && (desc[p.PID] || hasEnv(p.PID))))
		if inGroup || (!t.GroupOnly && (desc[p.PID] || cg[p.PID] || hasEnv(p.PID))) {
			ids = append(ids, p.Identity)
		}
	}
	slices.SortFunc(ids, func(a, b Identity) int { return a.PID - b.PID })
	return ids
}

// Signal sends sig to every member of the tree, each through Signal, and
// returns how many were signalled. Members that are gone by then are skipped;
// other failures do not stop the sweep and are returned together.
func (t Tree) Signal(sig syscall.Signal) (n int, err error) {
	ids, err := t.Members()
	if err != nil {
		return 0, err
	}
	return SignalAll(ids, sig)
}

// SignalAll sends sig to each of ids through Signal, as Tree.Signal does, for a caller that
// has the members already (each Members call scans /proc).
func SignalAll(ids []Identity, sig syscall.Signal) (n int, err error) {
	var errs []error
	for _, id := range ids {
		switch err := Signal(id, sig); {
		case err == nil:
			n++
		case !errors.Is(err, ErrGone):
			errs = append(errs, err)
		}
	}
	return n, errors.Join(errs...)
}

// walked is Members over the descendants of Root, in the order descendants found them:
// parents before children, so that a spared process spares all below it.
func (t Tree) walked(procs []Proc) []Identity {
	spared := make(map[int]bool)
	if t.Spared != nil {
		for _, pid := range t.Spared() {
			spared[pid] = true
		}
	}
	self := os.Getpid()
	var ids []Identity
	for _, p := range procs {
		if spared[p.PPID] || spared[p.PID] ||
			(t.Nested != nil && p.PGID != t.Group && !p.zombie() && t.Nested(p)) {
			spared[p.PID] = true
			continue
		}
		if p.PID != self && !p.zombie() {
			ids = append(ids, p.Identity)
		}
	}
	// What the cgroup holds beside the walk (a process moved in from elsewhere).
	for pid := range t.inCgroup() {
		if spared[pid] || pid == self || slices.ContainsFunc(ids, func(id Identity) bool { return id.PID == pid }) {
			continue
		}
		if p, err := readProc(pid); err == nil && !p.zombie() {
			ids = append(ids, p.Identity)
		}
	}
	slices.SortFunc(ids, func(a, b Identity) int { return a.PID - b.PID })
	return ids
}

// descendants returns the processes below root (root left out), parents before their
// children, from /proc/PID/task/TID/children: only the tree is read. ok is false when the
// kernel has no children files (CONFIG_PROC_CHILDREN), or root is gone.
func descendants(root int) (procs []Proc, ok bool) {
	kids, ok := children(root)
	if !ok {
		return nil, false
	}
	seen := map[int]bool{root: true}
	for len(kids) > 0 {
		pid := kids[0]
		kids = kids[1:]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		p, err := readProc(pid)
		if err != nil {
			continue // exited since its parent listed it
		}
		procs = append(procs, p)
		more, _ := children(pid)
		kids = append(kids, more...)
	}
	return procs, true
}

// children lists the children of every thread of pid.
func children(pid int) ([]int, bool) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	d, err := os.Open(dir)
	if err != nil {
		return nil, false
	}
	tids, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, false
	}
	var kids []int
	found := false
	for _, tid := range tids {
		b, err := os.ReadFile(dir + "/" + tid + "/children")
		if err != nil {
			continue // a thread that exited; or no children files at all (checked below)
		}
		found = true
		for f := range bytes.FieldsSeq(b) {
			if n, err := strconv.Atoi(string(f)); err == nil && n > 0 {
				kids = append(kids, n)
			}
		}
	}
	return kids, found
}
