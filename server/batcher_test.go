package server

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"

	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// TestBatcher_CoalescesWhileOneIsInFlight: the claims that arrive
// while a batch is being written go out together in the next one (at most
// maxBatch an entry), each caller gets its own claim's result, and a
// raft error answers the whole batch it hit.
func TestBatcher_CoalescesWhileOneIsInFlight(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var sizes []int
	index := uint64(0)
	b := &batcher[structs.CSIVolumeClaimRequest]{write: func(claims []structs.CSIVolumeClaimRequest) ([]error, uint64, error) {
		mu.Lock()
		sizes = append(sizes, len(claims))
		first := len(sizes) == 1
		index++
		idx := index
		mu.Unlock()
		if first {
			<-release // the first entry is slow to commit
		}
		if claims[0].VolumeID == "raft-fails" {
			return nil, 0, errors.New("leadership lost")
		}
		errs := make([]error, len(claims))
		for i, c := range claims {
			if c.AllocationID == "refused" {
				errs[i] = structs.NewError(structs.CodeConflict, "volume %q is held", c.VolumeID)
			}
		}
		return errs, idx, nil
	}}

	type result struct {
		index uint64
		err   error
	}
	firstDone := make(chan result, 1)
	go func() {
		idx, err := b.apply(structs.CSIVolumeClaimRequest{VolumeID: "v0", AllocationID: "a0"})
		firstDone <- result{idx, err}
	}()
	waitQueued := func(n int) {
		for {
			mu.Lock()
			started := len(sizes) > 0
			mu.Unlock()
			b.mu.Lock()
			queued := len(b.queue)
			b.mu.Unlock()
			if started && queued >= n {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitQueued(0)

	n := maxBatch + 10
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			alloc := fmt.Sprintf("a%d", i+1)
			if i == 3 {
				alloc = "refused"
			}
			idx, err := b.apply(structs.CSIVolumeClaimRequest{VolumeID: fmt.Sprintf("v%d", i+1), AllocationID: alloc})
			results[i] = result{idx, err}
		}()
	}
	waitQueued(n)
	close(release)
	wg.Wait()
	r := <-firstDone
	must.NoError(t, r.err)
	must.EqOp(t, uint64(1), r.index)

	must.Eq(t, []int{1, maxBatch, 10}, sizes, must.Sprint("one entry for the first, then full batches of what queued behind it"))
	for i, r := range results {
		if i == 3 {
			must.ErrorIs(t, r.err, structs.ErrConflict, must.Sprint("a claim's own refusal reaches its caller alone"))
			continue
		}
		must.NoError(t, r.err)
		must.True(t, r.index == 2 || r.index == 3)
	}

	_, err := b.apply(structs.CSIVolumeClaimRequest{VolumeID: "raft-fails", AllocationID: "x"})
	must.ErrorContains(t, err, "leadership lost")
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return !b.running
	}), wait.Timeout(10*time.Second), wait.Gap(time.Millisecond)), must.Sprint("the flusher stops when the queue is empty"))
}

// entryLog holds a batcher's first entry until every other request of a
// test has queued behind it, so that they must share entries, and records
// the size of each entry the batcher writes.
type entryLog struct {
	mu      sync.Mutex
	sizes   []int
	indexes map[uint64]bool // the raft indexes of the entries
	release chan struct{}
}

// gateFirst wraps b's write with an entryLog; close its release to let
// the first entry commit.
func gateFirst[R any](b *batcher[R]) *entryLog {
	l := &entryLog{indexes: map[uint64]bool{}, release: make(chan struct{})}
	write := b.write
	b.write = func(reqs []R) ([]error, uint64, error) {
		l.mu.Lock()
		l.sizes = append(l.sizes, len(reqs))
		first := len(l.sizes) == 1
		l.mu.Unlock()
		if first {
			<-l.release
		}
		errs, index, err := write(reqs)
		l.mu.Lock()
		l.indexes[index] = true
		l.mu.Unlock()
		return errs, index, err
	}
	return l
}

