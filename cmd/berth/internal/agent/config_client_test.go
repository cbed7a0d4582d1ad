package agent

import (
	"bytes"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/client"
	"github.com/berth-csi/berth/structs"
)

// TestParseConfig_ClientResourcesMetaUsers: the client block's resources,
// meta and user policy reach the client's config.
func TestParseConfig_ClientResourcesMetaUsers(t *testing.T) {
	path := writeConfig(t, t.TempDir(), `
client {
  enabled           = true
  servers           = ["127.0.0.1:4747"]
  cpu_total_compute = 8000
  memory_total_mb   = 4096
  reserved {
    cpu    = 500
    memory = 512
  }
  meta {
    storage = "nvme"
    rack    = "r1"
  }
  user {
    allowed       = ["app", "nobody"]
    denied        = ["backup"]
    denied_groups = ["docker"]
  }
  volume_stats_interval = "30s"
}
`)
	cfg, err := parseConfig([]string{"-config", path}, &bytes.Buffer{})
	must.NoError(t, err)
	ccfg := client.DefaultConfig()
	cfg.applyClient(ccfg)
	must.EqOp(t, 8000, ccfg.CPUTotalCompute)
	must.EqOp(t, 4096, ccfg.MemoryTotalMB)
	must.Eq(t, &structs.NodeResources{CPU: 500, MemoryMB: 512}, ccfg.Reserved)
	must.Eq(t, map[string]string{"storage": "nvme", "rack": "r1"}, ccfg.Meta)
	must.Eq(t, structs.TaskUserPolicy{Allowed: []string{"app", "nobody"}, Denied: []string{"backup"}, DeniedGroups: []string{"docker"}}, ccfg.Users)
	must.EqOp(t, 30*time.Second, ccfg.VolumeStatsInterval)

	// Unset keeps the default; "0s" turns the collection off.
	for value, want := range map[string]time.Duration{"": time.Minute, `volume_stats_interval = "0s"`: 0} {
		path := writeConfig(t, t.TempDir(), "client {\n  enabled = true\n  "+value+"\n}\n")
		cfg, err := parseConfig([]string{"-config", path}, &bytes.Buffer{})
		must.NoError(t, err)
		ccfg := client.DefaultConfig()
		cfg.applyClient(ccfg)
		must.EqOp(t, want, ccfg.VolumeStatsInterval, must.Sprint(value))
	}
}

// TestParseConfig_ClientErrors: what the client block gets wrong is
// refused, saying what and what to do.
func TestParseConfig_ClientErrors(t *testing.T) {
	for _, tc := range []struct{ name, block, want string }{
		{"negative reserved", "reserved {\n    memory = -1\n  }", "reserved: cpu, memory and cores must not be negative"},
		{"meta not a string", "meta {\n    disks = [1]\n  }", "meta: disks (line"},
		{"bad user", "user {\n    allowed = [\"no body\"]\n  }", `user "no body" is not a user name`},
		{"root denied but allowed", "allow_root_tasks = true\n  user {\n    denied = [\"root\"]\n  }",
			"allow_root_tasks = true and user { denied } lists root"},
		{"stats interval not a duration", `volume_stats_interval = "1 minute"`, `volume_stats_interval "1 minute" is not a duration`},
		{"stats interval too short", `volume_stats_interval = "10ms"`, `volume_stats_interval "10ms" is less than 1s`},
		{"stats interval negative", `volume_stats_interval = "-5s"`, `volume_stats_interval "-5s" is negative`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeConfig(t, t.TempDir(), "client {\n  enabled = true\n  servers = [\"127.0.0.1:4747\"]\n  "+tc.block+"\n}\n")
			_, err := parseConfig([]string{"-config", path}, &bytes.Buffer{})
			must.Error(t, err)
			must.StrContains(t, err.Error(), tc.want)
		})
	}
}
