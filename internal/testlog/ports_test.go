package testlog

import (
	"net"
	"strconv"
	"testing"

	"github.com/shoenig/test/must"
)

func TestFreePorts(t *testing.T) {
	ports := FreePorts(t, "127.0.0.1", 5)
	must.SliceLen(t, 5, ports)
	seen := map[int]bool{}
	for _, p := range ports {
		must.False(t, seen[p], must.Sprintf("port %d twice", p))
		seen[p] = true
		must.Between(t, portLow, p, portHigh-1)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		must.NoError(t, err, must.Sprintf("port %d is bindable", p))
		_ = l.Close()
	}
}
