package agent

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/server"
)

func TestParseConfig_GCSettings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.hcl")
	must.NoError(t, os.WriteFile(path, []byte(`
server {
  enabled            = true
  gc_interval        = "1m"
  alloc_gc_threshold = "30m"
  job_gc_threshold   = "0s"
  node_gc_threshold  = "48h"
}
`), 0o600))
	cfg, err := parseConfig([]string{"-config", path}, &bytes.Buffer{})
	must.NoError(t, err)
	scfg := server.DefaultConfig()
	cfg.Server.applyGC(scfg)
	must.EqOp(t, time.Minute, scfg.GCInterval)
	must.EqOp(t, 30*time.Minute, scfg.AllocGCThreshold)
	must.EqOp(t, time.Duration(0), scfg.JobGCThreshold, must.Sprint("zero is a threshold: collect at the first pass"))
	must.EqOp(t, 48*time.Hour, scfg.NodeGCThreshold)

	// Left out: the server's defaults.
	must.NoError(t, os.WriteFile(path, []byte("server {\n  enabled = true\n}\n"), 0o600))
	cfg, err = parseConfig([]string{"-config", path}, &bytes.Buffer{})
	must.NoError(t, err)
	scfg = server.DefaultConfig()
	cfg.Server.applyGC(scfg)
	must.EqOp(t, server.DefaultGCInterval, scfg.GCInterval)
	must.EqOp(t, server.DefaultAllocGCThreshold, scfg.AllocGCThreshold)
	must.EqOp(t, server.DefaultJobGCThreshold, scfg.JobGCThreshold)
	must.EqOp(t, server.DefaultNodeGCThreshold, scfg.NodeGCThreshold)
	scfg.DataDir = t.TempDir()
	must.NoError(t, scfg.Validate(), must.Sprint("the defaults validate"))
}

func TestParseConfig_GCSettingsErrors(t *testing.T) {
	cases := []struct {
		name, setting string
		want          string
	}{
		{"unparsable interval", `gc_interval = "5 minutes"`,
			`server.gc_interval = "5 minutes" is not a duration; write a number with a unit, such as "30s", "5m", "1h" or "24h"`},
		{"days are not a unit", `node_gc_threshold = "1d"`, `server.node_gc_threshold = "1d" is not a duration`},
		{"negative threshold", `alloc_gc_threshold = "-1h"`, `server.alloc_gc_threshold = "-1h" must not be negative; "0s" collects at the first pass`},
		{"negative job threshold", `job_gc_threshold = "-5m"`, `server.job_gc_threshold = "-5m" must not be negative`},
		{"zero interval", `gc_interval = "0s"`, `server.gc_interval = "0s" must be positive, such as "5m"`},
		{"negative interval", `gc_interval = "-5m"`, `server.gc_interval = "-5m" must be positive`},
		{"a number without a unit", `gc_interval = 300`, `server.gc_interval = "300" is not a duration`},
		{"not a string", `gc_interval = ["5m"]`, "agent.hcl:3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "agent.hcl")
			must.NoError(t, os.WriteFile(path, []byte("server {\n  enabled = true\n  "+tc.setting+"\n}\n"), 0o600))
			_, err := parseConfig([]string{"-config", path}, &bytes.Buffer{})
			must.Error(t, err)
			must.StrContains(t, err.Error(), tc.want)
			must.StrContains(t, err.Error(), "agent config: "+path)
		})
	}

	// Every wrong setting is named at once.
	path := filepath.Join(t.TempDir(), "agent.hcl")
	must.NoError(t, os.WriteFile(path, []byte(`
server {
  gc_interval        = "often"
  alloc_gc_threshold = "-1h"
}
`), 0o600))
	_, err := parseConfig([]string{"-config", path, "-server"}, &bytes.Buffer{})
	must.ErrorContains(t, err, "server.gc_interval")
	must.ErrorContains(t, err, "server.alloc_gc_threshold")
}
