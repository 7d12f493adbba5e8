package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// probeTimeout bounds a probe: a sandbox that starts nothing takes milliseconds.
const probeTimeout = 20 * time.Second

// Probe makes an empty sandbox as an agent's would be (namespaces, the signals, the network
// setting) and runs true in it, as the current user or, when cred is set, as that one. It
// returns why a sandbox cannot be made here, in one line that says what to do.
func Probe(ctx context.Context, net string, cred *syscall.Credential) error {
	bwrap, err := FindBwrap()
	if err != nil {
		return err
	}
	envProg, err := exec.LookPath("env")
	if err != nil {
		return errors.New("sandbox: env (coreutils) not found on PATH; it sets the signals bubblewrap ignores")
	}
	truth, err := exec.LookPath("true")
	if err != nil {
		return errors.New("sandbox: true (coreutils) not found on PATH")
	}
	args := []string{"--ignore-signal=" + signals, bwrap, "--unshare-all", "--unshare-user", "--cap-drop", "ALL", "--die-with-parent"}
	if net != NetNone {
		args = append(args, "--share-net")
	}
	args = append(args, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--perms", "1777", "--tmpfs", "/tmp",
		"--", envProg, "--default-signal="+signals, truth)
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, envProg, args...)
	cmd.Dir = "/"
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &exit):
		return fmt.Errorf("sandbox: cannot try a sandbox: %v", err)
	}
	return probeError(stderr.String(), err)
}

// probeError says in one line why bubblewrap failed, from what it (or env) wrote.
func probeError(stderr string, err error) error {
	msg := strings.TrimSpace(stderr)
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	switch {
	case strings.Contains(stderr, "--ignore-signal") || strings.Contains(stderr, "--default-signal"):
		return errors.New("sandbox: this env cannot set signals (--ignore-signal); agt's sandbox needs GNU coreutils 8.31 or later")
	case userNSRefused(stderr):
		return fmt.Errorf("sandbox: the kernel refuses this user a user namespace (%s); check those sysctls (unprivileged user namespaces must be allowed)", UserNSSettings())
	case msg == "":
		return fmt.Errorf("sandbox: bubblewrap cannot make a sandbox here: %v", err)
	}
	return fmt.Errorf("sandbox: bubblewrap cannot make a sandbox here: %s", msg)
}

// userNSRefused tells bubblewrap's messages for a user namespace the kernel did not allow.
func userNSRefused(stderr string) bool {
	for _, s := range []string{
		"No permissions to create new namespace", // bwrap's own diagnosis
		"setting up uid map",                     // AppArmor's restriction (Ubuntu 23.10 and later)
		"Creating new namespace failed",
		"unprivileged_userns_clone",
	} {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}

// usernsSysctls are the kernel settings that allow or refuse unprivileged user namespaces,
// those present on this kernel being shown.
var usernsSysctls = []struct{ name, file string }{
	{"user.max_user_namespaces", "/proc/sys/user/max_user_namespaces"},
	{"kernel.unprivileged_userns_clone", "/proc/sys/kernel/unprivileged_userns_clone"},
	{"kernel.apparmor_restrict_unprivileged_userns", "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"},
}

// UserNSSettings reads the kernel settings on user namespaces: "user.max_user_namespaces =
// 0, kernel.unprivileged_userns_clone = 1".
func UserNSSettings() string {
	var parts []string
	for _, s := range usernsSysctls {
		b, err := os.ReadFile(s.file)
		if err != nil {
			continue
		}
		parts = append(parts, s.name+" = "+strings.TrimSpace(string(b)))
	}
	if len(parts) == 0 {
		return "no user namespace settings in /proc/sys"
	}
	return strings.Join(parts, ", ")
}