// mustShare checks that the n requests went out in at most two entries
// (the first, then one of all that queued behind it: n is under
// maxBatch), and that the callers were answered with the indexes of
// those entries (answered).
func (l *entryLog) mustShare(t *testing.T, n int, answered map[uint64]bool) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	must.Between(t, 1, len(l.sizes), 2, must.Sprintf("entries of %v requests", l.sizes))
	sum := 0
	for _, size := range l.sizes {
		sum += size
	}
	must.EqOp(t, n, sum)
	must.MapLen(t, len(l.sizes), l.indexes, must.Sprint("one raft index an entry"))
	must.MapContainsKeys(t, l.indexes, slices.Collect(maps.Keys(answered)), must.Sprint("each caller answered with its entry's index"))
}

// releaseWhenQueued lets the first entry commit once n requests are in it
// or queued behind it (or when it fails, so that no call hangs).
func releaseWhenQueued[R any](t *testing.T, b *batcher[R], l *entryLog, n int) {
	t.Helper()
	defer close(l.release)
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(func() bool {
		l.mu.Lock()
		inFirst := 0
		if len(l.sizes) > 0 {
			inFirst = l.sizes[0]
		}
		l.mu.Unlock()
		b.mu.Lock()
		defer b.mu.Unlock()
		return inFirst > 0 && inFirst+len(b.queue) == n
	}), wait.Timeout(20*time.Second), wait.Gap(time.Millisecond)), must.Sprint("every request reaches the batcher"))
}

// batchNodes registers nodes node-1..node-n, each with its own secret, and
// places allocs of them per node; it returns the secrets by node.
func batchNodes(t *testing.T, s *Server, n, allocs int) map[string]string {
	t.Helper()
	secrets := map[string]string{}
	for i := range n {
		id := fmt.Sprintf("node-%d", i+1)
		secrets[id] = fmt.Sprintf("5ec2e7e5-0000-4000-8000-%012d", 100+i)
		must.NoError(t, callAs(t, s, secrets[id], "Node.Register", &structs.NodeRegisterRequest{
			Node: statetest.NodeWithPlugin(id, "hostpath", false, true, true)}, &structs.NodeUpdateResponse{}))
		var placed []*structs.Allocation
		for j := range allocs {
			placed = append(placed, statetest.Alloc(fmt.Sprintf("%s-alloc-%d", id, j), id))
		}
		placeAllocs(t, s, placed...)
	}
	return secrets
}

// answer is one concurrent call's index and error.
type answer struct {
	index uint64
	err   error
}

// callAll makes the calls concurrently, each with its node's secret, and
// returns their answers in order.
func callAll(s *Server, method string, tokens []string, args []authInfo, reply func() any) []answer {
	out := make([]answer, len(args))
	var wg sync.WaitGroup
	for i := range args {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args[i].SetAuthToken(tokens[i])
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			r := reply()
			out[i].err = s.RPC(ctx, method, args[i], r)
			switch r := r.(type) {
			case *structs.GenericResponse:
				out[i].index = r.Index
			case *structs.NodeUpdateResponse:
				out[i].index = r.Index
			}
		}()
	}
	wg.Wait()
	return out
}

// sendGated makes the calls at once through batcher b, whose first entry
// is held until every call has queued, and returns the answers. The last
// call must be refused as the caller's mistake, alone; the others
// applied. It returns the raft indexes the applied calls were answered
// with, for entryLog.mustShare.
func sendGated[R any](t *testing.T, s *Server, b *batcher[R], method string, tokens []string, args []authInfo,
	reply func() any) (*entryLog, []answer, map[uint64]bool) {
	t.Helper()
	entries := gateFirst(b)
	done := make(chan []answer, 1)
	go func() { done <- callAll(s, method, tokens, args, reply) }()
	releaseWhenQueued(t, b, entries, len(args))
	answers := <-done
	indexes := map[uint64]bool{}
	for i, a := range answers {
		if i == len(answers)-1 {
			must.ErrorIs(t, a.err, structs.ErrBadRequest)
			continue
		}
		must.NoError(t, a.err)
		indexes[a.index] = true
	}
	return entries, answers[:len(answers)-1], indexes
}

