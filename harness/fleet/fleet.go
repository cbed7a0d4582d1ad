package fleet

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/berth-csi/berth/client"
	"github.com/berth-csi/berth/internal/backoff"
	"github.com/berth-csi/berth/rpc"
	"github.com/berth-csi/berth/structs"
)

// serverRetry paces a node's calls while they fail, as the client
// agent's.
var serverRetry = client.ServerRetry

// Options shape the simulated fleet.
type Options struct {
	Nodes     int           // simulated client nodes
	Conns     int           // RPC sessions they share, spread over the servers
	Flap      int           // nodes that flap NodePlugin's health (not cut)
	FlapEvery time.Duration // about how often each of them flaps it
	Cut       int           // nodes that Fleet.Cut stops (none flaps)
	Seed      uint64        // picks the flapping and the cut nodes
}

// Fleet is the simulated client nodes and the RPC sessions they share.
// Each node runs its own loops once registered: heartbeats, and flaps
// for the flapping ones.
type Fleet struct {
	Nodes []*Node

	pools  []*rpc.Pool
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	every  time.Duration

	// Counters and latencies, for the measurements.
	HeartbeatsOK     atomic.Int64 // UpdateStatus answered without error
	HeartbeatsFailed atomic.Int64
	FlapsOK          atomic.Int64
	FlapsFailed      atomic.Int64
	Reregistered     atomic.Int64 // heartbeats answered NotFound: registered again
	Registered       atomic.Int64 // registrations answered (Register, not the re-registrations)
	RegisterRetries  atomic.Int64 // registrations sent again (no answer, or not applied)
	Heartbeats       Recorder     // UpdateStatus latencies, while recording
	Flaps            Recorder     // UpdateFingerprint latencies, while recording
	lastErr          atomic.Pointer[string]
}

// New makes the fleet's nodes, each with its own ID and node secret, on
// opts.Conns sessions dialed from the fleet's loopback address to the
// servers at rpcAddrs in turn. Nothing is sent until Register.
func New(rpcAddrs []string, opts Options) (*Fleet, error) {
	if opts.Nodes < 1 || opts.Conns < 1 || opts.Flap+opts.Cut > opts.Nodes {
		return nil, fmt.Errorf("fleet: %d nodes on %d sessions cannot have %d flapping and %d cut: give at least 1 node and 1 session, "+
			"and no more flapping and cut nodes than nodes", opts.Nodes, opts.Conns, opts.Flap, opts.Cut)
	}
	f := &Fleet{every: opts.FlapEvery}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	// The sessions answer the servers' calls to the nodes they carry
	// (ClientStatus.Ping): a shared session serves every node on it.
	status := &clientStatus{nodes: map[string]*Node{}}
	streams := rpc.NewServer(nil)
	if err := streams.Register("ClientStatus", status); err != nil {
		return nil, fmt.Errorf("fleet: register the nodes' RPC endpoints: %w", err)
	}
	// Every node may hold one blocking read at once (WatchAllocs), on top
	// of its heartbeat and a registrar's call.
	perConn := (opts.Nodes+opts.Conns-1)/opts.Conns + 256
	conns := make([]*conn, opts.Conns)
	for i := range conns {
		p := rpc.NewPool(nil, perConn, rpc.WithLocalIP(fleetAddr), rpc.WithStreamServer(streams))
		f.pools = append(f.pools, p)
		conns[i] = &conn{pool: p, addr: rpcAddrs[i%len(rpcAddrs)]}
	}
	r := rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15))
	perm := r.Perm(opts.Nodes)
	for i := range opts.Nodes {
		f.Nodes = append(f.Nodes, &Node{Index: i, ID: structs.NewUUID(), Secret: structs.NewUUID(),
			Name: fmt.Sprintf("fleet-%05d", i), conn: conns[i%len(conns)], stop: make(chan struct{})})
	}
	for k, i := range perm[:opts.Flap+opts.Cut] {
		f.Nodes[i].Flaps, f.Nodes[i].Cut = k < opts.Flap, k >= opts.Flap
	}
	for _, n := range f.Nodes {
		status.nodes[n.ID] = n
	}
	return f, nil
}

// Stop ends every node's loops and closes the sessions.
func (f *Fleet) Stop() {
	f.cancel()
	f.wg.Wait()
	for _, p := range f.pools {
		p.Shutdown()
	}
}

// LastError is the last error a node's loop met, "" when none did.
func (f *Fleet) LastError() string {
	if p := f.lastErr.Load(); p != nil {
		return *p
	}
	return ""
}

func (f *Fleet) noteErr(err error) {
	s := err.Error()
	f.lastErr.Store(&s)
}

// Register registers every node (Node.Register with its own secret),
// registrars at a time, and starts each node's loops as soon as its
// registration is answered. It returns how long the registrations took;
// the first that failed stops the rest.
func (f *Fleet) Register(registrars int) (time.Duration, error) {
	var (
		next  atomic.Int64
		first atomic.Pointer[error]
		wg    sync.WaitGroup
	)
	start := time.Now()
	for range min(registrars, len(f.Nodes)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for first.Load() == nil {
				i := int(next.Add(1) - 1)
				if i >= len(f.Nodes) {
					return
				}
				if err := f.register(f.Nodes[i]); err != nil {
					first.CompareAndSwap(nil, &err)
					return
				}
				f.Registered.Add(1)
				f.start(f.Nodes[i])
			}
		}()
	}
	wg.Wait()
	if err := first.Load(); err != nil {
		return time.Since(start), *err
	}
	return time.Since(start), nil
}

