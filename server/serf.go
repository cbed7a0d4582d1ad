package server

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/raft"
	"github.com/hashicorp/serf/serf"

	"github.com/berth-csi/berth/internal/backoff"
	"github.com/berth-csi/berth/rpc"
)

// Gossip tags every berth server carries.
const (
	tagRole    = "role"
	tagID      = "id"
	tagRPCAddr = "rpc_addr"
	tagExpect  = "expect"
	roleServer = "berth-server"
)

// serverMember is a gossip member that is a berth server.
type serverMember struct {
	Name    string
	ID      string
	RPCAddr string
	Expect  int
	Status  serf.MemberStatus
	Member  serf.Member
}

// parseServer reads a member's tags; ok is false for non-servers.
func parseServer(m serf.Member) (serverMember, bool) {
	if m.Tags[tagRole] != roleServer || m.Tags[tagID] == "" || m.Tags[tagRPCAddr] == "" {
		return serverMember{}, false
	}
	expect, _ := strconv.Atoi(m.Tags[tagExpect])
	return serverMember{
		Name:    m.Name,
		ID:      m.Tags[tagID],
		RPCAddr: m.Tags[tagRPCAddr],
		Expect:  expect,
		Status:  m.Status,
		Member:  m,
	}, true
}

func (s *Server) setupSerf() error {
	conf := serf.DefaultConfig()
	conf.Init()
	conf.NodeName = s.config.NodeName
	conf.Tags = map[string]string{
		tagRole:    roleServer,
		tagID:      s.id,
		tagRPCAddr: s.rpcAddr,
		tagExpect:  strconv.Itoa(s.config.BootstrapExpect),
	}
	conf.EventCh = s.serfEventCh
	serfDir := filepath.Join(s.config.DataDir, "serf")
	if err := os.MkdirAll(serfDir, 0o700); err != nil {
		return fmt.Errorf("server: create gossip dir: %w", err)
	}
	conf.SnapshotPath = filepath.Join(serfDir, "local.snapshot")
	conf.RejoinAfterLeave = true
	logger := s.config.Logger.Named("serf").StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true})
	conf.Logger = logger

	ml := memberlist.DefaultLANConfig()
	if s.config.GossipLocal {
		ml = memberlist.DefaultLocalConfig()
	}
	ml.Name = s.config.NodeName
	ml.BindAddr = s.config.BindAddr
	ml.BindPort = s.config.SerfPort
	ml.AdvertiseAddr = s.config.BindAddr
	ml.AdvertisePort = s.config.SerfPort
	ml.Logger = logger
	if len(s.config.EncryptKey) > 0 {
		// memberlist encrypts every message with the key and, as
		// GossipVerifyIncoming is on by default, drops any that is not:
		// a member without the key cannot join.
		ml.SecretKey = s.config.EncryptKey
	}
	if err := s.setupGossipTransport(ml); err != nil {
		return fmt.Errorf("server: start gossip on %s: %w",
			net.JoinHostPort(s.config.BindAddr, strconv.Itoa(s.config.SerfPort)), err)
	}
	conf.MemberlistConfig = ml

	sf, err := serf.Create(conf)
	if err != nil {
		if ml.Transport != nil {
			_ = ml.Transport.Shutdown()
		}
		return fmt.Errorf("server: start gossip on %s: %w",
			net.JoinHostPort(s.config.BindAddr, strconv.Itoa(s.config.SerfPort)), err)
	}
	s.serf = sf
	return nil
}