// TestBatcher_ClientWrites_ShareEntries: many concurrent alloc reports
// and fingerprint deltas from a few nodes, on a real one-server raft,
// are all applied, in fewer raft entries than requests, and one
// request's refusal reaches its caller alone.
func TestBatcher_ClientWrites_ShareEntries(t *testing.T) {
	const nodes, perNode = 3, 20
	s := testServer(t)
	secrets := batchNodes(t, s, nodes, perNode)

	t.Run("alloc updates", func(t *testing.T) {
		var tokens []string
		var args []authInfo
		for id, secret := range secrets {
			for j := range perNode {
				allocID := fmt.Sprintf("%s-alloc-%d", id, j)
				tokens = append(tokens, secret)
				args = append(args, &structs.AllocUpdateRequest{Allocs: []*structs.Allocation{{ID: allocID,
					ClientStatus: structs.AllocClientStatusRunning, ClientDescription: "report of " + allocID}}})
			}
		}
		// All or nothing: alloc 0 of node-1 is not written with it.
		tokens = append(tokens, secrets["node-1"])
		args = append(args, &structs.AllocUpdateRequest{Allocs: []*structs.Allocation{{ID: "node-1-alloc-0",
			ClientStatus: structs.AllocClientStatusFailed}, {ClientStatus: structs.AllocClientStatusFailed}}})

		entries, answers, indexes := sendGated(t, s, &s.allocUpdates, "Node.UpdateAlloc", tokens, args,
			func() any { return &structs.GenericResponse{} })
		for i, a := range answers {
			in := args[i].(*structs.AllocUpdateRequest).Allocs[0]
			got, err := s.State().AllocByID(nil, in.ID)
			must.NoError(t, err)
			must.EqOp(t, in.ClientDescription, got.ClientDescription)
			must.EqOp(t, structs.AllocClientStatusRunning, got.ClientStatus, must.Sprintf("alloc %s", in.ID))
			must.EqOp(t, a.index, got.ModifyIndex)
		}
		entries.mustShare(t, len(args), indexes)
	})

	t.Run("fingerprints", func(t *testing.T) {
		var tokens []string
		var args []authInfo
		for id, secret := range secrets {
			for j := range perNode {
				pluginID := fmt.Sprintf("%s-plugin-%d", id, j)
				tokens = append(tokens, secret)
				args = append(args, &structs.NodeFingerprintRequest{NodeID: id, Plugins: []*structs.NodePluginUpdate{
					{PluginID: pluginID, Node: statetest.NodeWithPlugin(id, pluginID, false, true, true).CSINodePlugins[pluginID]}}})
			}
		}
		// A node entry keyed by another plugin's ID: refused alone.
		tokens = append(tokens, secrets["node-2"])
		args = append(args, &structs.NodeFingerprintRequest{NodeID: "node-2", Plugins: []*structs.NodePluginUpdate{
			{PluginID: "refused", Node: statetest.NodeWithPlugin("node-2", "other", false, true, true).CSINodePlugins["other"]}}})

		entries, answers, indexes := sendGated(t, s, &s.fingerprints, "Node.UpdateFingerprint", tokens, args,
			func() any { return &structs.NodeUpdateResponse{} })
		for i := range answers {
			req := args[i].(*structs.NodeFingerprintRequest)
			plug, err := s.State().CSIPluginWithInstances(nil, req.Plugins[0].PluginID)
			must.NoError(t, err)
			must.NotNil(t, plug, must.Sprintf("plugin %s", req.Plugins[0].PluginID))
			must.MapContainsKey(t, plug.Nodes, req.NodeID)
		}
		for id := range secrets {
			node, err := s.State().NodeByID(nil, id)
			must.NoError(t, err)
			must.MapLen(t, perNode+1, node.CSINodePlugins, must.Sprintf("node %s: hostpath and every delta's plugin: %v", id, slices.Sorted(maps.Keys(node.CSINodePlugins))))
		}
		plug, err := s.State().CSIPluginByID(nil, "refused")
		must.NoError(t, err)
		must.Nil(t, plug)
		entries.mustShare(t, len(args), indexes)
	})
}
