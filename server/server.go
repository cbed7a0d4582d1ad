package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	autopilot "github.com/hashicorp/raft-autopilot"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/hashicorp/serf/serf"

	"github.com/berth-csi/berth/fsm"
	"github.com/berth-csi/berth/rpc"
	"github.com/berth-csi/berth/server/heartbeat"
	"github.com/berth-csi/berth/server/scheduler"
	"github.com/berth-csi/berth/server/volumewatcher"
	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
	"github.com/berth-csi/berth/tlsutil"
)

// Server is one berth server.
type Server struct {
	config *Config
	logger hclog.Logger
	id     string

	// planMu makes scheduling passes one at a time on the leader, so two
	// never plan the same claim.
	planMu sync.Mutex
	// planner plans the placements of Job.Register (the leader's job
	// watcher has its own: see watchJobs).
	planner *scheduler.Planner
	// volumeWatcher drives released claims to freed while this server
	// leads (volume_release.go).
	volumeWatcher *volumewatcher.Watcher
	// followerReads counts the reads this server served as a follower by
	// read index (followerRead), for tests and figures.
	followerReads atomic.Uint64
	// claims, registers, allocUpdates and fingerprints coalesce
	// concurrent writes into raft entries (batcher.go).
	claims       batcher[structs.CSIVolumeClaimRequest]
	registers    batcher[structs.CSIVolumeRegisterRequest]
	allocUpdates batcher[structs.AllocClientUpdateRequest]
	fingerprints batcher[structs.NodeFingerprintRequest]

	ctx    context.Context // the server's lifetime; cancelled by Shutdown
	cancel context.CancelFunc
	// queryCtx bounds every blocking query's wait: EndBlockingQueries
	// cancels it (and Shutdown, through ctx), so that waiters answer at once.
	queryCtx   context.Context
	endQueries context.CancelFunc
	wg         sync.WaitGroup

	tls       *tlsutil.Configurator // nil without tls.rpc
	listener  net.Listener
	rpcAddr   string
	mux       *rpc.Mux
	rpcServer *rpc.Server
	pool      *rpc.Pool

	fsm           *fsm.FSM
	raft          *raft.Raft
	raftStore     *raftboltdb.BoltStore
	raftLayer     *raftLayer
	raftTransport *raft.NetworkTransport
	raftNotifyCh  chan bool
	// raftReady is closed once raft is set up (s.raft written): RPC
	// connections accepted before wait for it, so that no handler reads
	// s.raft before it is there (raft's own connections do not wait).
	raftReady     chan struct{}
	hadRaftState  bool
	bootstrapped  atomic.Bool
	readyForReads atomic.Bool // leader has applied all earlier terms' entries

	serf        *serf.Serf
	serfEventCh chan serf.Event
	reconcileCh chan struct{}

	autopilot *autopilot.Autopilot

	heartbeats *heartbeat.Timers // the leader's per-node TTL timers (heartbeat.go)
	nodeConns  *nodeConns

	acls         aclCache               // compiled ACLs, by their policies' versions
	leaderSecret atomic.Pointer[string] // this leader's own token (acl_leader.go); nil when not leading

	keys *serverKeyring // root keys: material in the keystore, metadata in raft

	snapshots snapshotStage // operator snapshot files in transit (operator_snapshot_staging.go)

	shutdownOnce sync.Once
	shutdownErr  error
}

