package server_test

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/server"
	"github.com/berth-csi/berth/server/servertest"
)

// Servers dial each other from their bind address (raft, the RPC pool,
// gossip), not from whatever the kernel picks (127.0.0.1 here), so that
// firewall rules by address pair see them as themselves.
func TestCluster_DialsFromBindAddr(t *testing.T) {
	ips := []string{"127.0.0.41", "127.0.0.42", "127.0.0.43"}
	n := 0
	c := servertest.Cluster(t, 3, func(cfg *server.Config) {
		cfg.BindAddr = ips[n]
		n++
	})
	leader := c.Leader()
	must.NotNil(t, leader)
	// A write through a follower: forwarded to the leader, replicated.
	registerPluginNode(t, c.Followers()[0], "node-1", "hostpath")

	ports := map[string]bool{} // ip:port of every server's listeners
	for _, s := range c.Running() {
		ports[s.RPCAddr()] = true
		ports[s.SerfAddr()] = true
	}
	bound := map[string]bool{}
	for _, ip := range ips {
		bound[ip] = true
	}
	leaderIP := leader.Config.BindAddr

	waitFor(t, 10*time.Second, "the leader's connections to every follower", func() bool {
		conns := establishedTCP(t)
		for _, conn := range conns {
			if ports[conn.local] && !bound[conn.remoteIP] {
				t.Fatalf("connection to %s from %s: not a server's bind address", conn.local, conn.remoteIP)
			}
		}
		for _, f := range c.Followers() {
			found := false
			for _, conn := range conns {
				found = found || (conn.local == f.RPCAddr() && conn.remoteIP == leaderIP)
			}
			if !found {
				return false
			}
		}
		return true
	})
}

type tcpConn struct {
	local    string // ip:port
	remoteIP string
}

// establishedTCP lists the host's established IPv4 TCP connections.
func establishedTCP(t *testing.T) []tcpConn {
	t.Helper()
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		t.Skipf("no /proc/net/tcp: %v", err)
	}
	defer f.Close()
	var out []tcpConn
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || fields[3] != "01" { // TCP_ESTABLISHED
			continue
		}
		lip, lport := procAddr(t, fields[1])
		rip, _ := procAddr(t, fields[2])
		out = append(out, tcpConn{local: net.JoinHostPort(lip, lport), remoteIP: rip})
	}
	must.NoError(t, sc.Err())
	return out
}

// procAddr decodes /proc/net/tcp's "0100007F:1F90": the IPv4 address in
// host byte order, the port big-endian.
func procAddr(t *testing.T, s string) (string, string) {
	ipHex, portHex, ok := strings.Cut(s, ":")
	must.True(t, ok)
	raw, err := hex.DecodeString(ipHex)
	must.NoError(t, err)
	ip := make(net.IP, 4)
	binary.BigEndian.PutUint32(ip, binary.NativeEndian.Uint32(raw))
	port, err := strconv.ParseUint(portHex, 16, 16)
	must.NoError(t, err)
	return ip.String(), strconv.FormatUint(port, 10)
}
