package client

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/berth-csi/berth/client/dynamicplugins"
	"github.com/berth-csi/berth/structs"
	"github.com/berth-csi/berth/tlsutil"
)

// Config is what a client agent needs. Build it from DefaultConfig.
type Config struct {
	// DataDir keeps the node's stable ID (client/node-id).
	DataDir string
	// Servers are the servers' RPC addresses (host:port); the client uses
	// one at a time and fails over to the next.
	Servers []string
	// NodeName and Datacenter describe the node; the name defaults to the
	// host name.
	NodeName   string
	Datacenter string
	// HTTPAddr is the agent's HTTP address, reported to the servers.
	HTTPAddr string
	// BindAddr, when set, is the address the client's connections to the
	// servers come from: the one the node is known by.
	BindAddr string

	// Plugins are CSI plugins run outside berth, from the client config.
	Plugins []*dynamicplugins.PluginInfo

	// ProbeInterval and ProbeTimeout pace plugin health checks.
	ProbeInterval time.Duration
	ProbeTimeout  time.Duration
	// UpdateCoalesce is how long fingerprint changes gather, after a node
	// update, before the next carries them all (the first after a quiet
	// spell goes at once). AllocUpdateCoalesce is the same for allocation
	// updates, but only once AllocUpdateBurst of them went out within it:
	// the few updates of one claim workflow (running; killing, dead,
	// complete) each go at once, as a person waits on each; a flood of
	// changes goes AllocUpdateBurst sends per window at most.
	UpdateCoalesce      time.Duration
	AllocUpdateCoalesce time.Duration
	AllocUpdateBurst    int
	// VolumeStatsInterval is how often the client asks the node plugins
	// for the usage and condition of the volumes published here (client {
	// volume_stats_interval }, jittered by a tenth); 0 never asks.
	VolumeStatsInterval time.Duration
	// RPCTimeout bounds each call to a server.
	RPCTimeout time.Duration
	// ControllerConcurrency is how many controller calls this client makes
	// to one plugin at once (the servers' creates, deletes, snapshots).
	ControllerConcurrency int
	// StopAllocsOnShutdown stops every allocation (kills its tasks,
	// unmounts its volumes) when the client stops: for -dev, whose data
	// dir goes away with it. Otherwise tasks keep running for the next
	// client to find.
	StopAllocsOnShutdown bool
	// AllowRootTasks lets tasks run as root (client {
	// allow_root_tasks }); off, an exec task runs as its user (default
	// "nobody") and one that needs root (user = "root", or a CSI plugin
	// task) is refused, as is a container whose user, or its image's, is
	// root, unless the engine remaps root (user namespaces).
	AllowRootTasks bool

	// DockerEnabled runs the docker driver (driver "docker" { enabled },
	// on by default): the node reports docker's health, healthy while the
	// engine answers at DockerEndpoint (unix:///path or tcp://host:port).
	// Off, the node reports no docker driver and gets no docker task.
	DockerEnabled  bool
	DockerEndpoint string
	// DockerAllowPrivileged lets docker tasks run privileged containers
	// (driver "docker" { allow_privileged }); off, a privileged task is
	// refused, and the scheduler places none here.
	DockerAllowPrivileged bool
	// DockerAllowCaps are the capabilities a docker task may add with
	// cap_add (driver "docker" { allow_caps }, normalized: "sys_admin",
	// "all" for any); nil is structs.DockerDefaultAllowCaps. A task asking
	// for more is refused, and the scheduler places none here.
	DockerAllowCaps []string
	// DockerAllowHostNetwork lets docker tasks run on the host's network
	// (driver "docker" { allow_host_network }); off, a task that asks for
	// it is refused, and the scheduler places none here. Tasks get the
	// engine's bridge by default.
	DockerAllowHostNetwork bool

	// CPUTotalCompute and MemoryTotalMB replace what the client finds the
	// node has (client { cpu_total_compute, memory_total_mb }), 0 keeps
	// it; Reserved is what the node keeps for itself and berth's agents
	// (client { reserved }), never offered to allocations.
	CPUTotalCompute int
	MemoryTotalMB   int
	Reserved        *structs.NodeResources
	// Meta is what the operator says of the node (client { meta }), for
	// constraints and affinities (${meta.NAME}).
	Meta map[string]string
	// Users is who exec tasks may run as besides root (client { user });
	// the zero value denies the users of structs.DefaultDeniedTaskGroups.
	Users structs.TaskUserPolicy

	// TLS, with EnableRPC, makes the client's sessions to the servers
	// TLS: it presents its certificate and verifies theirs against the CA
	// and, whatever VerifyServerHostname says, that it is a server's
	// (server.global.berth). Nil or EnableRPC off is plain text.
	TLS *tlsutil.Config

	Logger hclog.Logger
}

