package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// maxLinks bounds the symbolic links followed in one path, as the kernel's 40.
const maxLinks = 40

// resolvePath returns the file a tool's path names, as the kernel will find it: relative to
// dir (the agent's directory), every symbolic link that exists followed, ".." taken after the
// links before it. A part that does not exist yet (a file to be written) is kept as written.
// ok is false when the path cannot be known from here: one through another process's view of
// the file system (/proc/self/fd/3, /dev/stdin), a link that cannot be read, too many links.
//
// /proc/self and /proc/thread-self mean the agent, not agt: their cwd is dir and their root
// is "/". A numbered process's cwd and root are read from /proc.
func resolvePath(dir, p string) (string, bool) {
	if !filepath.IsAbs(p) {
		if dir == "" {
			return filepath.Clean(p), true // no directory to start from: as written
		}
		p = filepath.Join(dir, p)
	}
	rest := split(p)
	done := "/"
	links := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case ".":
			continue
		case "..":
			done = filepath.Dir(done)
			continue
		}
		if done == "/proc" && (c == "self" || c == "thread-self") {
			// The agent's own view: only its cwd and root are known here.
			if len(rest) > 0 && rest[0] == "task" && len(rest) > 1 {
				rest = rest[2:]
			}
			switch {
			case len(rest) > 0 && rest[0] == "cwd":
				done, rest = filepath.Clean(dir), rest[1:]
				if dir == "" {
					return "", false
				}
			case len(rest) > 0 && rest[0] == "root":
				done, rest = "/", rest[1:]
			default:
				return "", false
			}
			continue
		}
		next := filepath.Join(done, c)
		if c == "root" && strings.HasPrefix(done, "/proc/") && !sameMountNamespace(done) {
			return "", false // another mount namespace's files: not the ones seen here
		}
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			// Not there yet: the rest is as written.
			return filepath.Clean(filepath.Join(append([]string{next}, rest...)...)), true
		}
		if err != nil {
			return "", false
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = next
			continue
		}
		links++
		if links > maxLinks {
			return "", false
		}
		target, err := os.Readlink(next)
		if err != nil || target == "" {
			return "", false
		}
		if !filepath.IsAbs(target) {
			if strings.HasPrefix(next, "/proc/") {
				return "", false // pipe:[…], socket:[…], anon_inode:…: no path
			}
		} else {
			done = "/"
		}
		rest = append(split(target), rest...)
	}
	return done, true
}

// split cuts a path into its names, empty ones dropped.
func split(p string) []string {
	return strings.FieldsFunc(p, func(r rune) bool { return r == '/' })
}

// sameMountNamespace reports whether the process whose /proc directory is proc sees the files
// agt sees.
func sameMountNamespace(proc string) bool {
	theirs, err1 := os.Readlink(proc + "/ns/mnt")
	ours, err2 := os.Readlink("/proc/self/ns/mnt")
	return err1 == nil && err2 == nil && theirs == ours
}
