package agent

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/client"
	"github.com/berth-csi/berth/cmd/berth/internal/spec"
	"github.com/berth-csi/berth/structs"
)

func TestParseConfig_Flags(t *testing.T) {
	cfg, err := parseConfig([]string{"-server", "-data-dir", "/d", "-bind", "127.0.0.2", "-http-port", "5746",
		"-rpc-port", "5747", "-serf-port", "5748", "-bootstrap-expect", "3", "-join", "a:1", "-join", "b:2,c:3"}, &bytes.Buffer{})
	must.NoError(t, err)
	must.True(t, cfg.Server.Enabled)
	must.False(t, cfg.Client.Enabled)
	must.Eq(t, "/d", cfg.DataDir)
	must.Eq(t, "127.0.0.2", cfg.BindAddr)
	must.Eq(t, PortsConfig{HTTP: 5746, RPC: 5747, Serf: 5748}, *cfg.Ports)
	must.Eq(t, 3, cfg.Server.BootstrapExpect)
	must.Eq(t, []string{"a:1", "b:2", "c:3"}, cfg.Server.Join)
	must.False(t, cfg.EnableDebug, must.Sprint("profiles are off unless asked for"))
}

func TestParseConfig_FileThenFlags(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.hcl")
	must.NoError(t, os.WriteFile(path, []byte(`
name         = "s1"
data_dir     = "/var/lib/berth"
enable_debug = true
ports { http = 6746 }
server {
  enabled          = true
  bootstrap_expect = 3
  join             = ["127.0.0.1:4748"]
  job_max_count    = 500
  max_heartbeats_per_second = 20
}
`), 0o600))
	cfg, err := parseConfig([]string{"-config", path, "-data-dir", "/override"}, &bytes.Buffer{})
	must.NoError(t, err)
	must.Eq(t, "s1", cfg.Name)
	must.Eq(t, "/override", cfg.DataDir, must.Sprint("flags win over the file"))
	must.Eq(t, 6746, cfg.Ports.HTTP)
	must.Eq(t, 4747, cfg.Ports.RPC, must.Sprint("ports left out keep their defaults"))
	must.True(t, cfg.Server.Enabled)
	must.Eq(t, []string{"127.0.0.1:4748"}, cfg.Server.Join)
	must.Eq(t, 500, cfg.Server.JobMaxCount)
	must.Eq(t, 20.0, *cfg.Server.MaxHeartbeatsPerSecond)
	must.True(t, cfg.EnableDebug)
	cfg, err = parseConfig([]string{"-config", path, "-enable-debug=false"}, &bytes.Buffer{})
	must.NoError(t, err)
	must.False(t, cfg.EnableDebug, must.Sprint("the flag wins over the file"))
}

func TestParseConfig_Errors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.hcl")
	must.NoError(t, os.WriteFile(bad, []byte("server {\n  bootstrap_expct = 3\n}\n"), 0o600))
	cases := []struct {
		name  string
		args  []string
		usage bool
		want  string
	}{
		{"nothing to run", []string{"-data-dir", "/d"}, true, "-dev, -server or -client"},
		{"unknown flag", []string{"-servr"}, true, "servr"},
		{"stray argument", []string{"-server", "extra"}, true, `"extra"`},
		{"bad config file", []string{"-config", bad}, false, "bad.hcl:2"},
		{"missing config file", []string{"-config", "/nope/agent.hcl"}, false, "/nope/agent.hcl"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseConfig(tc.args, &bytes.Buffer{})
			must.Error(t, err)
			var u errUsage
			must.EqOp(t, tc.usage, errors.As(err, &u))
			must.StrContains(t, err.Error(), tc.want)
		})
	}
}

func TestRun_ExitCodes(t *testing.T) {
	var stderr bytes.Buffer
	must.EqOp(t, 2, Run(context.Background(), []string{"-nope"}, &bytes.Buffer{}, &stderr))
	stderr.Reset()
	must.EqOp(t, 1, Run(context.Background(), []string{"-client", "-data-dir", t.TempDir()}, &bytes.Buffer{}, &stderr))
	must.StrContains(t, stderr.String(), "-servers")
	stderr.Reset()
	must.EqOp(t, 1, Run(context.Background(), []string{"-server", "-bind", "0.0.0.0", "-data-dir", t.TempDir()}, &bytes.Buffer{}, &stderr))
	must.StrContains(t, stderr.String(), "bind a specific IP")
}

