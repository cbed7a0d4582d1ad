package testlog

import (
	"math/rand/v2"
	"net"
	"strconv"
	"testing"
)

// Ports a test picks come from here: below the kernel's ephemeral range
// (32768-60999 by default), where a port found free would otherwise be
// taken, before the agent binds it, as the source port of some outgoing
// connection (seen: a server's HTTP port taken by another server's
// gossip dial).
const (
	portLow  = 20000
	portHigh = 32000
)

// FreePorts returns n distinct ports on addr that were free a moment ago,
// picked at random outside the ephemeral range; it fails the test when it
// cannot find them.
func FreePorts(t testing.TB, addr string, n int) []int {
	t.Helper()
	seen := map[int]bool{}
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries > 1000 {
			t.Fatalf("testlog: no %d free ports on %s between %d and %d", n, addr, portLow, portHigh)
		}
		p := portLow + rand.IntN(portHigh-portLow)
		if seen[p] {
			continue
		}
		seen[p] = true
		l, err := net.Listen("tcp", net.JoinHostPort(addr, strconv.Itoa(p)))
		if err != nil {
			continue // taken
		}
		_ = l.Close()
		ports = append(ports, p)
	}
	return ports
}
