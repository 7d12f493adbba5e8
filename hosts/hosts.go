// Package hosts runs agt commands at other places: on hosts reached through the system ssh, and
// on this machine as a child process, behind one interface (Place) that a job engine (Docker
// Swarm, Kubernetes) can implement too.
//
// Invariants:
//   - agt runs the system ssh with BatchMode (never a prompt), so the user's ~/.ssh/config,
//     keys, agent and ProxyJump apply. There is no Go SSH stack.
//   - One ControlMaster per host, opened by agt itself with its socket in a private (0700)
//     directory and kept by ControlPersist, so later commands skip the handshake. At most
//     MaxSessions commands share it at once, across every agt process of the user: sshd refuses
//     the eleventh session of one connection by default. A long-lived stream (tail -f, wait,
//     attach) takes a connection of its own, and ends on the host when that connection does.
//   - Every remote argument is quoted for a POSIX shell. Nothing secret travels in argv (which
//     every local user can read): callers pass prompts and messages on stdin.
//   - A failure of the link is an *Unreachable carrying ssh's own reason; a remote command that
//     fails is an *ExitError with its status. Errors may carry a host's own words, unescaped:
//     whoever prints them for people escapes them.
package hosts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Protocol is the version of what one agt asks of another over a link: the global flags,
// tail --after, version --json's fields (1); ps --watch, tail --seqs, send --seqs, logs --mark
// and --resume, attach --label (2). A host whose agt reports less is refused; raise it when a
// local agt starts to rely on something an older remote one lacks.
const Protocol = 2

// Local is the name of this machine as a place (--host local, local:NAME).
const Local = "local"

// A Place runs agt commands: this machine, a host over ssh, or (docs/hosts.md) an engine that
// answers them as agt would.
type Place interface {
	// Name is how the user names the place: "local", a [hosts] name, an ssh destination.
	Name() string
	// Run runs agt with call.Args there and returns when it ends: nil when it exited 0, an
	// *ExitError when it failed, an *Unreachable when the place could not be reached or the
	// link broke.
	Run(ctx context.Context, call *Call) error
}

// Call is one agt command to run at a place.
type Call struct {
	// Args follow the program: the command, its flags, its names (["ps", "--json"]).
	Args []string
	// Stdin is what the command reads (a prompt); nil for nothing.
	Stdin  io.Reader
	Stdout io.Writer
	// Stderr gets the command's diagnostics. On a link failure, ssh's own words are in the
	// *Unreachable instead.
	Stderr io.Writer
	// Stream marks a long-lived command (tail -f, wait, logs -f): it takes a connection of its
	// own rather than a session of the shared one, and (unless it reads Stdin) ends when that
	// connection does.
	Stream bool
	// Terminal connects the command to this process's terminal (attach): ssh -t, stdin, stdout
	// and stderr the process's own.
	Terminal bool
}

// ExitError is a command that ran at a place and exited with a status other than 0.
type ExitError struct {
	Place string
	Code  int
}

func (e *ExitError) Error() string { return fmt.Sprintf("agt on %s exited %d", e.Place, e.Code) }

// ExitCode is the command's status, for main to exit with.
func (e *ExitError) ExitCode() int { return e.Code }

// Unreachable is a place that could not be reached, or whose link broke: Reason is ssh's own
// last word ("ssh: connect to host box2 port 22: Connection refused").
type Unreachable struct {
	Place  string
	Reason string
}

func (e *Unreachable) Error() string { return e.Place + ": " + e.Reason }

// IsUnreachable reports whether err is a link failure, which a retry may cure.
func IsUnreachable(err error) bool {
	var u *Unreachable
	return errors.As(err, &u)
}

// Split splits HOST:NAME at its last colon (agent names have none): "box2:fix" is "box2",
// "fix"; a bare "fix" is "", "fix".
func Split(arg string) (host, name string) {
	i := strings.LastIndexByte(arg, ':')
	if i < 0 {
		return "", arg
	}
	return arg[:i], arg[i+1:]
}

// Quote quotes s as one word for a POSIX shell (sh, bash, dash, zsh, ksh): as it is when it
// holds only characters no shell treats specially, else in single quotes.
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for i := 0; i < len(s) && safe; i++ {
		c := s[i]
		safe = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			strings.IndexByte("@%+=:,./_-", c) >= 0
	}
	if safe && s[0] != '=' { // zsh expands a leading =word
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// QuotePath quotes a path on a host, leaving a leading ~/ for the shell to expand.
func QuotePath(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if rest == "" {
			return "~/"
		}
		return "~/" + Quote(rest)
	}
	return Quote(p)
}

// Command is the shell command line that runs program with args on a host.
func Command(program string, args []string) string {
	if len(args) == 0 {
		return QuotePath(program)
	}
	return QuotePath(program) + " " + Words(args)
}

// Words quotes each of args and joins them with spaces.
func Words(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = Quote(a)
	}
	return strings.Join(q, " ")
}