// New starts a server: it binds its ports, opens raft from the data dir,
// joins gossip and begins serving. Shutdown stops everything it started.
func New(cfg *Config) (*Server, error) {
	if cfg == nil {
		cfg = DefaultConfig()
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("server: create data dir %q: %w", cfg.DataDir, err)
	}
	id, err := loadOrCreateID(filepath.Join(cfg.DataDir, "server-id"))
	if err != nil {
		return nil, err
	}
	if cfg.NodeName == "" {
		cfg.NodeName = "server-" + id[:8]
	}

	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		config:       cfg,
		logger:       cfg.Logger.Named("server").With("server", cfg.NodeName),
		id:           id,
		ctx:          ctx,
		cancel:       cancel,
		raftNotifyCh: make(chan bool, 16),
		raftReady:    make(chan struct{}),
		serfEventCh:  make(chan serf.Event, 256),
		reconcileCh:  make(chan struct{}, 1),
		nodeConns:    newNodeConns(),
	}
	s.queryCtx, s.endQueries = context.WithCancel(ctx)
	s.planner = scheduler.NewPlanner(scheduler.SystemClock, s.logger)
	s.setupBatchers()
	if s.volumeWatcher, err = s.newVolumeWatcher(); err != nil {
		cancel()
		return nil, err
	}
	if s.heartbeats, err = s.newHeartbeats(); err != nil {
		cancel()
		return nil, err
	}
	if err := s.start(); err != nil {
		_ = s.Shutdown()
		return nil, err
	}
	return s, nil
}

func (s *Server) start() error {
	if err := s.setupTLS(); err != nil {
		return err
	}
	addr := net.JoinHostPort(s.config.BindAddr, strconv.Itoa(s.config.RPCPort))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("server: listen for RPC on %s: %w (is another agent using -rpc-port %d?)", addr, err, s.config.RPCPort)
	}
	s.listener = l
	s.rpcAddr = l.Addr().String()

	if s.fsm, err = fsm.New(s.config.Logger); err != nil {
		return err
	}
	if err := s.setupKeyring(); err != nil {
		return err
	}
	s.rpcServer = rpc.NewServer(s.config.Logger, append(s.rpcServerOptions(), rpc.WithInterceptor(s.intercept))...)
	if err := s.registerEndpoints(); err != nil {
		return err
	}
	s.pool = rpc.NewPool(s.config.Logger, 64, s.poolOptions()...)

	s.raftLayer = newRaftLayer(s.ctx, l.Addr(), s.config.BindAddr, s.outgoingTLS())
	s.mux = rpc.NewMux(s.config.Logger, l, s.muxOptions()...)
	s.mux.Handle(rpc.TypeRPC, s.afterRaft(func(c net.Conn) { s.rpcServer.ServeConn(s.ctx, c) }))
	s.mux.Handle(rpc.TypeMultiplex, s.afterRaft(func(c net.Conn) { s.rpcServer.ServeMultiplex(s.ctx, c, nil) }))
	s.mux.Handle(rpc.TypeRaft, s.raftLayer.handoff)
	s.goFunc(func() {
		if err := s.mux.Serve(s.ctx); err != nil && s.ctx.Err() == nil {
			s.logger.Error("rpc listener stopped", "error", err)
		}
	})

	if err := s.setupRaft(); err != nil {
		return err
	}
	close(s.raftReady)
	if err := s.setupSerf(); err != nil {
		return err
	}
	s.setupAutopilot()
	s.goFunc(s.monitorLeadership)
	s.goFunc(s.replicateKeys)
	s.goFunc(s.serfEventLoop)

	if len(s.config.Join) > 0 {
		s.goFunc(s.retryJoin)
	}
	s.maybeBootstrap()
	s.logger.Info("server started", "rpc_addr", s.rpcAddr, "serf_addr", s.SerfAddr(), "id", s.id,
		"tls_rpc", s.tls != nil, "gossip_encrypted", len(s.config.EncryptKey) > 0)
	return nil
}

// goFunc runs fn on a goroutine the server waits for in Shutdown.
func (s *Server) goFunc(fn func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		fn()
	}()
}

