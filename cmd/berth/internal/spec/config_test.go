package spec

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shoenig/test/must"
)

// testConfig has the shapes of the agent's config.
type testConfig struct {
	Name    string        `hcl:"name,optional"`
	Debug   bool          `hcl:"debug,optional"`
	Ports   *testPorts    `hcl:"ports,block"`
	Server  testServer    `hcl:"server,block"`
	Plugins []*testPlugin `hcl:"plugin,block"`
	Hooks   []testHook    `hcl:"hook,block"`

	Dev bool // untagged: left alone
}

type testPorts struct {
	HTTP int `hcl:"http,optional"`
	RPC  int `hcl:"rpc,optional"`
}

type testServer struct {
	Enabled bool     `hcl:"enabled,optional"`
	Expect  int      `hcl:"bootstrap_expect,optional"`
	Join    []string `hcl:"join,optional"`
}

type testPlugin struct {
	ID     string `hcl:"id,label"`
	Type   string `hcl:"type"`
	Socket string `hcl:"socket"`
}

type testHook struct {
	Command string `hcl:"command"`
}

func defaultTestConfig() *testConfig {
	return &testConfig{Name: "default", Ports: &testPorts{HTTP: 1, RPC: 2}, Server: testServer{Expect: 1}, Dev: true}
}

func TestDecodeConfig_FillsOverDefaults(t *testing.T) {
	src := `name = "s1"
ports {
  http = 4746
}
server {
  enabled = true
  join    = ["10.0.0.2:4748"]
}
plugin "ebs" {
  type   = "node"
  socket = "/run/csi/ebs.sock"
}
plugin "hostpath" {
  type   = "monolith"
  socket = "/run/csi/hostpath.sock"
}
hook {
  command = "/bin/true"
}
`
	cfg := defaultTestConfig()
	must.NoError(t, DecodeConfig("agent.hcl", []byte(src), cfg))
	must.Eq(t, &testConfig{
		Name:   "s1",
		Ports:  &testPorts{HTTP: 4746, RPC: 2},
		Server: testServer{Enabled: true, Expect: 1, Join: []string{"10.0.0.2:4748"}},
		Plugins: []*testPlugin{
			{ID: "ebs", Type: "node", Socket: "/run/csi/ebs.sock"},
			{ID: "hostpath", Type: "monolith", Socket: "/run/csi/hostpath.sock"},
		},
		Hooks: []testHook{{Command: "/bin/true"}},
		Dev:   true,
	}, cfg)
}

func TestDecodeConfig_EmptyFileKeepsDefaults(t *testing.T) {
	for _, src := range []string{"", "\n# nothing\n", "{}"} {
		cfg := defaultTestConfig()
		must.NoError(t, DecodeConfig("agent.hcl", []byte(src), cfg))
		must.Eq(t, defaultTestConfig(), cfg)
	}
}

func TestDecodeConfig_NilBlockPointerGetsOne(t *testing.T) {
	cfg := &testConfig{}
	must.NoError(t, DecodeConfig("agent.hcl", []byte("ports {\n  rpc = 7\n}\n"), cfg))
	must.Eq(t, &testPorts{RPC: 7}, cfg.Ports)
}

// HCL's JSON form: a labelled block is an object keyed by its label; a
// block that repeats may be a list.
func TestDecodeConfig_JSON(t *testing.T) {
	src := `{
  "name": "c1",
  "ports": {"http": 5746},
  "plugin": {
    "ebs": {"type": "node", "socket": "/e.sock"},
    "hp": [{"type": "monolith", "socket": "/h.sock"}]
  },
  "hook": [{"command": "a"}, {"command": "b"}]
}`
	cfg := defaultTestConfig()
	must.NoError(t, DecodeConfig("agent.json", []byte(src), cfg))
	must.EqOp(t, "c1", cfg.Name)
	must.Eq(t, &testPorts{HTTP: 5746, RPC: 2}, cfg.Ports)
	must.Eq(t, []*testPlugin{{ID: "ebs", Type: "node", Socket: "/e.sock"}, {ID: "hp", Type: "monolith", Socket: "/h.sock"}}, cfg.Plugins)
	must.Eq(t, []testHook{{Command: "a"}, {Command: "b"}}, cfg.Hooks)

	_, err := decodeTestConfig("agent.json", "{\n  \"plugin\": {\n    \"ebs\": {\"type\": \"node\", \"sockt\": \"/e.sock\"}\n  }\n}")
	must.EqError(t, err, `agent.json:3: plugin "ebs": unknown field "sockt"; did you mean "socket"?`)
}

func decodeTestConfig(file, src string) (*testConfig, error) {
	cfg := defaultTestConfig()
	return cfg, DecodeConfig(file, []byte(src), cfg)
}

