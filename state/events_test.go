package state_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// recorder is an EventSink that keeps what it is given.
type recorder struct {
	mu      sync.Mutex
	indexes []uint64 // of every Publish, events or not
	events  []structs.Event
}

var _ state.EventSink = (*recorder)(nil)

func (r *recorder) Publish(index uint64, events []structs.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.indexes = append(r.indexes, index)
	r.events = append(r.events, events...)
}

// take returns the events recorded since the last take.
func (r *recorder) take() []structs.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events, r.indexes = nil, nil
	return out
}

func recordedStore(t *testing.T) (*state.StateStore, *recorder) {
	s := statetest.New(t)
	rec := &recorder{}
	s.SetEventSink(rec)
	return s, rec
}

// kinds is each event's (topic, type, key, index), for comparing.
type kind struct {
	Topic structs.EventTopic
	Type  string
	Key   string
	Index uint64
}

func kinds(evs []structs.Event) []kind {
	out := make([]kind, len(evs))
	for i, e := range evs {
		out[i] = kind{e.Topic, e.Type, e.Key, e.Index}
	}
	return out
}

func TestStateStore_Events_EachWriteAtItsRaftIndex(t *testing.T) {
	s, rec := recordedStore(t)

	upsertNodes(t, s, 10, statetest.NodeWithPlugin("n1", plugID, false, true, true))
	evs := rec.take()
	must.Eq(t, []kind{
		{structs.TopicNode, structs.EventNodeRegistered, "n1", 10},
		{structs.TopicCSIPlugin, structs.EventPluginUpdated, plugID, 10},
	}, kinds(evs))
	must.EqOp(t, 1, evs[1].Payload.Plugin.NodesHealthy, must.Sprint("its counts, as a read shows them"))

	upsertVolumes(t, s, 11, statetest.Volume("data", plugID))
	evs = rec.take()
	must.Eq(t, []kind{{structs.TopicCSIVolume, structs.EventVolumeRegistered, "data", 11}}, kinds(evs))
	must.EqOp(t, structs.DefaultNamespace, evs[0].Namespace)
	must.EqOp(t, "data", evs[0].Payload.Volume.ID)
	must.True(t, evs[0].Payload.Volume.Schedulable, must.Sprint("joined with its plugin, as a read shows it"))

	must.NoError(t, s.UpsertJob(12, statetest.Job("web")))
	upsertAllocs(t, s, 13, statetest.Alloc("a1", "n1"))
	evs = rec.take()
	must.Eq(t, []kind{
		{structs.TopicJob, structs.EventJobRegistered, "web", 12},
		{structs.TopicAllocation, structs.EventAllocationCreated, "a1", 13},
	}, kinds(evs))

	done := statetest.Alloc("a1", "n1")
	done.ClientStatus = structs.AllocClientStatusComplete
	must.NoError(t, s.UpdateAllocsFromClient(14, []*structs.Allocation{done}, time.Unix(100, 0)))
	evs = rec.take()
	must.Eq(t, []kind{{structs.TopicAllocation, structs.EventAllocationUpdated, "a1", 14}}, kinds(evs))
	must.EqOp(t, structs.AllocClientStatusComplete, evs[0].Payload.Allocation.ClientStatus)

	must.NoError(t, s.UpdateNodeStatus(15, "n1", structs.NodeStatusDown, 100, nil))
	evs = rec.take()
	must.Eq(t, []kind{
		{structs.TopicNode, structs.EventNodeStatusUpdated, "n1", 15},
		{structs.TopicCSIPlugin, structs.EventPluginUpdated, plugID, 15},
	}, kinds(evs))
	must.EqOp(t, 0, evs[1].Payload.Plugin.NodesHealthy, must.Sprint("the node down takes its instance out of the healthy count"))

	must.NoError(t, s.UpdateNodeEligibility(16, &structs.NodeUpdateEligibilityRequest{NodeID: "n1",
		Eligibility: structs.NodeSchedulingIneligible}))
	must.Eq(t, []kind{{structs.TopicNode, structs.EventNodeEligibilityUpdated, "n1", 16}}, kinds(rec.take()))

	must.NoError(t, s.StopJob(17, structs.DefaultNamespace, "web", false, time.Unix(200, 0)))
	evs = rec.take()
	must.SliceContains(t, kinds(evs), kind{structs.TopicJob, structs.EventJobStopped, "web", 17})

	must.NoError(t, s.CSIVolumeDeregister(18, structs.DefaultNamespace, []string{"data"}, false))
	must.Eq(t, []kind{{structs.TopicCSIVolume, structs.EventVolumeDeregistered, "data", 18}}, kinds(rec.take()))

	must.NoError(t, s.DeleteNode(19, []string{"n1"}))
	must.Eq(t, []kind{
		{structs.TopicNode, structs.EventNodeDeregistered, "n1", 19},
		{structs.TopicCSIPlugin, structs.EventPluginDeleted, plugID, 19},
	}, kinds(rec.take()))
}

