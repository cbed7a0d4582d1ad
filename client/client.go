package client

import (
	"context"
	"fmt"
	"github.com/berth-csi/berth/client/drivers/docker"
	"github.com/berth-csi/berth/client/drivers/exec"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"

	"github.com/berth-csi/berth/client/allocrunner"
	"github.com/berth-csi/berth/client/csi"
	"github.com/berth-csi/berth/client/dynamicplugins"
	"github.com/berth-csi/berth/client/pluginmanager"
	"github.com/berth-csi/berth/client/volumemanager"
	"github.com/berth-csi/berth/rpc"
	"github.com/berth-csi/berth/structs"
	"github.com/berth-csi/berth/tlsutil"
)

// Client is a node agent.
type Client struct {
	config *Config
	logger hclog.Logger
	nodeID string
	// nodeSecret proves this node to the servers (servers.go sends it);
	// never logged.
	nodeSecret string

	// registered is closed once the node's first registration is
	// answered: what waits on the servers knowing the node (the alloc
	// watch) goes on at once, not after a retry's delay.
	registered     chan struct{}
	registeredOnce sync.Once

	servers   *servers
	rpcServer *rpc.Server // answers the servers' calls over our sessions
	pool      *rpc.Pool
	tls       *tlsutil.Configurator // nil without tls.rpc

	registry *dynamicplugins.Registry
	csiConns *csi.Pool // one connection per plugin socket, for controller and node calls
	plugins  *pluginmanager.Manager
	updater  *nodeUpdater
	drivers  *driverHealth  // fingerprints the task drivers for the updater
	docker   *docker.Driver // runs docker tasks; nil when driver "docker" is off
	volumes  *volumemanager.Manager
	allocs   *allocWatcher
	fence    fence

	// resources and attributes are what the client found the node has,
	// once at start (Node.Resources, Node.Attributes).
	resources  *structs.NodeResources
	attributes map[string]string
	// cores hands the node's cores out to tasks (their cpusets).
	cores *allocrunner.Cores
	// users is who tasks may run as, with the members of its denied
	// groups found at start (Node.TaskUsers).
	users *structs.TaskUserPolicy

	// settled is false while allocations of this client's past (from
	// before it started) may still have tasks or mounts here: the client
	// reports itself initializing, not ready, until the first sync of the
	// servers' list has cleaned them up (or cleanupWait passed). settling
	// is set once that cleanup is under way; settledKick wakes the
	// heartbeat when it settles.
	settled     atomic.Bool
	settling    atomic.Bool
	settledKick chan struct{}
	// heartbeatTried is set once the first heartbeat round has ended:
	// the fence waits for it.
	heartbeatTried atomic.Bool

	wg sync.WaitGroup
}