// The config's errors are the specs': file, line, field, and the name
// meant.
func TestDecodeConfig_Errors(t *testing.T) {
	cases := []struct {
		name, src string
		wantLine  int
		wantField string
		wantMsg   string
	}{
		{"unknown top-level field", "nme = \"s1\"\n", 1, "nme", `agent.hcl:1: unknown field "nme"; did you mean "name"?`},
		{"unknown field, no guess", "ports {\n  zzzzzzzz = 1\n}\n", 2, "ports.zzzzzzzz",
			`agent.hcl:2: ports: unknown field "zzzzzzzz"; valid fields are http, rpc`},
		{"misspelt field in a block", "server {\n  enabled = true\n  bootstrap_expct = 3\n}\n", 3, "server.bootstrap_expct",
			`agent.hcl:3: server: unknown field "bootstrap_expct"; did you mean "bootstrap_expect"?`},
		{"misspelt block", "plugn \"x\" {\n}\n", 1, "plugn", `unknown field "plugn"; did you mean "plugin"?`},
		{"missing required field", "plugin \"x\" {\n  type = \"node\"\n}\n", 1, "plugin[x].socket", `agent.hcl:1: plugin "x": missing socket`},
		{"misspelt required field is one problem", "plugin \"x\" {\n  type = \"node\"\n  sockt = \"/s\"\n}\n", 3, "plugin[x].sockt",
			`agent.hcl:3: plugin "x": unknown field "sockt"; did you mean "socket"?`},
		{"wrong type", "ports {\n  http = \"4746\"\n}\n", 2, "ports.http",
			`agent.hcl:2: ports: http must be a whole number, not a string; leave out the quotes`},
		{"bool quoted", "debug = \"true\"\n", 1, "debug", `debug must be true or false, not a string; leave out the quotes`},
		{"list item", "server {\n  join = [\"a\", 1]\n}\n", 2, "server.join[1]", `server: join[1] must be a string, not a number`},
		{"set twice", "name = \"a\"\nports {\n}\nports {\n}\n", 4, "ports", `agent.hcl:4: ports is set twice (first at line 2)`},
		{"block as argument", "ports = 4746\n", 1, "ports", `ports must be a block (ports { ... }), not a number`},
		{"label on an unlabelled block", "ports \"x\" {\n}\n", 1, "ports", `ports takes no label; write ports { ... } without "x"`},
		{"labelled block without a label", "plugin {\n  type = \"node\"\n  socket = \"/s\"\n}\n", 1, "plugin",
			`plugin needs a name; write plugin "name" { ... }`},
		{"one-line block with two arguments", "name = \"a\"\nports { http = 1  rpc = 2 }\n", 2, "",
			`agent.hcl:2: invalid single-argument block definition: A single-line block definition must end with a closing brace immediately after its single argument definition; put each argument on its own line`},
		{"variables", "name = var.x\n", 1, "name", "name: must be a literal value"},
		{"json", "{\n  \"ports\": {\"http\": true}\n}", 2, "ports.http", `ports: http must be a whole number, not a bool`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			file := "agent.hcl"
			if strings.HasPrefix(tc.src, "{") {
				file = "agent.json"
			}
			_, err := decodeTestConfig(file, tc.src)
			must.Error(t, err)
			var se *Error
			must.True(t, errors.As(err, &se), must.Sprintf("not a *spec.Error: %v", err))
			must.EqOp(t, tc.wantLine, se.Line, must.Sprint(err))
			must.StrContains(t, err.Error(), tc.wantMsg)
			if tc.wantField != "" {
				must.True(t, hasField(err, tc.wantField), must.Sprintf("no error for field %q; got:\n%v", tc.wantField, err))
			}
			var many interface{ Unwrap() []error }
			must.False(t, errors.As(err, &many), must.Sprintf("want one problem, got:\n%v", err))
		})
	}
}

func TestDecodeConfig_BadTarget(t *testing.T) {
	var notPointer testConfig
	must.ErrorContains(t, DecodeConfig("a.hcl", nil, notPointer), "needs a pointer to a struct")
	var nilPointer *testConfig
	must.ErrorContains(t, DecodeConfig("a.hcl", nil, nilPointer), "needs a pointer to a struct")
	bad := &struct {
		M map[string]int `hcl:"m,optional"`
	}{}
	err := DecodeConfig("a.hcl", nil, bad)
	must.ErrorContains(t, err, `cannot decode argument "m"`)
	var se *Error
	must.False(t, errors.As(err, &se), must.Sprint("a type problem is not the file's"))
}

func TestDecodeConfigFile_ReadsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.hcl")
	must.NoError(t, os.WriteFile(path, []byte("name = \"from-file\"\n"), 0o600))
	cfg := defaultTestConfig()
	must.NoError(t, DecodeConfigFile(path, cfg))
	must.EqOp(t, "from-file", cfg.Name)

	err := DecodeConfigFile(filepath.Join(t.TempDir(), "missing.hcl"), cfg)
	must.ErrorContains(t, err, "missing.hcl")
	must.ErrorContains(t, err, "check the file's path")
}
