package hosts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"syscall"
)

// Info is what a host's agt says of itself (agt version --json), and where it is.
type Info struct {
	Agt      string `json:"agt"` // the program on the host
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	Protocol int    `json:"protocol"` // 0: an agt from before protocols
	OS       string `json:"os,omitempty"`
	Arch     string `json:"arch,omitempty"`
}

// findAgt is the shell script that finds agt on a host where [hosts] names none: on its PATH,
// else where agt hosts install puts it. It prints the path, then the version.
const findAgt = `for a in agt "$HOME/.local/bin/agt"; do ` +
	`p=$(command -v "$a") && { echo "$p"; exec "$p" version --json; }; done; ` +
	`echo "no agt on its PATH or in ~/.local/bin" >&2; exit 127`

// InstallPath is where agt hosts install puts agt on a host that names no agt in [hosts].
const InstallPath = "~/.local/bin/agt"

// Probe returns what the host's agt says of itself, opening the master connection if need be.
// It refuses an agt older than Protocol.
func (s *SSH) Probe(ctx context.Context) (*Info, error) {
	sock, fresh, err := s.master(ctx)
	if err != nil {
		return nil, err
	}
	return s.probe(ctx, sock, fresh)
}

// probe asks the host's agt its version once per master connection, and keeps the answer
// beside the socket for the commands that follow.
func (s *SSH) probe(ctx context.Context, sock string, fresh bool) (*Info, error) {
	info := &Info{}
	if !fresh {
		if b, err := readSmall(s.file(".info")); err == nil && json.Unmarshal(b, info) == nil && info.Agt != "" {
			return info, s.checkProtocol(info)
		}
	}
	remote := "sh -c " + Quote(findAgt)
	if s.Agt != "" {
		remote = Command(s.Agt, []string{"version", "--json"})
	}
	var out, errs bytes.Buffer
	err := s.ssh(ctx, sock, remote, &Call{Stdout: &out, Stderr: &errs})
	if err != nil {
		var exit *ExitError
		if errors.As(err, &exit) {
			why := strings.TrimSpace(lastLine(errs.String()))
			if why == "" {
				why = fmt.Sprintf("agt version exited %d", exit.Code)
			}
			return nil, withInstallHint(fmt.Errorf("no working agt on %s: %s", s.Host, oneLine(why)), s.Host)
		}
		return nil, err
	}
	info, err = parseProbe(out.String(), s.Agt)
	if err != nil {
		return nil, withInstallHint(fmt.Errorf("agt on %s %v", s.Host, err), s.Host)
	}
	if b, err := json.Marshal(info); err == nil {
		writeFileAtomic(s.file(".info"), b)
	}
	return info, s.checkProtocol(info)
}

// parseProbe reads what a host answered the probe: the path of agt when the probe found it
// (configured is "", else the path [hosts] names), then agt version --json.
func parseProbe(out, configured string) (*Info, error) {
	info := &Info{Agt: configured}
	text := strings.TrimSpace(out)
	if configured == "" {
		path, rest, _ := strings.Cut(text, "\n")
		info.Agt, text = strings.TrimSpace(path), rest
	}
	if err := json.Unmarshal([]byte(text), info); err != nil || info.Version == "" || info.Agt == "" {
		return nil, fmt.Errorf("(%s) did not say its version: %q", oneLine(info.Agt), oneLine(text))
	}
	info.Agt, info.Version, info.Revision = oneLine(info.Agt), oneLine(info.Version), oneLine(info.Revision)
	info.OS, info.Arch = oneLine(info.OS), oneLine(info.Arch)
	return info, nil
}

// checkProtocol refuses an agt on the host that is older than this one's Protocol.
func (s *SSH) checkProtocol(info *Info) error {
	if info.Protocol >= Protocol {
		return nil
	}
	return withInstallHint(fmt.Errorf("agt %s on %s is too old for this one: it speaks protocol %d, this agt needs %d",
		oneLine(info.Version), s.Host, info.Protocol, Protocol), s.Host)
}

