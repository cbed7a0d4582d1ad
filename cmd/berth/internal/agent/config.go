package agent

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/berth-csi/berth/client"
	"github.com/berth-csi/berth/cmd/berth/internal/spec"
	"github.com/berth-csi/berth/server"
	"github.com/berth-csi/berth/structs"
)

// Config is the agent's configuration: the HCL file's shape, which every
// flag can override. The file is decoded by spec.DecodeConfig, which is
// gohcl's decoding with its errors at the file's lines; the tags are gohcl's.
type Config struct {
	Name     string `hcl:"name,optional"`
	DataDir  string `hcl:"data_dir,optional"`
	BindAddr string `hcl:"bind_addr,optional"`
	LogLevel string `hcl:"log_level,optional"`
	LogJSON  bool   `hcl:"log_json,optional"`
	// EnableDebug serves Go's runtime profiles at /debug/pprof/ on the
	// HTTP API (a management token is needed when ACLs are on).
	EnableDebug bool `hcl:"enable_debug,optional"`

	Ports   *PortsConfig    `hcl:"ports,block"`
	Server  *ServerConfig   `hcl:"server,block"`
	Client  *ClientConfig   `hcl:"client,block"`
	Plugins []*PluginConfig `hcl:"plugin,block"`
	Drivers []*DriverConfig `hcl:"driver,block"`
	TLS     *TLSConfig      `hcl:"tls,block"`
	ACL     *ACLConfig      `hcl:"acl,block"`

	Dev bool

	// encryptKey is server.encrypt decoded (see security.go).
	encryptKey []byte
}

// PortsConfig is the `ports { }` block.
type PortsConfig struct {
	HTTP int `hcl:"http,optional"`
	RPC  int `hcl:"rpc,optional"`
	Serf int `hcl:"serf,optional"`
}

// ServerConfig is the `server { }` block.
type ServerConfig struct {
	Enabled         bool     `hcl:"enabled,optional"`
	BootstrapExpect int      `hcl:"bootstrap_expect,optional"`
	Join            []string `hcl:"join,optional"`
	// JobMaxCount caps the allocations one job may ask for (0: the
	// server's default, 10,000).
	JobMaxCount int `hcl:"job_max_count,optional"`
	// MaxHeartbeatsPerSecond caps the heartbeats the leader takes a
	// second: past it the TTL given to clients grows with the fleet
	// (unset: 250; 0: no cap).
	MaxHeartbeatsPerSecond *float64 `hcl:"max_heartbeats_per_second,optional"`
	// Encrypt is the gossip encryption key, 32 bytes in base64 (`berth
	// operator gossip keygen`); the same on every server.
	Encrypt string `hcl:"encrypt,optional"`

	// Garbage collection (durations such as "5m"; unset keeps the
	// server's default): how often the leader collects, and how long it
	// keeps allocations over on their client, stopped jobs and down
	// nodes. Parsed into gc by checkGC.
	GCInterval       string `hcl:"gc_interval,optional"`
	AllocGCThreshold string `hcl:"alloc_gc_threshold,optional"`
	JobGCThreshold   string `hcl:"job_gc_threshold,optional"`
	NodeGCThreshold  string `hcl:"node_gc_threshold,optional"`
	gc               gcDurations
}