func TestStateStore_Events_ClaimLifeInOrder(t *testing.T) {
	s, rec := recordedStore(t)
	upsertNodes(t, s, 10, statetest.NodeWithPlugin("n1", plugID, false, true, true))
	upsertVolumes(t, s, 11, statetest.Volume("data", plugID))
	upsertAllocs(t, s, 12, statetest.Alloc("a1", "n1"))
	rec.take()

	steps := []struct {
		index uint64
		req   structs.CSIVolumeClaimRequest
		typ   string
	}{
		{20, claimReq("data", "a1", structs.CSIVolumeClaimWrite), structs.EventClaimTaken},
		{21, releaseReq("data", "a1", structs.CSIVolumeClaimStateUnpublishing), structs.EventClaimUnpublishing},
		{22, withError(releaseReq("data", "a1", structs.CSIVolumeClaimStateUnpublishing), "node n1 unreachable"), structs.EventClaimReleaseRetry},
		{23, releaseReq("data", "a1", structs.CSIVolumeClaimStateNodeDetached), structs.EventClaimNodeDetached},
		{24, releaseReq("data", "a1", structs.CSIVolumeClaimStateControllerDetached), structs.EventClaimControllerDetached},
		{25, releaseReq("data", "a1", structs.CSIVolumeClaimStateFreed), structs.EventClaimFreed},
		{26, releaseReq("data", "a1", structs.CSIVolumeClaimStateFreed), ""}, // gone already: nothing written
	}
	for _, st := range steps {
		must.NoError(t, claimOne(s, st.index, st.req))
		evs := rec.take()
		if st.typ == "" {
			must.SliceEmpty(t, evs)
			continue
		}
		must.Eq(t, []kind{{structs.TopicCSIVolume, st.typ, "data", st.index}}, kinds(evs), must.Sprintf("index %d", st.index))
		c := evs[0].Payload.Claim
		must.NotNil(t, c)
		must.Nil(t, evs[0].Payload.Volume)
		must.EqOp(t, "data", c.VolumeID)
		must.EqOp(t, structs.DefaultNamespace, c.Namespace)
		must.EqOp(t, plugID, c.PluginID)
		must.EqOp(t, "a1", c.AllocID)
		must.EqOp(t, "n1", c.NodeID)
		must.EqOp(t, st.req.State, c.State)
		if st.typ == structs.EventClaimReleaseRetry {
			must.EqOp(t, 1, c.Attempts)
			must.EqOp(t, "node n1 unreachable", c.LastError)
			must.Eq(t, time.Unix(300, 0).UTC(), c.NextAttemptAt.UTC())
		}
	}
}

func withError(req structs.CSIVolumeClaimRequest, msg string) structs.CSIVolumeClaimRequest {
	req.LastError, req.NextAttemptAt = msg, time.Unix(300, 0)
	return req
}