func TestParseConfig_ClientWithPlugins(t *testing.T) {
	path := filepath.Join(t.TempDir(), "client.hcl")
	must.NoError(t, os.WriteFile(path, []byte(`
client {
  enabled = true
  servers = ["127.0.0.1:4747", "127.0.0.1:5747"]
}
plugin "hostpath" {
  type   = "monolith"
  socket = "/tmp/berth/hostpath.sock"
}
plugin "ebs" {
  type   = "node"
  socket = "/run/csi/ebs.sock"
}
`), 0o600))
	cfg, err := parseConfig([]string{"-config", path, "-data-dir", "/d"}, &bytes.Buffer{})
	must.NoError(t, err)
	must.True(t, cfg.Client.Enabled)
	must.False(t, cfg.Server.Enabled)
	must.Eq(t, []string{"127.0.0.1:4747", "127.0.0.1:5747"}, cfg.Client.Servers)
	must.SliceLen(t, 2, cfg.Plugins)
	must.Eq(t, PluginConfig{ID: "ebs", Type: "node", Socket: "/run/csi/ebs.sock"}, *cfg.Plugins[1])

	bad := filepath.Join(t.TempDir(), "bad.hcl")
	must.NoError(t, os.WriteFile(bad, []byte("client { enabled = true }\nplugin \"x\" {\n  type = \"node\"\n}\n"), 0o600))
	_, err = parseConfig([]string{"-config", bad}, &bytes.Buffer{})
	must.ErrorContains(t, err, "bad.hcl:2")
	must.ErrorContains(t, err, "socket")
}

func TestRun_ClientBadPlugin(t *testing.T) {
	path := filepath.Join(t.TempDir(), "client.hcl")
	must.NoError(t, os.WriteFile(path, []byte(`
client {
  enabled = true
  servers = ["127.0.0.1:4747"]
}
plugin "x" {
  type   = "sideways"
  socket = "relative.sock"
}
`), 0o600))
	var stderr bytes.Buffer
	must.EqOp(t, 1, Run(context.Background(), []string{"-config", path, "-data-dir", t.TempDir()}, &bytes.Buffer{}, &stderr))
	must.StrContains(t, stderr.String(), `plugin "x"`)
	must.StrContains(t, stderr.String(), "sideways")
}

// The file's errors are HCL's, as spec.Errors: file, line, and the name
// meant when one is misspelt.
func TestParseConfig_FileErrors_LineAndSuggestion(t *testing.T) {
	cases := []struct {
		name, src string
		wantLine  int
		want      []string
	}{
		{"misspelt field in a block", "server {\n  enabled = true\n  bootstrap_expct = 3\n}\n", 3,
			[]string{`"bootstrap_expct"`, `Did you mean "bootstrap_expect"?`}},
		{"misspelt top-level field", "name = \"s1\"\ndata_dri = \"/d\"\n", 2,
			[]string{`"data_dri"`, `Did you mean "data_dir"?`}},
		{"misspelt block", "name = \"s1\"\n\nclinet {\n  enabled = true\n}\n", 3,
			[]string{`"clinet"`, `Did you mean "client"?`}},
		{"unknown field, no guess", "ports {\n  grpc_port_number = 1\n}\n", 2,
			[]string{`"grpc_port_number" is not expected here`}},
		{"wrong type", "server {\n  bootstrap_expect = [1]\n}\n", 2,
			[]string{"unsuitable value type", "number required"}},
		{"not a bool", "server {\n  enabled = \"maybe\"\n}\n", 2,
			[]string{"unsuitable value type", "a bool is required"}},
		{"plugin without socket", "plugin \"ebs\" {\n  type = \"node\"\n}\n", 1, []string{`"socket" is required`}},
		{"one-line block with two arguments", "name = \"s1\"\nports { http = 4746  rpc = 4747 }\n", 2,
			[]string{"put each argument on its own line"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "agent.hcl")
			must.NoError(t, os.WriteFile(path, []byte(tc.src), 0o600))
			_, err := parseConfig([]string{"-config", path, "-server"}, &bytes.Buffer{})
			must.Error(t, err)
			for _, want := range tc.want {
				must.ErrorContains(t, err, want)
			}
			var se *spec.Error
			must.True(t, errors.As(err, &se), must.Sprintf("not a *spec.Error: %v", err))
			must.EqOp(t, path, se.File)
			must.EqOp(t, tc.wantLine, se.Line, must.Sprint(err))
			must.StrHasPrefix(t, "agent config: "+path+":"+strconv.Itoa(tc.wantLine)+": ", err.Error())
			var u errUsage
			must.False(t, errors.As(err, &u), must.Sprint("a bad file is not a usage error"))
		})
	}
}

// HCL converts a quoted number or bool, as it did when the agent read its
// file with hclsimple.
func TestParseConfig_QuotedValuesConvert(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.hcl")
	must.NoError(t, os.WriteFile(path, []byte("server {\n  enabled          = \"true\"\n  bootstrap_expect = \"3\"\n}\n"), 0o600))
	cfg, err := parseConfig([]string{"-config", path}, &bytes.Buffer{})
	must.NoError(t, err)
	must.True(t, cfg.Server.Enabled)
	must.EqOp(t, 3, cfg.Server.BootstrapExpect)
}

