package pids

import (
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A table as /proc/net/tcp prints it (on a little-endian machine): a listener on
// 127.0.0.1:35163, one connection to it from port 40000, and both of its ends.
const tcpTable = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:895B 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5923554 1 0000000096b576d8 100 0 0 10 0
   1: 0100007F:9C40 0100007F:895B 01 00000000:00000000 00:00000000 00000000     0        0 777 1 0000000096b576d8 20 4 0 10 -1
   2: 0100007F:895B 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 778 1 0000000096b576d8 20 4 0 10 -1
`

// The same connection over IPv6 loopback, and one from an IPv4-mapped address.
const tcp6Table = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:9C40 00000000000000000000000001000000:895B 01 00000000:00000000 00:00000000 00000000     0        0 888 1 0000000000000000 20 4 0 10 -1
   1: 0000000000000000FFFF00000100007F:9C41 0000000000000000FFFF00000100007F:895B 01 00000000:00000000 00:00000000 00000000     0        0 999 1 0000000000000000 20 4 0 10 -1
`

func TestFindTCPSocket(t *testing.T) {
	ap := netip.MustParseAddrPort
	for _, tc := range []struct {
		table       string
		own, remote netip.AddrPort
		inode       uint64
		found       bool
	}{
		{tcpTable, ap("127.0.0.1:40000"), ap("127.0.0.1:35163"), 777, true},
		{tcpTable, ap("127.0.0.1:35163"), ap("127.0.0.1:40000"), 778, true},
		{tcpTable, ap("127.0.0.1:40001"), ap("127.0.0.1:35163"), 0, false},
		{tcpTable, ap("10.0.0.2:40000"), ap("127.0.0.1:35163"), 0, false},
		{tcp6Table, ap("[::1]:40000"), ap("[::1]:35163"), 888, true},
		// A mapped address is its IPv4 address.
		{tcp6Table, ap("127.0.0.1:40001"), ap("127.0.0.1:35163"), 999, true},
		{tcp6Table, ap("[::ffff:127.0.0.1]:40001"), ap("127.0.0.1:35163"), 999, true},
		{"", ap("127.0.0.1:1"), ap("127.0.0.1:2"), 0, false},
	} {
		inode, found := FindTCPSocket([]byte(tc.table), tc.own, tc.remote)
		if inode != tc.inode || found != tc.found {
			t.Errorf("FindTCPSocket(%s → %s) = %d, %v; want %d, %v", tc.own, tc.remote, inode, found, tc.inode, tc.found)
		}
	}
}

// TestLocalPeer connects to a listener of this process from this process and from a child:
// LocalPeer finds who holds the client's end.
func TestLocalPeer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accept := func() net.Conn {
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	peerOf := func(c net.Conn) ([]int, bool) {
		self := netip.MustParseAddrPort(c.LocalAddr().String())
		peer := netip.MustParseAddrPort(c.RemoteAddr().String())
		holders, local, err := LocalPeer(self, peer)
		if err != nil {
			t.Fatal(err)
		}
		return holders, local
	}

	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server := accept()
	defer server.Close()
	if holders, local := peerOf(server); !local || !slices.Contains(holders, os.Getpid()) {
		t.Errorf("a connection from this process: holders %v, local %v; want this process", holders, local)
	}

	// A child holds the other end: bash's /dev/tcp opens it, then waits on stdin.
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash for a client of its own")
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	cmd := exec.Command("bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/"+port+"; read")
	stdin, _ := cmd.StdinPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		cmd.Wait()
	}()
	child := accept()
	defer child.Close()
	holders, local := peerOf(child)
	if !local || !slices.Equal(holders, []int{cmd.Process.Pid}) {
		t.Errorf("a connection from child %d: holders %v, local %v", cmd.Process.Pid, holders, local)
	}
	if Parent(cmd.Process.Pid) != os.Getpid() {
		t.Errorf("Parent(%d) = %d, want %d", cmd.Process.Pid, Parent(cmd.Process.Pid), os.Getpid())
	}
}

func TestGetenv(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	cmd.Env = []string{"AGT_INSTANCE=abc", "EMPTY="}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	pid := cmd.Process.Pid
	// The environment is in place once the exec is done.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if _, ok := Getenv(pid, "AGT_INSTANCE"); ok {
			break
		}
	}
	if v, ok := Getenv(pid, "AGT_INSTANCE"); v != "abc" || !ok {
		t.Errorf("Getenv(AGT_INSTANCE) = %q, %v", v, ok)
	}
	if v, ok := Getenv(pid, "EMPTY"); v != "" || !ok {
		t.Errorf("Getenv(EMPTY) = %q, %v; want set and empty", v, ok)
	}
	if _, ok := Getenv(pid, "AGT_INST"); ok {
		t.Errorf("Getenv(AGT_INST) is set: a prefix of a name is not the name")
	}
	if _, ok := Getenv(1<<30, "PATH"); ok {
		t.Errorf("Getenv of no process is set")
	}
}

func FuzzFindTCPSocket(f *testing.F) {
	f.Add(tcpTable, "127.0.0.1:40000", "127.0.0.1:35163")
	f.Add(tcp6Table, "[::1]:40000", "[::1]:35163")
	f.Add("x\n 0: 0100007F:zz 0100007F:895B 01 a b c d e 1", "127.0.0.1:1", "127.0.0.1:2")
	f.Fuzz(func(t *testing.T, table, own, remote string) {
		o, err1 := netip.ParseAddrPort(own)
		r, err2 := netip.ParseAddrPort(remote)
		if err1 != nil || err2 != nil {
			return
		}
		inode, found := FindTCPSocket([]byte(table), o, r)
		if !found && inode != 0 {
			t.Fatalf("not found, yet inode %d", inode)
		}
		if found && !strings.Contains(table, strconv.FormatUint(inode, 10)) {
			t.Fatalf("inode %d is not in the table", inode)
		}
	})
}

// BenchmarkLocalPeer is the cost of finding the process behind a local connection, which
// agt serve pays once per approve or deny: two tables and every process's descriptors.
func BenchmarkLocalPeer(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	server, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer server.Close()
	self := netip.MustParseAddrPort(server.LocalAddr().String())
	peer := netip.MustParseAddrPort(server.RemoteAddr().String())
	for b.Loop() {
		if holders, local, err := LocalPeer(self, peer); err != nil || !local || len(holders) != 1 {
			b.Fatalf("LocalPeer = %v, %v, %v", holders, local, err)
		}
	}
	procs, _ := Scan()
	b.ReportMetric(float64(len(procs)), "procs")
}
