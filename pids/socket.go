package pids

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// LocalPeer finds the processes at the other end of a TCP connection that this process
// accepted: self is the connection's local address, peer its remote one. When the kernel's
// table of this network namespace holds the peer's socket, local is true and holders are the
// processes that have it open (those whose descriptors the caller may read: its own user's);
// holders is empty when the socket has no owner any more (closed, in TIME_WAIT) or belongs to
// another user. local is false when the peer is on another machine.
//
// It reads /proc/net/tcp and tcp6, then the descriptors of every process: milliseconds on a
// busy machine, for a caller that asks once per request it must judge, not per packet.
func LocalPeer(self, peer netip.AddrPort) (holders []int, local bool, err error) {
	var inode uint64
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(table)
		if errors.Is(err, fs.ErrNotExist) {
			continue // no IPv6 in this kernel
		}
		if err != nil {
			return nil, false, fmt.Errorf("find the peer of %s: %w", peer, err)
		}
		if ino, ok := FindTCPSocket(b, peer, self); ok {
			inode, local = ino, true
			break
		}
	}
	if !local || inode == 0 {
		return nil, local, nil
	}
	holders, err = socketHolders(inode)
	return holders, true, err
}

// FindTCPSocket looks in table (the text of /proc/net/tcp or tcp6) for the socket whose own
// address is own and whose remote address is remote, and returns its inode (0 for a socket no
// process holds). IPv4 addresses match their IPv4-mapped IPv6 forms.
func FindTCPSocket(table []byte, own, remote netip.AddrPort) (inode uint64, found bool) {
	own, remote = unmapPort(own), unmapPort(remote)
	sc := bufio.NewScanner(bytes.NewReader(table))
	sc.Buffer(make([]byte, 0, 512), 4096)
	first := true
	for sc.Scan() {
		if first { // the header
			first = false
			continue
		}
		f := strings.Fields(sc.Text())
		if len(f) < 10 {
			continue
		}
		l, err1 := parseProcAddr(f[1])
		r, err2 := parseProcAddr(f[2])
		if err1 != nil || err2 != nil || l != own || r != remote {
			continue
		}
		ino, err := strconv.ParseUint(f[9], 10, 64)
		if err != nil {
			continue
		}
		return ino, true
	}
	return 0, false
}

func unmapPort(a netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
}

// parseProcAddr reads an address of /proc/net/tcp: the IP as 8 (IPv4) or 32 (IPv6) hex digits,
// each 32-bit word printed as the host-order integer it is in memory, a colon, the port in hex.
func parseProcAddr(s string) (netip.AddrPort, error) {
	ip, port, ok := strings.Cut(s, ":")
	if !ok || len(port) != 4 || (len(ip) != 8 && len(ip) != 32) {
		return netip.AddrPort{}, fmt.Errorf("bad socket address %q", s)
	}
	p, err := strconv.ParseUint(port, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("bad socket address %q", s)
	}
	raw, err := hex.DecodeString(ip)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("bad socket address %q", s)
	}
	b := make([]byte, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(b[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	addr, _ := netip.AddrFromSlice(b)
	return netip.AddrPortFrom(addr.Unmap(), uint16(p)), nil
}

// socketHolders lists the processes with a descriptor on socket inode.
func socketHolders(inode uint64) ([]int, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, fmt.Errorf("find the holders of a socket: %w", err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, fmt.Errorf("find the holders of a socket: %w", err)
	}
	want := "socket:[" + strconv.FormatUint(inode, 10) + "]"
	var holders []int
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid <= 0 {
			continue
		}
		dir := "/proc/" + name + "/fd/"
		fds, err := os.ReadDir(dir)
		if err != nil {
			continue // gone, or not ours to read
		}
		for _, fd := range fds {
			if link, err := os.Readlink(dir + fd.Name()); err == nil && link == want {
				holders = append(holders, pid)
				break
			}
		}
	}
	return holders, nil
}

// Getenv returns the value of the variable name in the environment of process pid, and
// whether it is set there. It is unset for a process whose environment the caller may not read.
func Getenv(pid int, name string) (string, bool) {
	if pid <= 0 || name == "" || strings.Contains(name, "=") {
		return "", false
	}
	e := envEntry(pid, name+"=")
	if e == "" {
		return "", false
	}
	return e[len(name)+1:], true
}

// Parent returns the parent of pid, 0 when pid is gone or is the first process.
func Parent(pid int) int {
	p, err := readProc(pid)
	if err != nil {
		return 0
	}
	return p.PPID
}