// New builds a client; Run starts it.
func New(cfg *Config) (*Client, error) {
	if cfg == nil {
		cfg = DefaultConfig()
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// Task dirs, plugin sockets and mount paths are all absolute.
	dataDir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("client: data dir %q: %w", cfg.DataDir, err)
	}
	copied := *cfg
	cfg = &copied
	cfg.DataDir = dataDir
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	id, err := loadOrCreateNodeID(dataDir)
	if err != nil {
		return nil, err
	}
	secret, err := loadOrCreateNodeSecret(dataDir)
	if err != nil {
		return nil, err
	}
	c := &Client{
		config:  cfg,
		logger:  cfg.Logger.Named("client").With("node_id", id),
		nodeID:  id,
		servers: &servers{addrs: append([]string(nil), cfg.Servers...)},

		registered: make(chan struct{}),

		nodeSecret: secret,
	}
	if c.resources, err = nodeResources(cfg); err != nil {
		return nil, err
	}
	c.attributes = nodeAttributes(c.resources)
	cores, err := usableCores()
	if err != nil {
		return nil, err
	}
	reservedCores := 0
	if cfg.Reserved != nil {
		reservedCores = cfg.Reserved.Cores
	}
	c.cores = allocrunner.NewCores(cores, reservedCores)
	c.users = cfg.Users.Copy()
	c.users.DeniedMembers = groupUsers(c.users.Groups())
	c.settledKick = make(chan struct{}, 1)
	past := allocrunner.AnyLocalState(dataDir)
	c.settled.Store(!past)
	c.fence.path = fencePath(dataDir)
	if past {
		if err := c.fence.restore(); err != nil {
			return nil, err
		}
	}
	c.rpcServer = rpc.NewServer(c.logger)
	if err := c.rpcServer.Register("ClientStatus", &clientStatus{c: c}); err != nil {
		return nil, fmt.Errorf("client: register RPC endpoints: %w", err)
	}
	if err := c.rpcServer.Register("ClientCSI", newClientCSI(c)); err != nil {
		return nil, fmt.Errorf("client: register RPC endpoints: %w", err)
	}
	c.allocs = newAllocWatcher(c)
	if err := c.rpcServer.Register("ClientAllocations", &clientAllocations{c: c}); err != nil {
		return nil, fmt.Errorf("client: register RPC endpoints: %w", err)
	}
	poolOpts := []rpc.PoolOption{rpc.WithStreamServer(c.rpcServer), rpc.WithLocalIP(cfg.BindAddr)}
	if cfg.TLS != nil && cfg.TLS.EnableRPC {
		if c.tls, err = tlsutil.NewConfigurator(*cfg.TLS); err != nil {
			return nil, fmt.Errorf("client: %w", err)
		}
		// A client talks only to servers: whatever verify_server_hostname
		// says, the peer must present server.global.berth, or a host with a
		// client certificate that intercepts a server's address would get
		// the node secret and could hand the client work.
		poolOpts = append(poolOpts, rpc.WithPoolTLS(c.tls.OutgoingServerRPC))
	}
	c.pool = rpc.NewPool(c.logger, rpc.DefaultMaxStreams, poolOpts...)

	c.registry = dynamicplugins.New(c.logger)
	for _, p := range cfg.Plugins {
		if err := c.registry.Register(p); err != nil {
			return nil, fmt.Errorf("client: plugin %q: %w", p.ID, err)
		}
	}
	c.csiConns = csi.NewPool(c.logger)
	c.volumes, err = volumemanager.New(volumemanager.Config{DataDir: cfg.DataDir, Registry: c.registry, Conns: c.csiConns, Logger: c.logger})
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	c.updater = newNodeUpdater(c)
	if cfg.DockerEnabled {
		c.docker, err = docker.New(docker.Config{Endpoint: cfg.DockerEndpoint, AllowPrivileged: cfg.DockerAllowPrivileged,
			AllowCaps: cfg.dockerAllowCaps(), AllowHostNetwork: cfg.DockerAllowHostNetwork},
			c.logger.Named("docker"))
		if err != nil {
			return nil, fmt.Errorf("client: driver \"docker\": %w", err)
		}
	}
	c.drivers = newDriverHealth(c.logger, cfg, driverFingerprinters(c.docker), c.updater.driverChanged)
	c.plugins, err = pluginmanager.New(pluginmanager.Config{
		Logger:        c.logger,
		Registry:      c.registry,
		ProbeInterval: cfg.ProbeInterval,
		ProbeTimeout:  cfg.ProbeTimeout,
		OnUpdate:      c.updater.pluginChanged,
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// settle marks the client settled and wakes the heartbeat to say so.
func (c *Client) settle() {
	if !c.settled.Swap(true) {
		c.logger.Info("allocations of the past cleaned up; reporting ready")
		notify(c.settledKick)
	}
}

// status is the node status the heartbeat reports.
func (c *Client) status() string {
	if c.settled.Load() {
		return structs.NodeStatusReady
	}
	return structs.NodeStatusInit
}

// NodeID is the node's stable ID.
func (c *Client) NodeID() string { return c.nodeID }

// Registry is where plugin tasks register their plugins.
func (c *Client) Registry() *dynamicplugins.Registry { return c.registry }

// Volumes mounts and unmounts CSI volumes for this node's allocations.
func (c *Client) Volumes() *volumemanager.Manager { return c.volumes }

// Run registers the node, heartbeats, fingerprints plugins and sends their
// changes until ctx ends; then it stops every goroutine it started.
func (c *Client) Run(ctx context.Context) {
	defer c.pool.Shutdown()
	defer c.rpcServer.Shutdown()
	defer c.csiConns.Close()
	if c.docker != nil {
		defer func() { _ = c.docker.Close() }() // the containers run on, as exec tasks do
	}
	c.logger.Info("client started", "servers", c.config.Servers)
	if os.Geteuid() == 0 {
		allocRoot := filepath.Join(c.config.DataDir, "alloc")
		if err := exec.SecureAllocRoot(allocRoot); err != nil {
			c.logger.Warn("cannot make the alloc dirs nosuid and nodev: a setuid file or a device a task leaves there "+
				"is one on the host", "error", err)
		}
		defer func() {
			if err := exec.ReleaseAllocRoot(allocRoot); err != nil {
				c.logger.Warn("cannot unmount the alloc dirs' own mount", "error", err)
			}
		}()
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.drivers.run(ctx)
	}()
	// The first registration carries the drivers' health when they answer
	// soon; a later answer is sent by the updater.
	c.drivers.waitFirst(ctx, firstFingerprintWait)
	for _, fn := range []func(context.Context){c.plugins.Run, c.updater.run, c.heartbeatLoop, c.allocs.run, c.forgetPluginConns, c.volumeUsageLoop} {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			fn(ctx)
		}()
	}
	<-ctx.Done()
	c.wg.Wait()
	c.logger.Info("client stopped")
}

// node builds the node as the servers should see it, with the plugin
// fingerprint known now and the updater sequence that fingerprint reflects.
func (c *Client) node(status string) (*structs.Node, uint64) {
	ctrl, nodes, seq := c.updater.fingerprint()
	drivers := c.updater.driverSnapshot() // as new as seq or newer: a change it holds past seq is sent again
	return &structs.Node{
		ID:                   c.nodeID,
		Name:                 c.config.NodeName,
		Datacenter:           c.config.Datacenter,
		HTTPAddr:             c.config.HTTPAddr,
		Status:               status,
		CSIControllerPlugins: ctrl,
		CSINodePlugins:       nodes,
		AllowRootTasks:       c.config.AllowRootTasks,
		Drivers:              drivers,
		Resources:            c.resources.Copy(),
		Reserved:             c.config.Reserved.Copy(),
		Attributes:           maps.Clone(c.attributes),
		Meta:                 maps.Clone(c.config.Meta),
		TaskUsers:            c.users.Copy(),
	}, seq
}

// clientStatus answers the servers' calls about the client itself.
type clientStatus struct{ c *Client }

// Ping answers a server's liveness check over the client's session.
func (s *clientStatus) Ping(_ *structs.NodeSpecificRequest, reply *structs.ClientPingResponse) error {
	reply.NodeID = s.c.nodeID
	reply.Time = timeNow()
	return nil
}

// RPC calls a server endpoint with failover; a client-only agent's HTTP
// API uses it to reach the servers. The call carries the caller's token
// (args), never the node's secret: see nodeRPC for the node's own calls.
func (c *Client) RPC(ctx context.Context, method string, args, reply any) error {
	return c.callServers(ctx, method, args, reply, c.config.RPCTimeout)
}