// register sends n's registration, up to 10 tries while the answer is
// Unavailable, NotReady or Indeterminate (no answer in 30 s), with the
// client's backoff: a registration sent again with the same ID and
// secret stores the same node, as a client agent's retry does.
func (f *Fleet) register(n *Node) error {
	var err error
	for try := 1; try <= 10; try++ {
		var resp structs.NodeUpdateResponse
		sent := time.Now()
		err = n.conn.call(f.ctx, 30*time.Second, "Node.Register", n.register(), &resp)
		if err == nil {
			n.ttl.Store(int64(resp.HeartbeatTTL))
			n.lastBeat.Store(sent.UnixNano())
			return nil
		}
		retry := structs.NotApplied(err) || errors.Is(err, structs.ErrIndeterminate)
		if !retry || !backoff.Sleep(f.ctx, serverRetry.Delay(try)) {
			break
		}
		f.RegisterRetries.Add(1)
		f.noteErr(fmt.Errorf("fleet: register node %s at %s (sending it again): %w", n.Name, n.conn.addr, err))
	}
	return fmt.Errorf("fleet: register node %s (%s) at %s: %w", n.Name, n.ID, n.conn.addr, err)
}

// start starts n's loops.
func (f *Fleet) start(n *Node) {
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		f.heartbeat(n)
	}()
	if n.Flaps {
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			f.flap(n)
		}()
	}
}

// heartbeat heartbeats n until it is cut or the fleet stops, as
// client/heartbeat.go does: structs.HeartbeatInterval of the TTL the
// last answer handed out, each try bounded by an eighth of it (0.5 s to 10 s),
// with the client's backoff while they fail. A node the servers do not
// know (NotFound) registers again.
func (f *Fleet) heartbeat(n *Node) {
	failures := 0
	wait := structs.HeartbeatInterval(n.TTL())
	for f.pause(n, wait) {
		ttl := n.TTL()
		var resp structs.NodeUpdateResponse
		sent := time.Now()
		err := n.conn.call(f.ctx, min(max(ttl/8, 500*time.Millisecond), 10*time.Second), "Node.UpdateStatus", n.heartbeat(), &resp)
		took := time.Since(sent)
		switch {
		case err == nil:
			f.HeartbeatsOK.Add(1)
			f.Heartbeats.Add(took)
			n.ttl.Store(int64(resp.HeartbeatTTL))
			n.lastBeat.Store(sent.UnixNano())
			failures, wait = 0, structs.HeartbeatInterval(resp.HeartbeatTTL)
		case errors.Is(err, structs.ErrNotFound) && f.ctx.Err() == nil:
			f.Reregistered.Add(1)
			f.noteErr(err)
			if err := f.register(n); err != nil {
				f.noteErr(err)
			}
			wait = structs.HeartbeatInterval(n.TTL())
		default:
			if f.ctx.Err() != nil {
				return
			}
			f.HeartbeatsFailed.Add(1)
			f.noteErr(fmt.Errorf("fleet: heartbeat of node %s at %s: %w", n.Name, n.conn.addr, err))
			failures++
			wait = serverRetry.Delay(failures)
		}
	}
}

// pause waits d, and reports false instead when the fleet stops or n is
// cut first.
func (f *Fleet) pause(n *Node, d time.Duration) bool {
	select {
	case <-f.ctx.Done():
		return false
	case <-n.stop:
		return false
	case <-time.After(d):
		return true
	}
}

// flap flips NodePlugin's health on n about every f.every (±20 %),
// through Node.UpdateFingerprint, until n is cut or the fleet stops. A
// flip that fails is sent again at the next turn.
func (f *Fleet) flap(n *Node) {
	wait := rand.N(f.every + 1) // the nodes start out of step
	for f.pause(n, wait) {
		wait = f.every*4/5 + rand.N(f.every*2/5+1)
		healthy := n.unhealthy.Load() // flip it
		var resp structs.NodeUpdateResponse
		sent := time.Now()
		err := n.conn.call(f.ctx, 10*time.Second, "Node.UpdateFingerprint", n.flap(healthy), &resp)
		if err != nil {
			if f.ctx.Err() != nil {
				return
			}
			f.FlapsFailed.Add(1)
			f.noteErr(fmt.Errorf("fleet: fingerprint update of node %s at %s: %w", n.Name, n.conn.addr, err))
			continue
		}
		f.FlapsOK.Add(1)
		f.Flaps.Add(time.Since(sent))
		n.unhealthy.Store(!healthy)
	}
}

// Cut stops the heartbeats and flaps of nodes, as if their clients died,
// and returns when it did. A call in flight still completes.
func (f *Fleet) Cut(nodes []*Node) time.Time {
	at := time.Now()
	for _, n := range nodes {
		close(n.stop)
	}
	return at
}
