package spec

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/shoenig/test/must"
)

// testConfig has the shapes of the agent's config.
type testConfig struct {
	Name    string        `hcl:"name,optional"`
	Debug   bool          `hcl:"debug,optional"`
	Ports   *testPorts    `hcl:"ports,block"`
	Server  *testServer   `hcl:"server,block"`
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
	return &testConfig{Name: "default", Ports: &testPorts{HTTP: 1, RPC: 2}, Server: &testServer{Expect: 1}, Dev: true}
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
		Server: &testServer{Enabled: true, Expect: 1, Join: []string{"10.0.0.2:4748"}},
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
	must.ErrorContains(t, err, `agent.json:3: `)
	must.ErrorContains(t, err, `"sockt"`)
	must.ErrorContains(t, err, `Did you mean "socket"?`)
	var many interface{ Unwrap() []error }
	must.False(t, errors.As(err, &many), must.Sprintf("want one problem, got:\n%v", err))
}

func decodeTestConfig(file, src string) (*testConfig, error) {
	cfg := defaultTestConfig()
	return cfg, DecodeConfig(file, []byte(src), cfg)
}

// The config's errors are HCL's, as *Errors with the file and the line;
// a misspelt name is one problem, naming the name meant.
func TestDecodeConfig_Errors(t *testing.T) {
	cases := []struct {
		name, src string
		wantLine  int
		want      []string
	}{
		{"unknown top-level field", "nme = \"s1\"\n", 1, []string{`"nme"`, `Did you mean "name"?`}},
		{"unknown field, no guess", "ports {\n  zzzzzzzz = 1\n}\n", 2, []string{`"zzzzzzzz" is not expected here`}},
		{"misspelt field in a block", "server {\n  enabled = true\n  bootstrap_expct = 3\n}\n", 3,
			[]string{`"bootstrap_expct"`, `Did you mean "bootstrap_expect"?`}},
		{"misspelt block", "plugn \"x\" {\n}\n", 1, []string{`"plugn"`, `Did you mean "plugin"?`}},
		{"missing required field", "plugin \"x\" {\n  type = \"node\"\n}\n", 1, []string{`"socket" is required`}},
		{"misspelt required field is one problem", "plugin \"x\" {\n  type = \"node\"\n  sockt = \"/s\"\n}\n", 3,
			[]string{`"sockt"`, `Did you mean "socket"?`}},
		{"wrong type", "ports {\n  http = \"fast\"\n}\n", 2, []string{"unsuitable value type", "a number is required"}},
		{"not a bool", "debug = \"maybe\"\n", 1, []string{"unsuitable value type", "a bool is required"}},
		{"list item", "server {\n  join = [\"a\", [\"b\"]]\n}\n", 2, []string{"unsuitable value type", "element 1"}},
		{"set twice", "name = \"a\"\nports {\n}\nports {\n}\n", 4, []string{"duplicate ports block", "agent.hcl:2"}},
		{"block as argument", "ports = 4746\n", 1, []string{`"ports"`, `Did you mean to define a block of type "ports"?`}},
		{"label on an unlabelled block", "ports \"x\" {\n}\n", 1, []string{"extraneous label for ports"}},
		{"labelled block without a label", "plugin {\n  type = \"node\"\n  socket = \"/s\"\n}\n", 1,
			[]string{"missing id for plugin"}},
		{"one-line block with two arguments", "name = \"a\"\nports { http = 1  rpc = 2 }\n", 2,
			[]string{`agent.hcl:2: invalid single-argument block definition: A single-line block definition must end with a closing brace immediately after its single argument definition; put each argument on its own line`}},
		{"variables", "name = var.x\n", 1, []string{"variables not allowed"}},
		{"for expression", "server {\n  join = [for s in [\"a\"]: [for t in [s]: t]]\n}\n", 2,
			[]string{"for expressions are not allowed in a config file"}},
		{"number beyond float64", "ports {\n  http = 1e-400\n}\n", 2, []string{"the number is too large or too small"}},
		{"json", "{\n  \"ports\": {\"http\": true}\n}", 2, []string{"unsuitable value type", "number required, but have bool"}},
		{"json misspelt field", "{\n  \"nme\": \"x\"\n}", 2, []string{`"nme"`, `Did you mean "name"?`}},
		{"json number beyond float64", "{\n  \"ports\": {\n    \"http\": 1e400\n  }\n}", 3,
			[]string{"the number is too large or too small"}},
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
			must.EqOp(t, file, se.File)
			must.EqOp(t, tc.wantLine, se.Line, must.Sprint(err))
			must.StrHasPrefix(t, file+":"+strconv.Itoa(tc.wantLine)+": ", err.Error())
			for _, want := range tc.want {
				must.StrContains(t, err.Error(), want)
			}
			var many interface{ Unwrap() []error }
			must.False(t, errors.As(err, &many), must.Sprintf("want one problem, got:\n%v", err))
		})
	}
}

// Only what HCL says twice about one problem is left out: each missing
// argument of a block is reported.
func TestDecodeConfig_EveryMissingArgument(t *testing.T) {
	_, err := decodeTestConfig("agent.hcl", "plugin \"x\" {\n}\nplugin \"y\" {\n  type = \"node\"\n}\n")
	must.EqError(t, err, `agent.hcl:1: missing required argument: The argument "socket" is required, but no definition was found
agent.hcl:1: missing required argument: The argument "type" is required, but no definition was found
agent.hcl:3: missing required argument: The argument "socket" is required, but no definition was found`)
}

// HCL converts a quoted number or bool, and a number in a list of
// strings, as hclsimple did before the agent read its file through
// this package.
func TestDecodeConfig_ConvertsAsHCLDoes(t *testing.T) {
	cfg, err := decodeTestConfig("agent.hcl", "debug = \"true\"\nports {\n  http = \"4746\"\n}\nserver {\n  join = [\"a\", 1]\n}\n")
	must.NoError(t, err)
	must.True(t, cfg.Debug)
	must.EqOp(t, 4746, cfg.Ports.HTTP)
	must.Eq(t, []string{"a", "1"}, cfg.Server.Join)
}

func TestDecodeConfig_BadTarget(t *testing.T) {
	var notPointer testConfig
	must.ErrorContains(t, DecodeConfig("a.hcl", nil, notPointer), "needs a pointer to a struct")
	var nilPointer *testConfig
	must.ErrorContains(t, DecodeConfig("a.hcl", nil, nilPointer), "needs a pointer to a struct")
	var notStruct map[string]string
	must.ErrorContains(t, DecodeConfig("a.hcl", nil, &notStruct), "needs a pointer to a struct")
	// A field gohcl cannot decode into is the program's mistake, not the
	// file's: gohcl panics.
	bad := &struct {
		C chan int `hcl:"c,optional"`
	}{}
	must.Panic(t, func() { _ = DecodeConfig("a.hcl", []byte("c = 1\n"), bad) })
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
