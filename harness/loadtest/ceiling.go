package loadtest

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	memdb "github.com/hashicorp/go-memdb"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/ugorji/go/codec"

	"github.com/berth-csi/berth/harness/agentproc"
	"github.com/berth-csi/berth/server"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// Ceiling is what berth's parts allow on their own, measured in the same
// run as the figures it is printed beside: three hashicorp/raft nodes in
// this process, on loopback TCP (raft's NetworkTransport), each with a
// raft-boltdb/v2 log in a temp dir, and an FSM that decodes each entry's
// msgpack (structs.MsgpackHandle) into a volume and inserts it into a
// go-memdb table. One entry per operation, so its rate is entries/s: the
// most a write path that makes one raft entry per request could reach.
// The raft timing is berth's own (server.DefaultConfig).
type Ceiling struct {
	nodes  []*raft.Raft
	stores []*raftboltdb.BoltStore
	trans  []*raft.NetworkTransport
	entry  []byte // one volume's msgpack, as a register's entry holds it
}

// StartCeiling starts the three raft nodes and waits for a leader. They
// are shut down in t's cleanup.
func StartCeiling(t testing.TB) *Ceiling {
	t.Helper()
	c := &Ceiling{}
	var buf bytes.Buffer
	if err := codec.NewEncoder(&buf, structs.MsgpackHandle).Encode(statetest.Volume("ceiling", "mock")); err != nil {
		t.Fatalf("ceiling: encode a volume: %v", err)
	}
	c.entry = buf.Bytes()
	def := server.DefaultConfig()
	var servers []raft.Server
	for i := range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("ceiling: listen: %v", err)
		}
		addr := ln.Addr().(*net.TCPAddr)
		_ = ln.Close()
		trans, err := raft.NewTCPTransportWithLogger(addr.String(), addr, 3, 10*time.Second, hclog.NewNullLogger())
		if err != nil {
			t.Fatalf("ceiling: raft transport on %s: %v", addr, err)
		}
		c.trans = append(c.trans, trans)
		id := raft.ServerID("ceiling-" + strconv.Itoa(i))
		servers = append(servers, raft.Server{ID: id, Address: trans.LocalAddr()})
		store, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(t.TempDir(), "raft.db")})
		if err != nil {
			t.Fatalf("ceiling: raft log: %v", err)
		}
		c.stores = append(c.stores, store)
		conf := raft.DefaultConfig()
		conf.LocalID = id
		conf.Logger = hclog.NewNullLogger()
		conf.HeartbeatTimeout, conf.ElectionTimeout = def.RaftHeartbeatTimeout, def.RaftElectionTimeout
		conf.LeaderLeaseTimeout, conf.CommitTimeout = def.RaftLeaderLeaseTimeout, def.RaftCommitTimeout
		conf.SnapshotThreshold, conf.TrailingLogs = def.RaftSnapshotThreshold, def.RaftTrailingLogs
		fsm, err := newCeilingFSM()
		if err != nil {
			t.Fatalf("ceiling: %v", err)
		}
		r, err := raft.NewRaft(conf, fsm, store, store, raft.NewInmemSnapshotStore(), trans)
		if err != nil {
			t.Fatalf("ceiling: start raft: %v", err)
		}
		c.nodes = append(c.nodes, r)
	}
	t.Cleanup(c.Close)
	if err := c.nodes[0].BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil {
		t.Fatalf("ceiling: bootstrap: %v", err)
	}
	agentproc.WaitUntil(t, 30*time.Second, 20*time.Millisecond, "ceiling: a raft leader", func() bool { return c.leader() != nil })
	return c
}

func (c *Ceiling) leader() *raft.Raft {
	for _, r := range c.nodes {
		if r.State() == raft.Leader {
			return r
		}
	}
	return nil
}

// Close shuts the three nodes down (again is harmless), so that they load
// the machine no more once measured.
func (c *Ceiling) Close() {
	for _, r := range c.nodes {
		_ = r.Shutdown().Error()
	}
	for _, tr := range c.trans {
		_ = tr.Close()
	}
	for _, s := range c.stores {
		_ = s.Close()
	}
}

// Run applies one entry per call, with callers concurrent appliers, for
// d, at the leader; its rate is entries/s.
func (c *Ceiling) Run(callers int, d time.Duration) (Throughput, error) {
	r := c.leader()
	if r == nil {
		return Throughput{}, fmt.Errorf("ceiling: no raft leader")
	}
	return runFor(callers, d, func(int, int) error { return r.Apply(c.entry, 10*time.Second).Error() })
}

// ceilingFSM decodes each entry into a volume and inserts it into a
// go-memdb table under a new ID, as berth's FSM does with a register.
type ceilingFSM struct {
	db  *memdb.MemDB
	seq int64 // the FSM's goroutine only
}

func newCeilingFSM() (*ceilingFSM, error) {
	db, err := memdb.NewMemDB(&memdb.DBSchema{Tables: map[string]*memdb.TableSchema{
		"volumes": {Name: "volumes", Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: &memdb.StringFieldIndex{Field: "ID"}},
		}},
	}})
	if err != nil {
		return nil, fmt.Errorf("memdb schema: %w", err)
	}
	return &ceilingFSM{db: db}, nil
}

func (f *ceilingFSM) Apply(l *raft.Log) any {
	var v structs.CSIVolume
	if err := codec.NewDecoderBytes(l.Data, structs.MsgpackHandle).Decode(&v); err != nil {
		return err
	}
	f.seq++
	v.ID = "vol-" + strconv.FormatInt(f.seq, 10)
	v.CreateIndex, v.ModifyIndex = l.Index, l.Index
	txn := f.db.Txn(true)
	if err := txn.Insert("volumes", &v); err != nil {
		txn.Abort()
		return err
	}
	txn.Commit()
	return nil
}

func (f *ceilingFSM) Snapshot() (raft.FSMSnapshot, error) { return ceilingSnapshot{}, nil }

func (f *ceilingFSM) Restore(rc io.ReadCloser) error { return rc.Close() }

type ceilingSnapshot struct{}

func (ceilingSnapshot) Persist(sink raft.SnapshotSink) error { return sink.Close() }
func (ceilingSnapshot) Release()                             {}