// ClientConfig is the `client { }` block.
type ClientConfig struct {
	Enabled    bool     `hcl:"enabled,optional"`
	Servers    []string `hcl:"servers,optional"`
	Datacenter string   `hcl:"datacenter,optional"`
	// ControllerConcurrency bounds the controller calls to one plugin on
	// this client; 0 keeps the default (16).
	ControllerConcurrency int `hcl:"controller_concurrency,optional"`
	// AllowRootTasks lets tasks run as root; on in -dev.
	AllowRootTasks bool `hcl:"allow_root_tasks,optional"`
	// CPUTotalCompute (MHz) and MemoryTotalMB replace what the client
	// finds the node has; Reserved is kept back from allocations.
	CPUTotalCompute int             `hcl:"cpu_total_compute,optional"`
	MemoryTotalMB   int             `hcl:"memory_total_mb,optional"`
	Reserved        *ReservedConfig `hcl:"reserved,block"`
	MetaBlock       *MetaConfig     `hcl:"meta,block"`
	User            *UserConfig     `hcl:"user,block"`
	// VolumeStatsInterval is how often the client asks the node plugins
	// for the usage and condition of the volumes published on it ("60s"
	// unset; "0s" never asks).
	VolumeStatsInterval string `hcl:"volume_stats_interval,optional"`
	meta                map[string]string
	volumeStatsInterval *time.Duration
}

// PluginConfig is a `plugin "ID" { type, socket }` block: a CSI plugin run
// outside berth that the client fingerprints.
type PluginConfig struct {
	ID     string `hcl:"id,label"`
	Type   string `hcl:"type"`
	Socket string `hcl:"socket"`
}

// DriverConfig is a `driver "docker" { }` block: a task driver's settings
// on this client. Only docker has one (exec takes no settings); the
// docker driver is on without a block.
type DriverConfig struct {
	Name string `hcl:"name,label"`
	// Enabled: unset is on. The node reports docker healthy when the
	// engine answers at Endpoint; false leaves docker out of the node.
	Enabled *bool `hcl:"enabled,optional"`
	// Endpoint is the Docker Engine API's address; empty is the client's
	// default, unix:///var/run/docker.sock.
	Endpoint string `hcl:"endpoint,optional"`
	// AllowPrivileged lets tasks run privileged containers; on in -dev.
	AllowPrivileged bool `hcl:"allow_privileged,optional"`
	// AllowCaps are the capabilities tasks may add with cap_add ("all"
	// for any); unset is Docker's default set less net_raw, all in -dev.
	AllowCaps []string `hcl:"allow_caps,optional"`
	// AllowHostNetwork lets tasks run on the host's network (network_mode
	// = "host"); off, they get the engine's bridge. On in -dev.
	AllowHostNetwork bool `hcl:"allow_host_network,optional"`
}

// configurableDrivers are the drivers a driver block may name.
var configurableDrivers = []string{structs.DriverDocker}

// checkDrivers refuses a driver block of a driver berth does not
// configure, and a driver configured twice.
func (c *Config) checkDrivers() error {
	var errs []error
	seen := map[string]bool{}
	for _, d := range c.Drivers {
		if !slices.Contains(configurableDrivers, d.Name) {
			errs = append(errs, fmt.Errorf("driver %q is not a driver berth configures; the known ones are %s (exec takes no settings)",
				d.Name, quoteAll(configurableDrivers)))
			continue
		}
		if seen[d.Name] {
			errs = append(errs, fmt.Errorf("driver %q is configured twice; put its settings in one block", d.Name))
		}
		if d.AllowCaps != nil {
			caps, err := structs.NormalizeCapabilities("allow_caps", d.AllowCaps)
			if err != nil {
				errs = append(errs, fmt.Errorf("driver %q: %v", d.Name, err))
			}
			d.AllowCaps = caps
		}
		seen[d.Name] = true
	}
	return errors.Join(errs...)
}

// dockerDriver is the docker driver's block, or the defaults without one;
// -dev allows privileged containers, any capability and the host's
// network, as it allows root tasks.
func (c *Config) dockerDriver() DriverConfig {
	d := DriverConfig{Name: structs.DriverDocker}
	for _, b := range c.Drivers {
		if b.Name == structs.DriverDocker {
			d = *b
		}
	}
	if c.Dev {
		d.AllowPrivileged, d.AllowHostNetwork = true, true
		d.AllowCaps = []string{structs.CapAll}
	}
	return d
}