// A claim batch that moves claims of several volumes and allocs reports
// each claim, volume by volume in the order written, allocs by ID.
func TestStateStore_Events_ClaimBatchReportsEveryClaim(t *testing.T) {
	s, rec := recordedStore(t)
	upsertNodes(t, s, 10, statetest.NodeWithPlugin("n1", plugID, false, true, true))
	v1, v2 := statetest.Volume("v1", plugID), statetest.Volume("v2", plugID)
	v2.RequestedCapabilities[0].AccessMode = structs.CSIVolumeAccessModeMultiNodeReader
	upsertVolumes(t, s, 11, v1, v2)
	upsertAllocs(t, s, 12, statetest.Alloc("a2", "n1"), statetest.Alloc("a1", "n1"))
	rec.take()

	errs := s.CSIVolumeClaimBatch(20, []structs.CSIVolumeClaimRequest{
		claimReq("v2", "a2", structs.CSIVolumeClaimRead),
		claimReq("v1", "a1", structs.CSIVolumeClaimWrite),
		claimReq("v2", "a1", structs.CSIVolumeClaimRead),
	})
	for _, err := range errs {
		must.NoError(t, err)
	}
	evs := rec.take()
	must.Eq(t, []kind{
		{structs.TopicCSIVolume, structs.EventClaimTaken, "v1", 20},
		{structs.TopicCSIVolume, structs.EventClaimTaken, "v2", 20},
		{structs.TopicCSIVolume, structs.EventClaimTaken, "v2", 20},
	}, kinds(evs))
	must.Eq(t, []string{"a1", "a1", "a2"}, []string{evs[0].Payload.Claim.AllocID, evs[1].Payload.Claim.AllocID, evs[2].Payload.Claim.AllocID})
}

// No payload carries a volume's secrets (clear or sealed), its mount
// flags, or a node's secret hash, in JSON (the HTTP API) or msgpack (the
// RPC that carries events to the HTTP API).
func TestStateStore_Events_NoSecretInAnyPayload(t *testing.T) {
	s, rec := recordedStore(t)
	n := statetest.NodeWithPlugin("n1", plugID, false, true, true)
	n.SecretHash = "node-secret-hash-XYZ"
	upsertNodes(t, s, 10, n)
	vol := statetest.Volume("data", plugID)
	vol.Secrets = structs.CSISecrets{"token": "volume-secret-XYZ"}
	vol.EncryptedSecrets = &structs.EncryptedSecrets{KeyID: "k1", Ciphertext: []byte("sealed-secret-XYZ")}
	vol.MountOptions = &structs.CSIMountOptions{FSType: "ext4", MountFlags: []string{"password=flag-secret-XYZ"}}
	upsertVolumes(t, s, 11, vol)
	upsertAllocs(t, s, 12, statetest.Alloc("a1", "n1"))
	must.NoError(t, claimOne(s, 13, claimReq("data", "a1", structs.CSIVolumeClaimWrite)))
	must.NoError(t, s.UpdateNodeStatus(14, "n1", structs.NodeStatusDown, 100, nil))
	must.NoError(t, s.CSIVolumeDeregister(15, structs.DefaultNamespace, []string{"data"}, true))

	evs := rec.take()
	must.SliceLen(t, 10, evs, must.Sprintf("%v", kinds(evs))) // the node down loses a1, releases its claim and moves its plugin's counts
	js, err := json.Marshal(evs)
	must.NoError(t, err)
	mp, err := structs.Encode(0, evs)
	must.NoError(t, err)
	for _, enc := range []string{string(js), string(mp)} {
		for _, secret := range []string{"node-secret-hash", "volume-secret", "sealed-secret", "flag-secret"} {
			must.StrNotContains(t, enc, secret)
		}
	}
	// The stored rows keep them: the events carry copies.
	stored, err := s.NodeByID(nil, "n1")
	must.NoError(t, err)
	must.EqOp(t, "node-secret-hash-XYZ", stored.SecretHash)
}

// An allocation's payload comes without its job; the stored row keeps it.
func TestStateStore_Events_AllocWithoutItsJob(t *testing.T) {
	s, rec := recordedStore(t)
	a := statetest.Alloc("a1", "n1")
	a.Job = statetest.Job(statetest.JobID)
	upsertAllocs(t, s, 10, a)
	evs := rec.take()
	must.SliceLen(t, 1, evs)
	must.Nil(t, evs[0].Payload.Allocation.Job)
	stored, err := s.AllocByID(nil, "a1")
	must.NoError(t, err)
	must.NotNil(t, stored.Job)
}