// HCL's JSON form, which the agent read before it read HCL through the
// spec package, still decodes the same.
func TestParseConfig_JSONFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "client.json")
	must.NoError(t, os.WriteFile(path, []byte(`{
  "name": "c1",
  "ports": {"http": 7746},
  "client": {"enabled": true, "servers": ["127.0.0.1:4747"]},
  "plugin": {"ebs": {"type": "node", "socket": "/run/csi/ebs.sock"}}
}`), 0o600))
	cfg, err := parseConfig([]string{"-config", path, "-data-dir", "/d"}, &bytes.Buffer{})
	must.NoError(t, err)
	must.EqOp(t, "c1", cfg.Name)
	must.Eq(t, PortsConfig{HTTP: 7746, RPC: 4747, Serf: 4748}, *cfg.Ports)
	must.True(t, cfg.Client.Enabled)
	must.Eq(t, []*PluginConfig{{ID: "ebs", Type: "node", Socket: "/run/csi/ebs.sock"}}, cfg.Plugins)
}

// Defaults survive a file that sets a block's fields to zero or leaves
// them out, as they did when gohcl decoded the file.
func TestParseConfig_ZeroesKeepDefaults(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.hcl")
	must.NoError(t, os.WriteFile(path, []byte(`bind_addr = ""
log_level = ""
ports {
  rpc = 0
}
server {
  enabled = true
}
`), 0o600))
	cfg, err := parseConfig([]string{"-config", path}, &bytes.Buffer{})
	must.NoError(t, err)
	must.EqOp(t, "127.0.0.1", cfg.BindAddr)
	must.EqOp(t, "info", cfg.LogLevel)
	must.Eq(t, PortsConfig{HTTP: 4746, RPC: 4747, Serf: 4748}, *cfg.Ports)
	must.Eq(t, ServerConfig{Enabled: true, BootstrapExpect: 1}, *cfg.Server)
	must.Eq(t, ClientConfig{}, *cfg.Client)
}

// The agent configs in examples/ parse, and say what their comments say.
func TestParseConfig_Examples(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "..", "..", "..", "examples", "agent-*.hcl"))
	must.NoError(t, err)
	must.SliceNotEmpty(t, paths)
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			cfg, err := parseConfig([]string{"-config", path}, &bytes.Buffer{})
			must.NoError(t, err)
			switch {
			case strings.HasSuffix(path, "agent-server.hcl"):
				must.True(t, cfg.Server.Enabled)
				must.EqOp(t, 3, cfg.Server.BootstrapExpect)
				must.Eq(t, PortsConfig{HTTP: 4746, RPC: 4747, Serf: 4748}, *cfg.Ports)
			case strings.HasSuffix(path, "agent-client.hcl"):
				must.True(t, cfg.Client.Enabled)
				must.SliceLen(t, 3, cfg.Client.Servers)
				must.Eq(t, []*PluginConfig{{ID: "hostpath", Type: "monolith", Socket: "/tmp/berth/hostpath.sock"}}, cfg.Plugins)
			}
		})
	}
}

// TestParseConfig_DockerDriver: the driver "docker" block reaches the
// client's config; without one, docker is on at the default endpoint, and
// privileged containers are off but in -dev.
func TestParseConfig_DockerDriver(t *testing.T) {
	cases := []struct {
		name, src  string
		dev        bool
		enabled    bool
		endpoint   string
		privileged bool
	}{
		{"no block", "client {\n  enabled = true\n}\n", false, true, client.DefaultDockerEndpoint, false},
		{"every setting", `client {
  enabled = true
}
driver "docker" {
  endpoint         = "tcp://127.0.0.1:2375"
  allow_privileged = true
}
`, false, true, "tcp://127.0.0.1:2375", true},
		{"turned off", "driver \"docker\" {\n  enabled = false\n}\n", false, false, client.DefaultDockerEndpoint, false},
		{"endpoint only", "driver \"docker\" {\n  endpoint = \"unix:///run/docker.sock\"\n}\n", false, true, "unix:///run/docker.sock", false},
		{"dev allows privileged", "", true, true, client.DefaultDockerEndpoint, true},
		{"JSON", `{"driver": {"docker": {"allow_privileged": true}}}`, false, true, client.DefaultDockerEndpoint, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"-client", "-servers", "127.0.0.1:4747"}
			if tc.dev {
				args = []string{"-dev"}
			}
			if tc.src != "" {
				name := "agent.hcl"
				if strings.HasPrefix(tc.src, "{") {
					name = "agent.json"
				}
				path := filepath.Join(t.TempDir(), name)
				must.NoError(t, os.WriteFile(path, []byte(tc.src), 0o600))
				args = append(args, "-config", path)
			}
			cfg, err := parseConfig(args, &bytes.Buffer{})
			must.NoError(t, err)
			ccfg := client.DefaultConfig()
			cfg.applyDrivers(ccfg)
			must.EqOp(t, tc.enabled, ccfg.DockerEnabled)
			must.EqOp(t, tc.endpoint, ccfg.DockerEndpoint)
			must.EqOp(t, tc.privileged, ccfg.DockerAllowPrivileged)
		})
	}
}