// Shutdown stops the server without leaving the cluster: the other
// servers see it as failed, as after a crash, and it rejoins on restart.
func (s *Server) Shutdown() error {
	s.shutdownOnce.Do(func() {
		s.logger.Info("shutting down")
		s.handOffLeadership()
		s.cancel()
		var errs []error
		if s.autopilot != nil {
			<-s.autopilot.Stop()
		}
		if s.serf != nil {
			errs = append(errs, s.serf.Shutdown())
		}
		if s.raft != nil {
			errs = append(errs, s.raft.Shutdown().Error())
		}
		if s.raftLayer != nil {
			_ = s.raftLayer.Close()
		}
		if s.raftTransport != nil {
			errs = append(errs, s.raftTransport.Close())
		}
		if s.listener != nil {
			_ = s.listener.Close()
		}
		if s.rpcServer != nil {
			s.rpcServer.Shutdown()
		}
		if s.pool != nil {
			s.pool.Shutdown()
		}
		s.wg.Wait()
		if s.raftStore != nil {
			errs = append(errs, s.raftStore.Close())
		}
		s.shutdownErr = errors.Join(errs...)
	})
	return s.shutdownErr
}

// handOffLeadership asks raft to pass the leadership to another voter
// before a leader stops, so that the others need not wait out an election
// timeout (raft sends the most caught-up follower TimeoutNow). It waits
// at most about an election timeout; on failure the others elect as after
// a crash.
func (s *Server) handOffLeadership() {
	if s.raft == nil || s.raft.State() != raft.Leader {
		return
	}
	conf, _, err := s.raftConfiguration()
	if err != nil || len(conf.Servers) < 2 {
		return
	}
	start := time.Now()
	if err := s.raft.LeadershipTransfer().Error(); err != nil {
		s.logger.Warn("could not hand the leadership over before stopping", "error", err)
		return
	}
	s.logger.Info("leadership handed over before stopping", "took", time.Since(start).Round(time.Millisecond))
}

// Leave announces to the other servers that this one leaves for good, then
// steps out of raft if it leads.
func (s *Server) Leave() error {
	if s.isLeader() {
		if err := s.raft.RemoveServer(raft.ServerID(s.id), 0, 0).Error(); err != nil {
			s.logger.Warn("could not remove self from raft before leaving", "error", err)
		}
	}
	return s.serf.Leave()
}

// ID is the server's stable raft ID.
func (s *Server) ID() string { return s.id }

// Name is the server's gossip and raft node name.
func (s *Server) Name() string { return s.config.NodeName }

// RPCAddr is the address of the server's one TCP port (RPC, raft, sessions).
func (s *Server) RPCAddr() string { return s.rpcAddr }

// SerfAddr is the gossip address other servers join.
func (s *Server) SerfAddr() string {
	if s.serf == nil {
		return ""
	}
	m := s.serf.LocalMember()
	return net.JoinHostPort(m.Addr.String(), strconv.Itoa(int(m.Port)))
}

// State is the current state store. Reads only: every write goes through raft.
func (s *Server) State() *state.StateStore { return s.fsm.State() }

// RPC calls an endpoint in-process, with the same forwarding and error
// semantics as a call over the network. The HTTP API uses it.
func (s *Server) RPC(ctx context.Context, method string, args, reply any) error {
	return s.rpcServer.Call(ctx, method, args, reply)
}

// EndBlockingQueries makes every blocking query waiting now, and any that
// comes later, answer at once with what the state holds: an agent calls it
// as it shuts down, so that its HTTP shutdown is not held for a query's
// whole wait by an open web UI or a CLI watching a list.
func (s *Server) EndBlockingQueries() { s.endQueries() }

// IsLeader reports whether this server leads the cluster now.
func (s *Server) IsLeader() bool { return s.isLeader() }

// afterRaft wraps a connection handler so that it runs once raft is set
// up; a connection still waiting when the server shuts down is closed.
// The listener must serve before raft starts (raft's own connections come
// through it), and an RPC served then would find no raft: a client's
// heartbeat to a server just restarted panicked on it.
func (s *Server) afterRaft(serve func(net.Conn)) func(net.Conn) {
	return func(c net.Conn) {
		select {
		case <-s.raftReady:
			serve(c)
		case <-s.ctx.Done():
			_ = c.Close()
		}
	}
}

func (s *Server) isLeader() bool { return s.raft != nil && s.raft.State() == raft.Leader }
