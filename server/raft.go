package server

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

const (
	raftDBFile        = "raft.db"
	raftSnapshotsKept = 2
)

// setupRaft opens the boltdb log and stable store and the file snapshot
// store in the data dir and starts raft over the shared TCP port.
func (s *Server) setupRaft() error {
	dir := filepath.Join(s.config.DataDir, "raft")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("server: create raft dir: %w", err)
	}
	store, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, raftDBFile)})
	if err != nil {
		return fmt.Errorf("server: open raft log %s: %w", filepath.Join(dir, raftDBFile), err)
	}
	s.raftStore = store
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, raftSnapshotsKept, s.config.Logger.Named("raft"))
	if err != nil {
		return fmt.Errorf("server: open raft snapshots: %w", err)
	}
	s.raftTransport = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  s.raftLayer,
		MaxPool: 3,
		Timeout: 10 * time.Second,
		Logger:  s.config.Logger.Named("raft-net"),
	})

	conf := raft.DefaultConfig()
	conf.LocalID = raft.ServerID(s.id)
	conf.Logger = s.config.Logger.Named("raft")
	conf.HeartbeatTimeout = s.config.RaftHeartbeatTimeout
	conf.ElectionTimeout = s.config.RaftElectionTimeout
	conf.LeaderLeaseTimeout = s.config.RaftLeaderLeaseTimeout
	if s.config.RaftCommitTimeout > 0 {
		conf.CommitTimeout = s.config.RaftCommitTimeout
	}
	conf.SnapshotThreshold = s.config.RaftSnapshotThreshold
	conf.SnapshotInterval = s.config.RaftSnapshotInterval
	conf.TrailingLogs = s.config.RaftTrailingLogs
	conf.NotifyCh = s.raftNotifyCh
	if err := raft.ValidateConfig(conf); err != nil {
		return fmt.Errorf("server: raft config: %w", err)
	}

	s.hadRaftState, err = raft.HasExistingState(store, store, snaps)
	if err != nil {
		return fmt.Errorf("server: read raft state: %w", err)
	}
	r, err := raft.NewRaft(conf, timedFSM{s.fsm}, store, store, snaps, s.raftTransport)
	if err != nil {
		return fmt.Errorf("server: start raft: %w", err)
	}
	s.raft = r
	s.countLeaderChanges()
	return nil
}

// raftConfiguration returns the current raft configuration.
func (s *Server) raftConfiguration() (raft.Configuration, uint64, error) {
	f := s.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return raft.Configuration{}, 0, err
	}
	return f.Configuration(), f.Index(), nil
}

// leaderAddr is the leader's RPC address (raft and RPC share a port), or
// "" while there is none.
func (s *Server) leaderAddr() string {
	if s.raft == nil {
		return ""
	}
	addr, _ := s.raft.LeaderWithID()
	return string(addr)
}