func withInstallHint(err error, host string) error {
	return fmt.Errorf("%w\nhint: 'agt hosts install %s' copies this agt there", err, host)
}

// Install copies the program at exe (this agt) to the host: to its [hosts] agt, else to
// InstallPath, replacing what was there in one rename (a running supervisor keeps the old
// file). It checks first that the host has this agt's OS and architecture, and returns what
// the installed agt says of itself.
func (s *SSH) Install(ctx context.Context, exe string) (*Info, error) {
	sock, _, err := s.master(ctx)
	if err != nil {
		return nil, err
	}
	var out, errs bytes.Buffer
	if err := s.ssh(ctx, sock, "uname -sm", &Call{Stdout: &out, Stderr: &errs}); err != nil {
		return nil, fmt.Errorf("ask %s its system: %w %s", s.Host, err, oneLine(errs.String()))
	}
	goos, goarch := unameToGo(out.String())
	if goos != runtime.GOOS || goarch != runtime.GOARCH {
		return nil, fmt.Errorf("%s runs %s/%s (uname: %s), this agt is built for %s/%s\nhint: build one for it (CGO_ENABLED=0 GOOS=%s GOARCH=%s go build) and copy it to %s",
			s.Host, goos, goarch, oneLine(out.String()), runtime.GOOS, runtime.GOARCH, goos, goarch, s.target())
	}
	f, err := os.Open(exe)
	if err != nil {
		return nil, fmt.Errorf("read this agt: %w", err)
	}
	defer f.Close()
	// $1 is the target; ~/ is the home directory. A temporary file beside it, then a rename.
	script := `set -e; case $1 in "~/"*) t=$HOME/${1#"~/"};; *) t=$1;; esac; ` +
		`mkdir -p "$(dirname "$t")"; tmp="$t.new.$$"; trap 'rm -f "$tmp"' EXIT; ` +
		`cat > "$tmp"; chmod 755 "$tmp"; mv -f "$tmp" "$t"; trap - EXIT; echo "$t"`
	out.Reset()
	errs.Reset()
	remote := "sh -c " + Quote(script) + " sh " + Quote(s.target())
	if err := s.ssh(ctx, sock, remote, &Call{Stdin: f, Stdout: &out, Stderr: &errs}); err != nil {
		return nil, fmt.Errorf("copy agt to %s: %w %s", s.Host, err, oneLine(errs.String()))
	}
	os.Remove(s.file(".info")) // what the host runs has changed
	info, err := s.probe(ctx, sock, true)
	if err != nil {
		return nil, err
	}
	if p := strings.TrimSpace(out.String()); p != "" {
		info.Agt = p
	}
	return info, nil
}

// target is where Install puts agt on the host.
func (s *SSH) target() string {
	if s.Agt != "" {
		return s.Agt
	}
	return InstallPath
}

// unameToGo maps uname -sm ("Linux x86_64") to Go's GOOS and GOARCH.
func unameToGo(uname string) (goos, goarch string) {
	f := strings.Fields(uname)
	if len(f) < 2 {
		return "unknown", "unknown"
	}
	goos = strings.ToLower(f[0])
	switch f[1] {
	case "x86_64", "amd64":
		goarch = "amd64"
	case "aarch64", "arm64":
		goarch = "arm64"
	case "i386", "i686":
		goarch = "386"
	case "armv6l", "armv7l":
		goarch = "arm"
	case "riscv64", "ppc64le", "s390x", "mips64", "loong64":
		goarch = f[1]
	default:
		goarch = f[1]
	}
	return goos, goarch
}

// readSmall reads a file of the control directory, never through a link, at most 64 KiB.
func readSmall(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 64<<10))
}

// writeFileAtomic writes b to path by a temporary file and a rename.
func writeFileAtomic(path string, b []byte) error {
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

func lastLine(s string) string {
	l := &lastLines{buf: []byte(s)}
	return l.last()
}

// oneLine puts text from a host on one line of at most 200 runes. It is not escaped: what
// prints it for people escapes it, as it does an agent's words.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:199]) + "…"
	}
	return s
}
