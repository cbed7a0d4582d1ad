package agentproc

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/berth-csi/berth/client/clienttest"
	bexec "github.com/berth-csi/berth/client/drivers/exec"
	"github.com/berth-csi/berth/internal/testlog"
)

// StartClient starts a client agent of bin named name, bound to addr and
// joined to servers, logging to logDir/<name>.log. clientHCL is added
// inside its client block (allow_root_tasks, say) and extraHCL after it
// (plugin blocks). Its data dir is short enough for plugin sockets. At the
// test's cleanup it is stopped, the tasks it left are killed by PID and
// what stays mounted under its data dir is detached.
func StartClient(t testing.TB, bin, logDir, name, addr string, servers []*Agent, clientHCL, extraHCL string) *Agent {
	t.Helper()
	dataDir, err := os.MkdirTemp("", "bc")
	if err != nil {
		t.Fatalf("agentproc: data dir of client %s: %v", name, err)
	}
	a := &Agent{Name: name, Addr: addr, HTTPPort: testlog.FreePorts(t, addr, 1)[0], DataDir: dataDir}
	var rpc []string
	for _, s := range servers {
		rpc = append(rpc, strconv.Quote(s.RPCAddr()))
	}
	cfg := filepath.Join(t.TempDir(), name+".hcl")
	hcl := fmt.Sprintf(`
name      = %q
data_dir  = %q
bind_addr = %q
ports { http = %d }
client {
  enabled = true
  servers = [%s]
%s}
%s`, name, dataDir, addr, a.HTTPPort, strings.Join(rpc, ", "), clientHCL, extraHCL)
	if err := os.WriteFile(cfg, []byte(hcl), 0o600); err != nil {
		t.Fatalf("agentproc: config of client %s: %v", name, err)
	}
	a.Proc = &Proc{Name: name, Bin: bin, Args: []string{"agent", "-config", cfg}, LogPath: filepath.Join(logDir, name+".log")}
	t.Cleanup(func() {
		a.Proc.Stop(10 * time.Second)
		clienttest.KillTasksUnder(dataDir)
		if detached, err := bexec.DetachMountsUnder(dataDir, nil); err != nil {
			t.Errorf("agentproc: detach mounts under %s: %v", dataDir, err)
		} else if len(detached) > 0 {
			t.Logf("agentproc: detached %d mounts left under %s", len(detached), dataDir)
		}
		_ = os.RemoveAll(dataDir)
	})
	if err := a.Proc.Start(); err != nil {
		t.Fatal(err)
	}
	return a
}