// applyDrivers carries the driver blocks into the client's config.
func (c *Config) applyDrivers(ccfg *client.Config) {
	d := c.dockerDriver()
	ccfg.DockerEnabled = d.Enabled == nil || *d.Enabled
	if d.Endpoint != "" {
		ccfg.DockerEndpoint = d.Endpoint
	}
	ccfg.DockerAllowPrivileged = d.AllowPrivileged
	ccfg.DockerAllowCaps = d.AllowCaps
	ccfg.DockerAllowHostNetwork = d.AllowHostNetwork
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

func defaultConfig() *Config {
	return &Config{
		BindAddr: "127.0.0.1",
		LogLevel: "info",
		Ports:    &PortsConfig{HTTP: server.DefaultHTTPPort, RPC: server.DefaultRPCPort, Serf: server.DefaultSerfPort},
		Server:   &ServerConfig{BootstrapExpect: 1},
		Client:   &ClientConfig{},
		TLS:      &TLSConfig{},
		ACL:      &ACLConfig{},
	}
}

// listFlag collects a repeatable or comma-separated flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l = append(*l, p)
		}
	}
	return nil
}

const usage = `Usage: berth agent [options]

  Runs a berth agent: a server, a client, or both in one process. -dev
  runs both for trying berth out (no TLS or ACLs, data in a temp dir, the
  built-in hostpath plugin); -server -client, or a config file with both
  a server and a client block, runs both with the settings given (a
  client that lists no servers joins its own).

  berth agent -dev [-data-dir D] [-http-port 4746]
  berth agent -server -data-dir D -bind 127.0.0.1 [-http-port 4746] [-rpc-port 4747]
              [-serf-port 4748] -bootstrap-expect 3 [-join HOST:SERFPORT ...]
  berth agent -client -data-dir D -servers HOST:RPCPORT,...
  berth agent -config agent.hcl   (server { ... }, client { ... }, or both)

Options:
`

