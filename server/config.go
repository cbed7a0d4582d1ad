package server

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/berth-csi/berth/internal/clock"
	"github.com/berth-csi/berth/tlsutil"
)

// Default ports, as in INTERFACE.md.
const (
	DefaultHTTPPort = 4746
	DefaultRPCPort  = 4747
	DefaultSerfPort = 4748
)

// DefaultJobMaxCount is the default of Config.JobMaxCount: more than a
// cluster of berth's size runs, small enough that a typo of a count is
// refused rather than planned.
const DefaultJobMaxCount = 10_000

// Garbage collection defaults (Config.GCInterval and the thresholds).
const (
	DefaultGCInterval       = 5 * time.Minute
	DefaultAllocGCThreshold = time.Hour
	DefaultJobGCThreshold   = 4 * time.Hour
	DefaultNodeGCThreshold  = 24 * time.Hour
)

// GossipKeySize is the length of the gossip encryption key (AES-256).
const GossipKeySize = 32

// ErrGossipKeySize is the error for a gossip key of the wrong length.
var ErrGossipKeySize = errors.New("server: server.encrypt must be 32 bytes base64; make one with `berth operator gossip keygen`")

// Config is what a server needs to start. Build it from DefaultConfig.
type Config struct {
	// NodeName names the server in gossip and raft listings; it defaults to
	// "server-" and the first 8 characters of the server's stable ID.
	NodeName string
	// DataDir holds raft.db (logs and stable store), snapshots/, the serf
	// snapshot and the server's stable ID.
	DataDir string
	// BindAddr is the IP the RPC and gossip listeners bind to. It is also
	// the address other servers reach this one at.
	BindAddr string
	// RPCPort serves RPC, raft and client sessions on one TCP port; 0 picks a free one.
	RPCPort int
	// SerfPort serves gossip (TCP and UDP); 0 picks a free one.
	SerfPort int
	// BootstrapExpect is how many servers to wait for before electing the
	// first leader. 1 bootstraps alone (dev mode).
	BootstrapExpect int
	// Join lists serf addresses (host:port) of servers to join at start.
	Join []string

	// ACLEnabled makes every RPC endpoint check the caller's token
	// (acl { enabled = true }); off, every caller may do everything but
	// act for another client's node.
	ACLEnabled bool

	// TLS, with EnableRPC, makes every connection to the RPC port TLS
	// with both sides verified (the agent's tls { } block): raft, server
	// to server and client sessions alike; plain text is refused, and
	// only a server certificate may open a raft connection, forward a
	// request or be added to raft. VerifyServerHostname also makes this
	// server check, when it dials, that it reached a server certificate.
	// Nil or EnableRPC off is plain text (-dev).
	TLS *tlsutil.Config
	// EncryptKey encrypts gossip (server { encrypt }, decoded from
	// base64): 32 bytes, the same on every server; a member without it
	// cannot join. Empty gossips in the clear.
	EncryptKey []byte

	// HeartbeatTTL is the least TTL given to clients; once the live
	// nodes would heartbeat more than MaxHeartbeatsPerSecond times a
	// second at it, the TTL grows so that they do not
	// (heartbeat.ScaledTTL; server { max_heartbeats_per_second }; 0: no
	// cap).
	HeartbeatTTL           time.Duration
	MaxHeartbeatsPerSecond float64
	// DrainPluginGrace is how long past a drain's deadline the node's CSI
	// plugins wait for the claims on the node to be released: a release
	// unmounts through the node plugin.
	DrainPluginGrace time.Duration

	// Raft timing. Lower values elect faster but flap on a loaded machine.
	RaftHeartbeatTimeout   time.Duration
	RaftElectionTimeout    time.Duration
	RaftLeaderLeaseTimeout time.Duration
	// RaftCommitTimeout is how long the leader, with nothing new to send,
	// waits before telling the followers its commit index (raft's
	// CommitTimeout: one to two of it): how long a follower's state trails
	// a write, and a stale read through it. hashicorp/raft's 50 ms put up
	// to 100 ms on each step of a workflow that reads through followers
	// (a client's watch of its allocations is one). 5 ms: each of those
	// steps waits 5-10 ms; idle, the three servers spend about 3 % of a
	// core more than at 10 ms on the empty appends (`make latency`).
	RaftCommitTimeout     time.Duration
	RaftSnapshotThreshold uint64
	RaftSnapshotInterval  time.Duration
	RaftTrailingLogs      uint64

	// GossipLocal uses memberlist's local-network timing (faster failure
	// detection); for tests and single-machine clusters.
	GossipLocal bool

	// JobMaxCount is the most allocations one job may ask for, all its
	// groups' counts added up; a job over it is refused (400). Placement
	// work grows with nodes and allocations placed, not with count, but
	// every placed allocation is state, so count is capped too.
	JobMaxCount int

	// ReconcileInterval is how often the leader reconciles gossip members
	// with the raft configuration, besides reacting to gossip events.
	ReconcileInterval time.Duration

	// Garbage collection (server/gc): every GCInterval the leader removes the
	// allocations over on their client for AllocGCThreshold, the stopped
	// (or done batch) jobs, with no allocation left, unchanged for
	// JobGCThreshold, the nodes down for NodeGCThreshold, and freed past
	// claims (server { gc_interval, alloc_gc_threshold, job_gc_threshold,
	// node_gc_threshold }).
	GCInterval       time.Duration
	AllocGCThreshold time.Duration
	JobGCThreshold   time.Duration
	NodeGCThreshold  time.Duration

	// Clock is the leader's time for the drainer's deadlines, and the
	// time Node.UpdateDrain stamps a drain with, and garbage
	// collection's; nil is the wall clock.
	// Tests move a clocktest.Fake.
	Clock clock.Clock

	Logger hclog.Logger
}

