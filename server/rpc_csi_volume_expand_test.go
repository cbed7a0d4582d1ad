package server

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

const mib = int64(1 << 20)

// expandClient is node-1's client, running a controller and node instance
// of hostpath whose controller expands to what it is asked and asks for
// node expansion. Its NodeExpandVolume answers whether the volume is in
// use there (mounted), or fails with failWith.
type expandClient struct {
	mu       sync.Mutex
	mounted  bool
	failWith error
	calls    []structs.ClientCSINodeExpandVolumeRequest
}

func (c *expandClient) ControllerValidateVolume(_ *structs.ClientCSIControllerValidateVolumeRequest, reply *structs.ClientCSIControllerValidateVolumeResponse) error {
	reply.Confirmed = true
	return nil
}

func (c *expandClient) ControllerExpandVolume(args *structs.ClientCSIControllerExpandVolumeRequest, reply *structs.ClientCSIControllerExpandVolumeResponse) error {
	reply.CapacityBytes, reply.NodeExpansionRequired = args.CapacityMin, true
	return nil
}

func (c *expandClient) ControllerAttachVolume(_ *structs.ClientCSIControllerAttachVolumeRequest, _ *structs.ClientCSIControllerAttachVolumeResponse) error {
	return nil
}

func (c *expandClient) NodeExpandVolume(args *structs.ClientCSINodeExpandVolumeRequest, reply *structs.ClientCSINodeExpandVolumeResponse) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, *args)
	if c.failWith != nil {
		return c.failWith
	}
	reply.InUse = c.mounted
	if c.mounted {
		reply.CapacityBytes = args.CapacityMin
	}
	return nil
}

func (c *expandClient) set(mounted bool, failWith error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mounted, c.failWith = mounted, failWith
}

func (c *expandClient) nodeCalls() []structs.ClientCSINodeExpandVolumeRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]structs.ClientCSINodeExpandVolumeRequest{}, c.calls...)
}

// connectExpandClient registers node-1 (named node-1) with hostpath's
// controller and node instances offering EXPAND_VOLUME, and serves c on
// its session.
func connectExpandClient(t *testing.T, s *Server, c *expandClient) {
	t.Helper()
	pool := clientPool(t, "client", "ClientCSI", c)
	node := statetest.NodeWithPlugin("node-1", "hostpath", true, true, true)
	node.CSIControllerPlugins["hostpath"].ControllerInfo.SupportsExpand = true
	node.CSINodePlugins["hostpath"].NodeInfo.SupportsExpand = true
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	must.NoError(t, pool.Call(ctx, s.RPCAddr(), "Node.Register", &structs.NodeRegisterRequest{
		Node: node, WriteRequest: structs.WriteRequest{AuthToken: testNodeSecret}}, &structs.NodeUpdateResponse{}))
}

func storedVolume(t *testing.T, s *Server, id string) *structs.CSIVolume {
	t.Helper()
	vol, err := s.State().CSIVolumeByID(nil, structs.DefaultNamespace, id)
	must.NoError(t, err)
	must.NotNil(t, vol)
	return vol
}

// growTo registers volume data again with capacity_min size.
func growTo(t *testing.T, s *Server, size int64) error {
	t.Helper()
	vol := statetest.Volume("data", "hostpath")
	vol.RequestedCapacityMin = size
	return callAs(t, s, "", "CSIVolume.Register", &structs.CSIVolumeRegisterRequest{Volumes: []*structs.CSIVolume{vol}},
		&structs.CSIVolumeRegisterResponse{})
}

