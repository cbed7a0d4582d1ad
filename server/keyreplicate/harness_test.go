package keyreplicate_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/backoff"
	"github.com/berth-csi/berth/internal/clock/clocktest"
	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/server/keyreplicate"
	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

const self = "10.0.0.1:4747"

// ring is a keystore in memory.
type ring struct {
	mu   sync.Mutex
	keys map[string]*structs.RootKey
}

func newRing() *ring { return &ring{keys: map[string]*structs.RootKey{}} }

func (r *ring) Has(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.keys[id] != nil
}

func (r *ring) Add(key *structs.RootKey) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keys[key.Meta.KeyID] = key
	return nil
}

// peer is another server: its keystore, and the faults it shows.
type peer struct {
	keyreplicate.Peer
	ring *ring

	mu    sync.Mutex
	down  bool          // unreachable
	wrong bool          // Get answers with another key
	block chan struct{} // Put waits for it to close, or for its ctx
	gets  int
}

func (p *peer) set(f func(p *peer)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p)
}

// cluster is this server (self, a voter) and its peers, on a fake clock.
type cluster struct {
	t     *testing.T
	clk   *clocktest.Fake
	store *state.StateStore
	logs  *testlog.Recorder
	ring  *ring
	peers []*peer
	r     *keyreplicate.Replicator

	mu    sync.Mutex
	index uint64
}

// newCluster has self and one peer per suffrage given (true: a voter).
func newCluster(t *testing.T, voters ...bool) *cluster {
	t.Helper()
	return newClusterWith(t, nil, voters...)
}

// newClusterWith is newCluster with a change to the configuration.
func newClusterWith(t *testing.T, change func(*keyreplicate.Config), voters ...bool) *cluster {
	t.Helper()
	c := &cluster{t: t, clk: clocktest.New(), store: statetest.New(t), logs: &testlog.Recorder{}, ring: newRing()}
	for i, v := range voters {
		c.peers = append(c.peers, &peer{Peer: keyreplicate.Peer{Addr: fmt.Sprintf("10.0.0.%d:4747", i+2), Voter: v}, ring: newRing()})
	}
	cfg := keyreplicate.DefaultConfig()
	cfg.Self = self
	cfg.Ring = c.ring
	cfg.Peers = func() ([]keyreplicate.Peer, error) {
		out := []keyreplicate.Peer{{Addr: self, Voter: true}}
		for _, p := range c.peers {
			out = append(out, p.Peer)
		}
		return out, nil
	}
	cfg.Put = c.put
	cfg.Get = c.get
	cfg.State = func() *state.StateStore { return c.store }
	cfg.Logger = c.logs.Logger("solo")
	cfg.Clock = c.clk
	cfg.FetchRetry = backoff.Policy{Initial: time.Second, Max: 4 * time.Second, Multiplier: 2} // no jitter: the tests await each wait
	if change != nil {
		change(&cfg)
	}
	var err error
	c.r, err = keyreplicate.New(cfg)
	must.NoError(t, err)
	return c
}

func (c *cluster) peer(addr string) *peer {
	for _, p := range c.peers {
		if p.Addr == addr {
			return p
		}
	}
	c.t.Fatalf("no peer %s", addr)
	return nil
}

func (c *cluster) put(ctx context.Context, addr string, key *structs.RootKey) error {
	p := c.peer(addr)
	p.mu.Lock()
	down, block := p.down, p.block
	p.mu.Unlock()
	if down {
		return structs.NewError(structs.CodeUnavailable, "dial %s: connection refused", addr)
	}
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return p.ring.Add(key)
}

func (c *cluster) get(_ context.Context, addr, id string) (*structs.RootKey, error) {
	p := c.peer(addr)
	p.mu.Lock()
	p.gets++
	down, wrong := p.down, p.wrong
	p.mu.Unlock()
	switch {
	case down:
		return nil, structs.NewError(structs.CodeUnavailable, "dial %s: connection refused", addr)
	case wrong:
		return &structs.RootKey{Meta: &structs.RootKeyMeta{KeyID: "another"}}, nil
	}
	p.ring.mu.Lock()
	defer p.ring.mu.Unlock()
	if k := p.ring.keys[id]; k != nil {
		return k, nil
	}
	return nil, structs.NewError(structs.CodeNotFound, "root key %s not found on %s", id, addr)
}

// key makes a key; commit writes its metadata to the state, as raft does
// once it is spread.
func key(id string) *structs.RootKey {
	return &structs.RootKey{Meta: &structs.RootKeyMeta{KeyID: id, State: structs.RootKeyStateActive,
		CreateTime: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}, Material: make([]byte, structs.RootKeyMaterialSize)}
}

func (c *cluster) commit(k *structs.RootKey) {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.index++
	_, err := c.store.UpsertRootKey(c.index, k.Meta.Copy(), nil)
	must.NoError(c.t, err)
}

// run starts Run until the test ends.
func (c *cluster) run() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.r.Run(ctx)
	}()
	c.t.Cleanup(func() {
		cancel()
		<-done
	})
}

// waitFor polls cond: what Run does between the clock's moves is not
// announced otherwise.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