// DefaultConfig returns a config with every default set.
func DefaultConfig() *Config {
	host, _ := os.Hostname()
	return &Config{
		NodeName:              host,
		Datacenter:            "dc1",
		ProbeInterval:         2 * time.Second,
		ProbeTimeout:          2 * time.Second,
		UpdateCoalesce:        100 * time.Millisecond,
		AllocUpdateCoalesce:   20 * time.Millisecond,
		AllocUpdateBurst:      4,
		VolumeStatsInterval:   time.Minute,
		RPCTimeout:            10 * time.Second,
		ControllerConcurrency: defaultControllerConcurrency,
		DockerEnabled:         true,
		DockerEndpoint:        DefaultDockerEndpoint,
		Logger:                hclog.NewNullLogger(),
	}
}

// DefaultDockerEndpoint is where the Docker Engine API answers on a
// Linux host.
const DefaultDockerEndpoint = "unix:///var/run/docker.sock"

// validateDockerEndpoint checks the docker endpoint's form: an absolute
// unix socket path or a TCP host:port.
func validateDockerEndpoint(ep string) error {
	bad := fmt.Errorf(`client: driver "docker": endpoint %q must be unix:///path/to/docker.sock or tcp://host:port (default %s)`,
		ep, DefaultDockerEndpoint)
	u, err := url.Parse(ep)
	if err != nil {
		return bad
	}
	switch u.Scheme {
	case "unix":
		if u.Host != "" || !strings.HasPrefix(u.Path, "/") {
			return bad
		}
	case "tcp":
		if _, port, err := net.SplitHostPort(u.Host); err != nil || port == "" || u.Path != "" && u.Path != "/" {
			return bad
		}
	default:
		return bad
	}
	return nil
}

// Validate names the first wrong field and what to do.
func (c *Config) Validate() error {
	var errs []error
	if c.DataDir == "" {
		errs = append(errs, errors.New("client: data_dir is required (-data-dir)"))
	}
	if len(c.Servers) == 0 {
		errs = append(errs, errors.New("client: no servers to join; give their RPC addresses with -servers HOST:PORT,HOST:PORT"))
	}
	for _, s := range c.Servers {
		if _, _, err := net.SplitHostPort(s); err != nil {
			errs = append(errs, fmt.Errorf("client: server address %q is not HOST:PORT: %v", s, err))
		}
	}
	if c.ControllerConcurrency < 1 {
		errs = append(errs, fmt.Errorf("client: controller_concurrency must be at least 1 (got %d)", c.ControllerConcurrency))
	}
	seen := map[string]bool{}
	for i, p := range c.Plugins {
		if err := p.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("client: plugin %d: %w", i, err))
			continue
		}
		if seen[p.ID] {
			errs = append(errs, fmt.Errorf("client: plugin %q is declared twice", p.ID))
		}
		seen[p.ID] = true
	}
	if c.TLS != nil && c.TLS.EnableRPC {
		if err := c.TLS.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("client: %w", err))
		}
	}
	if c.DockerEnabled {
		if err := validateDockerEndpoint(c.DockerEndpoint); err != nil {
			errs = append(errs, err)
		}
	}
	if c.ProbeInterval <= 0 || c.ProbeTimeout <= 0 || c.RPCTimeout <= 0 {
		errs = append(errs, errors.New("client: probe interval, probe timeout and RPC timeout must be positive"))
	}
	if c.CPUTotalCompute < 0 || c.MemoryTotalMB < 0 {
		errs = append(errs, errors.New("client: cpu_total_compute and memory_total_mb must not be negative (0: what the node has)"))
	}
	if r := c.Reserved; r != nil && (r.CPU < 0 || r.MemoryMB < 0 || r.Cores < 0) {
		errs = append(errs, fmt.Errorf("client: reserved { cpu = %d, memory = %d, cores = %d } must not be negative", r.CPU, r.MemoryMB, r.Cores))
	}
	for k := range c.Meta {
		if err := structs.ValidateMetaKey(k); err != nil {
			errs = append(errs, fmt.Errorf("client: meta: %w", err))
		}
	}
	return errors.Join(errs...)
}

// dockerAllowCaps is DockerAllowCaps, or Docker's default set when unset.
func (c *Config) dockerAllowCaps() []string {
	if c.DockerAllowCaps == nil {
		return structs.DockerDefaultAllowCaps
	}
	return c.DockerAllowCaps
}
