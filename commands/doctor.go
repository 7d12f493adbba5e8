package commands

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"agt/pids"
	"agt/state"
)

func doctorCommand() *cli.Command {
	return &cli.Command{
		Name:  "doctor",
		Usage: "say which of agt's guarantees hold on this machine",
		UsageText: "agt doctor [--json | --format TEMPLATE]\n\n" +
			"Says which of agt's guarantees hold on this machine; it starts and changes nothing.\n\n" +
			"EXAMPLES:\n" +
			"   agt doctor\n" +
			"   agt doctor | jq -r 'select(.ok | not) | .check'",
		Description: helpText("doctor"),
		Flags:       []cli.Flag{jsonFlag(), formatFlag("doctor", doctorCheck{}, "{{.check}} {{.ok}}")},
		Action: func(c *cli.Context) error {
			if c.Args().Len() > 0 {
				return usagef(c, "doctor takes no arguments")
			}
			out, err := outputFor(c)
			if err != nil {
				return err
			}
			checks := doctorChecks(c.String("run-dir"))
			failed := false
			rows := make([][]string, 0, len(checks))
			for _, ch := range checks {
				failed = failed || !ch.OK && !ch.optional
				mark := "yes"
				if !ch.OK {
					mark = "NO"
				}
				rows = append(rows, []string{ch.Check, mark, ch.Detail})
				if out.mode != modeTable {
					if err := out.item(ch, nil); err != nil {
						return err
					}
				}
			}
			if out.mode == modeTable {
				if err := out.table([]string{"CHECK", "OK", "WHAT IT MEANS"}, rows); err != nil {
					return err
				}
			}
			if failed {
				return cli.Exit("", 1)
			}
			return nil
		},
	}
}

// doctorCheck is one guarantee and whether it holds here.
type doctorCheck struct {
	Check  string `json:"check"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	// optional: a feature agt can do without (sandboxes), not a guarantee; it does not fail
	// the exit status.
	optional bool
}

func doctorChecks(runDir string) []doctorCheck {
	var out []doctorCheck
	add := func(check string, ok bool, yes, no string) {
		d := yes
		if !ok {
			d = no
		}
		out = append(out, doctorCheck{Check: check, OK: ok, Detail: d})
	}

	fd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err == nil {
		unix.Close(fd)
	}
	add("pidfd", err == nil,
		"signals go through a pidfd checked against the recorded start time: a recycled pid is never signalled",
		fmt.Sprintf("no pidfd (%v): the start time and boot id are checked before kill(2), and a small race remains", err))

	err = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	add("subreaper", err == nil,
		"supervisors are child subreapers: the orphans of an agent come back to its supervisor, and a stop kills them",
		fmt.Sprintf("no child subreaper (%v): orphans that leave the agent's group are found by its AGT_INSTANCE alone", err))

	_, err = pids.BootID()
	add("boot id", err == nil,
		"identities carry the boot id: after a reboot, nothing recorded is signalled",
		fmt.Sprintf("no boot id (%v): agt cannot tell a reboot, and will not signal any recorded process", err))

	procs, err := pids.Scan()
	add("/proc", err == nil && len(procs) > 0,
		"/proc lists every process: a stop also finds setsid grandchildren by their AGT_INSTANCE",
		fmt.Sprintf("/proc cannot be read (%v): stops reach the process group and the adopted orphans only", err))

	_, err = os.Stat(fmt.Sprintf("/proc/%d/task/%d/children", os.Getpid(), os.Getpid()))
	add("children links", err == nil,
		"supervisors follow /proc's children links down their agent's tree: a stop costs the tree's size, not the machine's",
		"no /proc children links (a kernel without CONFIG_PROC_CHILDREN): each supervisor's stop reads all of /proc")

	err = dnotifyWorks()
	add("dnotify", err == nil,
		"supervisors notice a removed record at once through dnotify, which takes none of the user's inotify instances",
		fmt.Sprintf("no dnotify (%v): supervisors check every 5 s that their record exists", err))

	used, limit := inotifyUse()
	add("inotify", limit == 0 || used < limit,
		fmt.Sprintf("%d of %d inotify instances in use by this user: tail -f and wait wake at once", used, limit),
		fmt.Sprintf("%d of %d inotify instances in use by this user: followers fall back to a check a second", used, limit))

	root, err := state.ResolveRoot(runDir)
	made := "yours alone (0700)"
	if _, serr := os.Stat(root); err == nil && errors.Is(serr, fs.ErrNotExist) {
		made = "not made yet; the first spawn makes it 0700" // doctor changes nothing
	} else if err == nil {
		_, err = state.Open(root) // checks its owner and mode
	}
	add("run directory", err == nil,
		"run directory "+root+": "+made,
		fmt.Sprintf("run directory: %v", err))

	base, err := pids.CgroupBase()
	add("cgroups", err == nil,
		fmt.Sprintf("each agent and its hooks run in a cgroup made in %s: a stop or reap ends all of it, even a setsid env -i grandchild of a supervisor killed -9", base),
		fmt.Sprintf("%v: agents' processes are found by pid alone, and a setsid env -i grandchild outlives a supervisor killed -9", err))
	// Where the user may make cgroups: a login session's shell often may not. The sweeps by
	// pid hold either way, so it does not fail the exit status.
	out[len(out)-1].optional = true
	return append(out, sandboxChecks()...)
}

// dnotifyWorks asks the kernel for dnotify on a directory, for no events: it changes nothing.
func dnotifyWorks() error {
	fd, err := unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	_, err = unix.FcntlInt(uintptr(fd), unix.F_NOTIFY, 0)
	return err
}

// inotifyUse counts the inotify instances this user's processes hold, and the per-user limit
// (0 when unknown).
func inotifyUse() (used, limit int) {
	if b, err := os.ReadFile("/proc/sys/fs/inotify/max_user_instances"); err == nil {
		limit, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	uid := os.Getuid()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		dir := filepath.Join("/proc", e.Name())
		var st unix.Stat_t
		if unix.Stat(dir, &st) != nil || int(st.Uid) != uid {
			continue
		}
		fds, err := os.ReadDir(filepath.Join(dir, "fd"))
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if link, err := os.Readlink(filepath.Join(dir, "fd", fd.Name())); err == nil && link == "anon_inode:inotify" {
				used++
			}
		}
	}
	return used, limit
}