// TestCSIVolume_NodeExpansion walks a volume through the node expansions
// its plugin asks for: none pending while no node has it, finished by the
// publishing node; online on the node that has it; a node's failure
// recorded, reported and retried.
func TestCSIVolume_NodeExpansion(t *testing.T) {
	s := testServer(t, func(c *Config) { c.HeartbeatTTL = 10 * time.Minute })
	rec := &expandClient{}
	connectExpandClient(t, s, rec)
	must.NoError(t, growTo(t, s, mib))
	// A caller's NodeExpansion is the servers' to keep: dropped.
	other := statetest.Volume("other", "hostpath")
	other.NodeExpansion = &structs.CSIVolumeNodeExpansion{CapacityMin: 1}
	must.NoError(t, callAs(t, s, "", "CSIVolume.Register", &structs.CSIVolumeRegisterRequest{Volumes: []*structs.CSIVolume{other}},
		&structs.CSIVolumeRegisterResponse{}))
	must.Nil(t, storedVolume(t, s, "other").NodeExpansion)

	// No node has it: the controller's capacity at once, the node
	// expansion pending for the next publish.
	must.NoError(t, growTo(t, s, 4*mib))
	vol := storedVolume(t, s, "data")
	must.Eq(t, 4*mib, vol.Capacity)
	must.Eq(t, &structs.CSIVolumeNodeExpansion{CapacityMin: 4 * mib, Capacity: 4 * mib}, vol.NodeExpansion)
	must.SliceEmpty(t, rec.nodeCalls(), must.Sprint("no claim: no node to ask"))

	// An alloc on node-1 claims it and publishes it; its client asks for
	// the pending expansion, with the node's secret.
	placeAllocs(t, s, volumeAlloc("a1", "node-1", structs.DefaultNamespace, 0, "data", false),
		volumeAlloc("a2", "node-1", structs.DefaultNamespace, 1, "data", false))
	must.NoError(t, callAs(t, s, "", "CSIVolume.Claim", takeClaim("data", structs.DefaultNamespace, "a1", ""), &structs.CSIVolumeClaimResponse{}))
	nodeExpand := func(alloc string) (*structs.CSIVolumeNodeExpandResponse, error) {
		var reply structs.CSIVolumeNodeExpandResponse
		err := callAs(t, s, testNodeSecret, "CSIVolume.NodeExpand", &structs.CSIVolumeNodeExpandRequest{VolumeID: "data",
			AllocationID: alloc, NodeID: "node-1"}, &reply)
		return &reply, err
	}
	_, err := nodeExpand("a2")
	must.ErrorIs(t, err, structs.ErrConflict)
	must.ErrorContains(t, err, `volume "data": alloc a2 holds no claim on it on node node-1`)

	rec.set(false, nil) // unmounted meanwhile: still pending
	got, err := nodeExpand("a1")
	must.NoError(t, err)
	must.False(t, got.Expanded)
	must.NotNil(t, storedVolume(t, s, "data").NodeExpansion)

	rec.set(true, nil)
	got, err = nodeExpand("a1")
	must.NoError(t, err)
	must.True(t, got.Expanded)
	must.Eq(t, 4*mib, got.Capacity)
	vol = storedVolume(t, s, "data")
	must.Nil(t, vol.NodeExpansion)
	must.Eq(t, 4*mib, vol.Capacity)
	calls := rec.nodeCalls()
	must.SliceLen(t, 2, calls)
	must.Eq(t, structs.ClientCSINodeExpandVolumeRequest{PluginID: "hostpath", NodeID: "node-1", VolumeID: "data",
		ExternalVolumeID: "ext-data", CapacityMin: 4 * mib}, calls[1])

	got, err = nodeExpand("a1")
	must.NoError(t, err)
	must.False(t, got.Expanded, must.Sprint("nothing pending: nothing to do"))
	must.SliceLen(t, 2, rec.nodeCalls())

	// Online: the node that has it expands it in the register.
	must.NoError(t, growTo(t, s, 8*mib))
	vol = storedVolume(t, s, "data")
	must.Eq(t, 8*mib, vol.Capacity)
	must.Nil(t, vol.NodeExpansion)
	calls = rec.nodeCalls()
	must.SliceLen(t, 3, calls)
	must.Eq(t, 8*mib, calls[2].CapacityMin)

	// The node fails: the error names the volume and the node and says
	// what to do; the capacity stays, the expansion pends with the error.
	rec.set(true, structs.NewError(structs.CodeUnavailable, "node node-1: volume \"data\": find plugin: plugin not running"))
	err = growTo(t, s, 16*mib)
	must.ErrorIs(t, err, structs.ErrUnavailable)
	for _, part := range []string{`volume "data": plugin "hostpath" grew it to 16777216 bytes, but NodeExpandVolume failed on 1 of 1 nodes: node node-1: `,
		"plugin not running", "keeps its capacity at 8388608 bytes", "run the create or register again"} {
		must.ErrorContains(t, err, part)
	}
	vol = storedVolume(t, s, "data")
	must.Eq(t, 8*mib, vol.Capacity)
	must.Eq(t, 16*mib, vol.RequestedCapacityMin)
	must.NotNil(t, vol.NodeExpansion)
	must.Eq(t, 16*mib, vol.NodeExpansion.CapacityMin)
	must.StrContains(t, vol.NodeExpansion.LastError, "node node-1: ")

	// The publishing node's retry fails too, and says so.
	_, err = nodeExpand("a1")
	must.ErrorIs(t, err, structs.ErrUnavailable)
	must.ErrorContains(t, err, "its capacity stays 8388608 bytes with the node expansion pending")

	// Registering again, the same capacity_min, retries it.
	rec.set(true, nil)
	must.NoError(t, growTo(t, s, 16*mib))
	vol = storedVolume(t, s, "data")
	must.Eq(t, 16*mib, vol.Capacity)
	must.Nil(t, vol.NodeExpansion)

	// Leaving capacity out keeps everything.
	must.NoError(t, growTo(t, s, 0))
	vol = storedVolume(t, s, "data")
	must.Eq(t, 16*mib, vol.Capacity)
	must.Nil(t, vol.NodeExpansion)
}