// DefaultMaxHeartbeatsPerSecond is the heartbeats a second the leader
// takes before it stretches the TTL: 250. A client heartbeats 4.8 times
// a TTL (structs.HeartbeatsPerTTL), so at the 10 s TTL that is about 520
// nodes, and 10,000 nodes get 192 s: about what Nomad's default of 50
// gives its clients, which heartbeat once a TTL.
const DefaultMaxHeartbeatsPerSecond = 250.0

// DefaultConfig returns a config with every default set. DataDir and
// BindAddr still need a value.
func DefaultConfig() *Config {
	return &Config{
		BindAddr:               "127.0.0.1",
		RPCPort:                DefaultRPCPort,
		SerfPort:               DefaultSerfPort,
		BootstrapExpect:        1,
		HeartbeatTTL:           10 * time.Second,
		MaxHeartbeatsPerSecond: DefaultMaxHeartbeatsPerSecond,
		DrainPluginGrace:       time.Minute,
		RaftHeartbeatTimeout:   500 * time.Millisecond,
		RaftElectionTimeout:    500 * time.Millisecond,
		RaftLeaderLeaseTimeout: 250 * time.Millisecond,
		RaftCommitTimeout:      5 * time.Millisecond,
		RaftSnapshotThreshold:  8192,
		RaftSnapshotInterval:   2 * time.Minute,
		RaftTrailingLogs:       10240,
		ReconcileInterval:      30 * time.Second,
		GCInterval:             DefaultGCInterval,
		AllocGCThreshold:       DefaultAllocGCThreshold,
		JobGCThreshold:         DefaultJobGCThreshold,
		NodeGCThreshold:        DefaultNodeGCThreshold,
		JobMaxCount:            DefaultJobMaxCount,
		Logger:                 hclog.NewNullLogger(),
	}
}

// Validate names the first field that is wrong and how to fix it.
func (c *Config) Validate() error {
	var errs []error
	if c.DataDir == "" {
		errs = append(errs, errors.New("server: data_dir is required (-data-dir)"))
	}
	ip := net.ParseIP(c.BindAddr)
	switch {
	case ip == nil:
		errs = append(errs, fmt.Errorf("server: bind address %q is not an IP address (-bind)", c.BindAddr))
	case ip.IsUnspecified():
		errs = append(errs, fmt.Errorf("server: bind address %q is not reachable by other servers; bind a specific IP (-bind)", c.BindAddr))
	}
	if c.RPCPort < 0 || c.RPCPort > 65535 {
		errs = append(errs, fmt.Errorf("server: rpc port %d is out of range (-rpc-port)", c.RPCPort))
	}
	if c.SerfPort < 0 || c.SerfPort > 65535 {
		errs = append(errs, fmt.Errorf("server: serf port %d is out of range (-serf-port)", c.SerfPort))
	}
	if c.RPCPort != 0 && c.RPCPort == c.SerfPort {
		errs = append(errs, fmt.Errorf("server: rpc port and serf port are both %d; give them different ports", c.RPCPort))
	}
	if c.BootstrapExpect < 1 {
		errs = append(errs, fmt.Errorf("server: bootstrap_expect must be at least 1, got %d (-bootstrap-expect)", c.BootstrapExpect))
	}
	if c.BootstrapExpect == 2 {
		errs = append(errs, errors.New("server: bootstrap_expect 2 cannot survive the loss of either server; use 1, 3 or 5"))
	}
	if c.HeartbeatTTL <= 0 {
		errs = append(errs, fmt.Errorf("server: heartbeat TTL must be positive, got %s", c.HeartbeatTTL))
	}
	if c.MaxHeartbeatsPerSecond < 0 {
		errs = append(errs, fmt.Errorf("server: max_heartbeats_per_second must not be negative (0: no cap), got %g", c.MaxHeartbeatsPerSecond))
	}
	if c.RaftElectionTimeout <= 0 || c.RaftHeartbeatTimeout <= 0 || c.RaftLeaderLeaseTimeout <= 0 || c.RaftCommitTimeout < 0 {
		errs = append(errs, errors.New("server: raft timeouts must be positive"))
	}
	if c.RaftLeaderLeaseTimeout > c.RaftHeartbeatTimeout {
		errs = append(errs, errors.New("server: raft leader lease timeout must not exceed the heartbeat timeout"))
	}
	if c.TLS != nil && c.TLS.EnableRPC {
		if err := c.TLS.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("server: %w", err))
		}
	}
	if len(c.EncryptKey) != 0 && len(c.EncryptKey) != GossipKeySize {
		errs = append(errs, ErrGossipKeySize)
	}
	if c.JobMaxCount < 1 {
		errs = append(errs, fmt.Errorf("server: job_max_count must be at least 1, got %d", c.JobMaxCount))
	}
	errs = append(errs, c.validateGC()...)
	return errors.Join(errs...)
}