// servers lists the berth servers gossip knows, sorted by name.
func (s *Server) servers() []serverMember {
	var out []serverMember
	for _, m := range s.serf.Members() {
		if sm, ok := parseServer(m); ok {
			out = append(out, sm)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// serfEventLoop reacts to membership changes: bootstrap when enough servers
// are present, and nudge the leader to reconcile raft with gossip.
func (s *Server) serfEventLoop() {
	for {
		select {
		case <-s.ctx.Done():
			return
		case e := <-s.serfEventCh:
			me, ok := e.(serf.MemberEvent)
			if !ok {
				continue
			}
			for _, m := range me.Members {
				s.logger.Debug("gossip member event", "event", me.EventType().String(), "member", m.Name)
			}
			s.maybeBootstrap()
			select {
			case s.reconcileCh <- struct{}{}:
			default:
			}
		}
	}
}

// maybeBootstrap forms the first raft configuration once bootstrap_expect
// servers are alive in gossip. Every server computes the same configuration
// from the same members, so it does not matter which bootstraps first. A
// server with raft state from an earlier run never bootstraps again. Under
// TLS, only members that show a server certificate count (verifyMember).
func (s *Server) maybeBootstrap() {
	if s.hadRaftState || s.bootstrapped.Load() || s.raft == nil {
		return
	}
	var alive []serverMember
	for _, m := range s.servers() {
		if m.Status != serf.StatusAlive {
			continue
		}
		if m.Expect != 0 && m.Expect != s.config.BootstrapExpect {
			s.logger.Error("servers disagree on bootstrap_expect; not bootstrapping",
				"member", m.Name, "theirs", m.Expect, "ours", s.config.BootstrapExpect)
			return
		}
		alive = append(alive, m)
	}
	// The certificate checks (a dial each, on the gossip event loop) wait
	// until there are enough members to bootstrap with.
	if len(alive) < s.config.BootstrapExpect {
		return
	}
	var voters []serverMember
	for _, m := range alive {
		if err := s.verifyMember(s.ctx, m); err != nil {
			s.logger.Warn("not bootstrapping raft with gossip member", "member", m.Name, "addr", m.RPCAddr, "error", err)
			continue
		}
		voters = append(voters, m)
	}
	if len(voters) < s.config.BootstrapExpect {
		return
	}
	var conf raft.Configuration
	for _, m := range voters {
		conf.Servers = append(conf.Servers, raft.Server{
			Suffrage: raft.Voter,
			ID:       raft.ServerID(m.ID),
			Address:  raft.ServerAddress(m.RPCAddr),
		})
	}
	if !s.bootstrapped.CompareAndSwap(false, true) {
		return
	}
	if err := s.raft.BootstrapCluster(conf).Error(); err != nil && err != raft.ErrCantBootstrap {
		s.logger.Error("raft bootstrap failed", "error", err)
		s.bootstrapped.Store(false)
		return
	}
	s.logger.Info("raft bootstrapped", "servers", len(conf.Servers))
}

// joinRetry paces retryJoin: 250ms doubling up to 8s, jittered so that
// servers started together do not retry in step.
var joinRetry = backoff.Policy{Initial: 250 * time.Millisecond, Max: 8 * time.Second, Multiplier: 2, Jitter: 0.2}

// retryJoin joins the configured servers, retrying until one answers or
// the server shuts down: the servers of a new cluster often start at the
// same moment, and the one a server names to join may not listen yet.
func (s *Server) retryJoin() {
	join := strings.Join(s.config.Join, ",")
	attempt := 0
	_ = backoff.Retry(s.ctx, joinRetry, nil, func(context.Context) error {
		attempt++
		n, err := s.serf.Join(s.config.Join, true)
		if err == nil || n > 0 {
			s.logger.Info("joined servers", "join", join, "contacted", n)
			return nil
		}
		if attempt == 1 || attempt%10 == 0 {
			s.logger.Warn("could not join servers yet; retrying", "join", join, "attempt", attempt, "error", err)
		}
		return err
	})
}

// setupGossipTransport gives memberlist the transport it would build
// itself, except that its TCP dials (push/pull, probe fallback) come from
// the bind address as the server's other connections do; its UDP packets
// already leave from the bound socket. A dynamic port (0) is retried as
// memberlist does, and ml's ports are set to the one chosen.
func (s *Server) setupGossipTransport(ml *memberlist.Config) error {
	nc := &memberlist.NetTransportConfig{
		BindAddrs: []string{ml.BindAddr},
		BindPort:  ml.BindPort,
		Logger:    ml.Logger,
	}
	limit := 1
	if ml.BindPort == 0 {
		limit = 10
	}
	var nt *memberlist.NetTransport
	var err error
	for range limit {
		if nt, err = memberlist.NewNetTransport(nc); err == nil || !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	if err != nil {
		return err
	}
	if ml.BindPort == 0 {
		ml.BindPort = nt.GetAutoBindPort()
		ml.AdvertisePort = ml.BindPort
	}
	ml.Transport = &boundTransport{NetTransport: nt, bindIP: ml.BindAddr}
	return nil
}

// boundTransport is memberlist's NetTransport dialing from bindIP.
type boundTransport struct {
	*memberlist.NetTransport
	bindIP string
}

func (t *boundTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return t.DialAddressTimeout(memberlist.Address{Addr: addr}, timeout)
}

func (t *boundTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	if src := rpc.SourceAddr(t.bindIP, a.Addr); src != nil {
		d.LocalAddr = src
	}
	return d.Dial("tcp", a.Addr)
}