// TestParseConfig_DockerAllowCaps: allow_caps as people write them is
// stored normalized; unset stays nil (the client's default set), -dev
// allows any.
func TestParseConfig_DockerAllowCaps(t *testing.T) {
	cases := []struct {
		name, src string
		dev       bool
		want      []string
	}{
		{"unset", "driver \"docker\" {\n  enabled = true\n}\n", false, nil},
		{"as people write them", "driver \"docker\" {\n  allow_caps = [\"CAP_SYS_ADMIN\", \"chown\", \"SYS_ADMIN\"]\n}\n", false,
			[]string{"sys_admin", "chown"}},
		{"none", "driver \"docker\" {\n  allow_caps = []\n}\n", false, []string{}},
		{"dev", "", true, []string{structs.CapAll}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"-client", "-servers", "127.0.0.1:4747"}
			if tc.dev {
				args = []string{"-dev"}
			}
			if tc.src != "" {
				path := filepath.Join(t.TempDir(), "agent.hcl")
				must.NoError(t, os.WriteFile(path, []byte(tc.src), 0o600))
				args = append(args, "-config", path)
			}
			cfg, err := parseConfig(args, &bytes.Buffer{})
			must.NoError(t, err)
			ccfg := client.DefaultConfig()
			cfg.applyDrivers(ccfg)
			must.Eq(t, tc.want, ccfg.DockerAllowCaps)
		})
	}
}

func TestParseConfig_DriverErrors(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string
	}{
		{"unknown driver", "driver \"podman\" {\n  endpoint = \"unix:///run/podman.sock\"\n}\n",
			[]string{`agent.hcl: driver "podman" is not a driver berth configures; the known ones are "docker" (exec takes no settings)`}},
		{"exec takes no block", "driver \"exec\" {\n}\n", []string{`driver "exec" is not a driver berth configures`}},
		{"docker twice", "driver \"docker\" {\n  enabled = true\n}\ndriver \"docker\" {\n  allow_privileged = true\n}\n",
			[]string{`driver "docker" is configured twice; put its settings in one block`}},
		{"misspelt setting", "driver \"docker\" {\n  allow_privilged = true\n}\n",
			[]string{"agent.hcl:2", `"allow_privilged"`, `Did you mean "allow_privileged"?`}},
		{"no label", "driver {\n  enabled = true\n}\n", []string{"agent.hcl:1", "driver"}},
		{"unknown capability", "driver \"docker\" {\n  allow_caps = [\"sys_admin\", \"sys_adm\"]\n}\n",
			[]string{`driver "docker": allow_caps[1] "sys_adm" is not a Linux capability; did you mean "sys_admin"?`}},
		{"privileged not a bool", "driver \"docker\" {\n  allow_privileged = \"sometimes\"\n}\n", []string{"agent.hcl:2", "a bool is required"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "agent.hcl")
			must.NoError(t, os.WriteFile(path, []byte(tc.src), 0o600))
			_, err := parseConfig([]string{"-config", path, "-client", "-servers", "127.0.0.1:4747"}, &bytes.Buffer{})
			must.Error(t, err)
			for _, want := range tc.want {
				must.ErrorContains(t, err, want)
			}
		})
	}
}

// TestRun_ClientBadDockerEndpoint: an endpoint of the wrong form stops the
// client agent at start, saying what to write.
func TestRun_ClientBadDockerEndpoint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "client.hcl")
	must.NoError(t, os.WriteFile(path, []byte(`
client {
  enabled = true
  servers = ["127.0.0.1:4747"]
}
driver "docker" {
  endpoint = "/var/run/docker.sock"
}
`), 0o600))
	var stderr bytes.Buffer
	must.EqOp(t, 1, Run(context.Background(), []string{"-config", path, "-data-dir", t.TempDir()}, &bytes.Buffer{}, &stderr))
	must.StrContains(t, stderr.String(), `driver "docker": endpoint "/var/run/docker.sock" must be unix:///path/to/docker.sock or tcp://host:port`)
}
