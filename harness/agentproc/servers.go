package agentproc

import (
	"fmt"
	"github.com/berth-csi/berth/internal/testlog"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// StartServers starts one server agent of bin on each of addrs (named s1,
// s2, ...), with -bootstrap-expect len(addrs), each joining the others,
// logging to logDir/<name>.log, and stops them at the test's cleanup.
// extra is added to each agent's flags.
func StartServers(t testing.TB, bin, logDir string, addrs []string, extra ...string) []*Agent {
	t.Helper()
	var servers []*Agent
	for i, addr := range addrs {
		ports := testlog.FreePorts(t, addr, 3)
		servers = append(servers, &Agent{Name: fmt.Sprintf("s%d", i+1), Addr: addr, Server: true,
			HTTPPort: ports[0], RPCPort: ports[1], SerfPort: ports[2], DataDir: t.TempDir()})
	}
	t.Cleanup(func() {
		for _, s := range servers {
			if s.Proc != nil {
				s.Proc.Stop(10 * time.Second)
			}
		}
	})
	for _, s := range servers {
		args := []string{"agent", "-server", "-node-name", s.Name, "-data-dir", s.DataDir, "-bind", s.Addr,
			"-http-port", strconv.Itoa(s.HTTPPort), "-rpc-port", strconv.Itoa(s.RPCPort),
			"-serf-port", strconv.Itoa(s.SerfPort), "-bootstrap-expect", strconv.Itoa(len(addrs))}
		args = append(args, extra...)
		for _, o := range servers {
			if o != s {
				args = append(args, "-join", net.JoinHostPort(o.Addr, strconv.Itoa(o.SerfPort)))
			}
		}
		s.Proc = &Proc{Name: s.Name, Bin: bin, Args: args, LogPath: filepath.Join(logDir, s.Name+".log")}
		if err := s.Proc.Start(); err != nil {
			t.Fatal(err)
		}
	}
	return servers
}