// ACL and keyring writes, and refused writes, publish no events.
func TestStateStore_Events_NoneForACLKeyringOrRefusedWrites(t *testing.T) {
	s, rec := recordedStore(t)
	must.NoError(t, s.UpsertACLPolicies(10, []*structs.ACLPolicy{{Name: "readers", Rules: `node { policy = "read" }`}}))
	must.ErrorIs(t, s.UpdateNodeStatus(12, "ghost", structs.NodeStatusDown, 100, nil), structs.ErrNotFound)
	_, err := s.UpsertRootKey(13, &structs.RootKeyMeta{KeyID: "k1", State: structs.RootKeyStateActive}, nil)
	must.NoError(t, err)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	must.SliceEmpty(t, rec.events)
	must.Eq(t, []uint64{13}, rec.indexes, must.Sprint("ACL writes do not publish, nor do refused ones; a key alone publishes no event"))
}

// A root key rotation that moves a volume's secrets onto the new key
// changes the volume's row (its ModifyIndex): VolumeUpdated, without the
// secrets.
func TestStateStore_Events_RekeyedVolumeIsUpdated(t *testing.T) {
	s, rec := recordedStore(t)
	upsertNodes(t, s, 10, statetest.NodeWithPlugin("n1", plugID, false, true, true))
	upsertVolumes(t, s, 11, statetest.Volume("data", plugID))
	_, err := s.UpsertRootKey(12, &structs.RootKeyMeta{KeyID: "k2", State: structs.RootKeyStateActive}, nil)
	must.NoError(t, err)
	rec.take()

	n, err := s.UpsertRootKey(13, nil, []*structs.CSIVolumeRekey{{Namespace: structs.DefaultNamespace, ID: "data",
		ModifyIndex: 11, EncryptedSecrets: &structs.EncryptedSecrets{KeyID: "k2", Ciphertext: []byte("sealed-secret-XYZ")}}})
	must.NoError(t, err)
	must.EqOp(t, 1, n)
	evs := rec.take()
	must.Eq(t, []kind{{structs.TopicCSIVolume, structs.EventVolumeUpdated, "data", 13}}, kinds(evs))
	must.EqOp(t, 13, evs[0].Payload.Volume.ModifyIndex)
	must.Nil(t, evs[0].Payload.Volume.EncryptedSecrets)
}

type discardSink struct{ events int }

func (d *discardSink) Publish(_ uint64, events []structs.Event) { d.events += len(events) }

// BenchmarkStateStore_Events measures what building the events costs a
// write: 64 claims taken then freed per pair of transactions, without a
// sink and with one.
func BenchmarkStateStore_Events(b *testing.B) {
	for _, withSink := range []bool{false, true} {
		b.Run(fmt.Sprintf("sink=%v", withSink), func(b *testing.B) {
			s := statetest.New(b)
			sink := &discardSink{}
			upsertNodes(b, s, 1, statetest.NodeWithPlugin("n1", plugID, false, true, true))
			const size = 64
			allocs := make([]*structs.Allocation, size)
			volumes := make([]*structs.CSIVolume, size)
			for i := range volumes {
				allocs[i] = statetest.Alloc(fmt.Sprintf("alloc-%03d", i), "n1")
				volumes[i] = statetest.Volume(fmt.Sprintf("vol-%03d", i), plugID)
			}
			upsertAllocs(b, s, 2, allocs...)
			upsertVolumes(b, s, 3, volumes...)
			take, free := make([]structs.CSIVolumeClaimRequest, size), make([]structs.CSIVolumeClaimRequest, size)
			for i := range take {
				take[i] = claimReq(volumes[i].ID, allocs[i].ID, structs.CSIVolumeClaimWrite)
				free[i] = releaseReq(volumes[i].ID, allocs[i].ID, structs.CSIVolumeClaimStateFreed)
			}
			if withSink {
				s.SetEventSink(sink)
			}
			index := uint64(10)
			b.ReportAllocs()
			b.ResetTimer()
			for n := 0; n < b.N; n++ {
				for _, reqs := range [][]structs.CSIVolumeClaimRequest{take, free} {
					index++
					for _, err := range s.CSIVolumeClaimBatch(index, reqs) {
						if err != nil {
							b.Fatal(err)
						}
					}
				}
			}
			b.ReportMetric(float64(b.N*2*size)/b.Elapsed().Seconds(), "claims/s")
			if withSink && sink.events != b.N*2*size {
				b.Fatalf("%d events for %d claim moves", sink.events, b.N*2*size)
			}
		})
	}
}