// parseConfig builds the agent config from an optional HCL file and the
// flags; flags win. It returns a usage error (exit 2) for bad flags.
func parseConfig(args []string, stderr io.Writer) (*Config, error) {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	var (
		configFile                             string
		dev, srv, client, logJSON, enableDebug bool
		name, dataDir, bind, logLevel          string
		httpPort, rpcPort, serfPort            int
		expect                                 int
		join, servers                          listFlag
	)
	fs.StringVar(&configFile, "config", "", "HCL config file; flags override it")
	fs.BoolVar(&dev, "dev", false, "a server and a client in one process, for trying berth out: no TLS or ACLs, data in a temp dir unless -data-dir")
	fs.BoolVar(&srv, "server", false, "run a server")
	fs.BoolVar(&client, "client", false, "run a client")
	fs.StringVar(&name, "node-name", "", "this agent's name (default: from its stable ID)")
	fs.StringVar(&dataDir, "data-dir", "", "where the agent keeps its state")
	fs.StringVar(&bind, "bind", "", "IP address to bind and advertise (default 127.0.0.1)")
	fs.IntVar(&httpPort, "http-port", 0, "HTTP API port (default 4746)")
	fs.IntVar(&rpcPort, "rpc-port", 0, "RPC, raft and client port (default 4747)")
	fs.IntVar(&serfPort, "serf-port", 0, "gossip port (default 4748)")
	fs.IntVar(&expect, "bootstrap-expect", 0, "servers to wait for before the first election")
	fs.Var(&join, "join", "serf address HOST:PORT of a server to join (repeatable)")
	fs.Var(&servers, "servers", "client: server RPC addresses HOST:PORT,HOST:PORT")
	fs.StringVar(&logLevel, "log-level", "", "trace, debug, info, warn or error")
	fs.BoolVar(&logJSON, "log-json", false, "log JSON lines")
	fs.BoolVar(&enableDebug, "enable-debug", false, "serve runtime profiles at /debug/pprof/ on the HTTP API")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, errUsage{errHelp}
		}
		return nil, errUsage{err}
	}
	if fs.NArg() > 0 {
		return nil, errUsage{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}

	cfg := defaultConfig()
	if configFile != "" {
		if err := spec.DecodeConfigFile(configFile, cfg); err != nil {
			return nil, fmt.Errorf("agent config: %w", err)
		}
		fillDefaults(cfg)
		if err := cfg.checkSecurity(configFile); err != nil {
			return nil, fmt.Errorf("agent config: %s: %w", configFile, err)
		}
		if err := cfg.checkDrivers(); err != nil {
			return nil, fmt.Errorf("agent config: %s: %w", configFile, err)
		}
		if err := cfg.checkGC(); err != nil {
			return nil, fmt.Errorf("agent config: %s: %w", configFile, err)
		}
		if err := cfg.checkClient(); err != nil {
			return nil, fmt.Errorf("agent config: %s: %w", configFile, err)
		}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	cfg.Dev = dev
	if set["server"] {
		cfg.Server.Enabled = srv
	}
	if set["client"] {
		cfg.Client.Enabled = client
	}
	override(set["node-name"], &cfg.Name, name)
	override(set["data-dir"], &cfg.DataDir, dataDir)
	override(set["bind"], &cfg.BindAddr, bind)
	override(set["log-level"], &cfg.LogLevel, logLevel)
	if set["log-json"] {
		cfg.LogJSON = logJSON
	}
	if set["enable-debug"] {
		cfg.EnableDebug = enableDebug
	}
	if set["http-port"] {
		cfg.Ports.HTTP = httpPort
	}
	if set["rpc-port"] {
		cfg.Ports.RPC = rpcPort
	}
	if set["serf-port"] {
		cfg.Ports.Serf = serfPort
	}
	if set["bootstrap-expect"] {
		cfg.Server.BootstrapExpect = expect
	}
	if len(join) > 0 {
		cfg.Server.Join = join
	}
	if len(servers) > 0 {
		cfg.Client.Servers = servers
	}
	if cfg.Dev {
		cfg.Server.Enabled = true
		cfg.Client.Enabled = true
		cfg.Server.BootstrapExpect = 1
		// One trusted machine: no TLS, ACLs or gossip key, and tasks may
		// run as root (run says so at start).
		cfg.TLS = &TLSConfig{}
		cfg.ACL = &ACLConfig{}
		cfg.encryptKey = nil
		cfg.Client.AllowRootTasks = true
	}
	if err := cfg.checkACLServerTLS(); err != nil {
		return nil, err
	}
	if !cfg.Server.Enabled && !cfg.Client.Enabled {
		return nil, errUsage{errors.New("say what to run: -dev, -server or -client (or server/client blocks in -config)")}
	}
	return cfg, nil
}

// fillDefaults restores the defaults the file set to zero or empty. The
// file is decoded over defaultConfig, so what it leaves out keeps them.
func fillDefaults(cfg *Config) {
	def := defaultConfig()
	if cfg.Ports.HTTP == 0 {
		cfg.Ports.HTTP = def.Ports.HTTP
	}
	if cfg.Ports.RPC == 0 {
		cfg.Ports.RPC = def.Ports.RPC
	}
	if cfg.Ports.Serf == 0 {
		cfg.Ports.Serf = def.Ports.Serf
	}
	if cfg.Server.BootstrapExpect == 0 {
		cfg.Server.BootstrapExpect = def.Server.BootstrapExpect
	}
	if cfg.BindAddr == "" {
		cfg.BindAddr = def.BindAddr
	}
	if cfg.LogLevel == "" {
		cfg.LogLevel = def.LogLevel
	}
}

func override(set bool, dst *string, v string) {
	if set {
		*dst = v
	}
}

// errHelp is -h: usage was printed, exit 2 with nothing more to say.
var errHelp = errors.New("help requested")

// errUsage marks an error as a usage error (exit status 2).
type errUsage struct{ err error }

func (e errUsage) Error() string { return e.err.Error() }
func (e errUsage) Unwrap() error { return e.err }
