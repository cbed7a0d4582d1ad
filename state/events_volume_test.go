package state_test

import (
	"fmt"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// A commit that writes many volumes of a few plugins joins each volume's
// event with its own plugin's health, as a read of that volume shows it:
// the plugins are denormalized once per commit, never mixed up.
func TestStateStore_Events_ManyVolumesJoinTheirPlugin(t *testing.T) {
	s, rec := recordedStore(t)
	const other = "other"
	// hostpath: 4 node instances, 3 of them healthy on a ready node (n4
	// says unhealthy), 1 healthy controller, and n5's instance healthy on
	// a node gone down. other: one unhealthy node instance, so its
	// volumes are not schedulable.
	upsertNodes(t, s, 10,
		statetest.NodeWithPlugin("n1", plugID, true, true, true),
		statetest.NodeWithPlugin("n2", plugID, false, true, true),
		statetest.NodeWithPlugin("n3", plugID, false, true, true),
		statetest.NodeWithPlugin("n4", plugID, false, true, false),
		statetest.NodeWithPlugin("n5", plugID, false, true, true),
		statetest.NodeWithPlugin("n6", other, false, true, false),
	)
	must.NoError(t, s.UpdateNodeStatus(11, "n5", structs.NodeStatusDown, 100, nil))

	const size = 40
	vols := make([]*structs.CSIVolume, size)
	for i := range vols {
		p := plugID
		if i%4 == 3 {
			p = other
		}
		vols[i] = statetest.Volume(fmt.Sprintf("vol-%03d", i), p)
	}
	_, err := s.UpsertRootKey(12, &structs.RootKeyMeta{KeyID: "k2", State: structs.RootKeyStateActive}, nil)
	must.NoError(t, err)
	rec.take()

	check := func(evs []structs.Event, typ string, index uint64) {
		t.Helper()
		must.SliceLen(t, size, evs, must.Sprintf("%v", kinds(evs)))
		for i, ev := range evs {
			must.Eq(t, kind{structs.TopicCSIVolume, typ, vols[i].ID, index}, kinds(evs[i : i+1])[0])
			got := ev.Payload.Volume
			must.NotNil(t, got)
			want, err := s.CSIVolumeByID(nil, structs.DefaultNamespace, vols[i].ID) // denormalized
			must.NoError(t, err)
			must.Eq(t, want.Sanitized(), got, must.Sprintf("%s: as a read of it shows it", got.ID))
			if vols[i].PluginID == plugID {
				must.EqOp(t, 3, got.NodesHealthy, must.Sprint(got.ID))
				must.EqOp(t, 5, got.NodesExpected, must.Sprint(got.ID))
				must.EqOp(t, 1, got.ControllersHealthy, must.Sprint(got.ID))
				must.EqOp(t, 1, got.ControllersExpected, must.Sprint(got.ID))
				must.True(t, got.Schedulable, must.Sprint(got.ID))
				must.EqOp(t, statetest.Provider, got.Provider, must.Sprint(got.ID))
			} else {
				must.EqOp(t, 0, got.NodesHealthy, must.Sprint(got.ID))
				must.EqOp(t, 1, got.NodesExpected, must.Sprint(got.ID))
				must.EqOp(t, 0, got.ControllersExpected, must.Sprint(got.ID))
				must.False(t, got.Schedulable, must.Sprint(got.ID))
				must.EqOp(t, statetest.Provider, got.Provider, must.Sprint(got.ID))
			}
		}
	}

	// One batch register: VolumeRegistered for each.
	upsertVolumes(t, s, 13, vols...)
	check(rec.take(), structs.EventVolumeRegistered, 13)

	// One key rotation that moves every volume's secrets: VolumeUpdated
	// for each.
	rekey := make([]*structs.CSIVolumeRekey, size)
	for i, v := range vols {
		rekey[i] = &structs.CSIVolumeRekey{Namespace: structs.DefaultNamespace, ID: v.ID, ModifyIndex: 13,
			EncryptedSecrets: &structs.EncryptedSecrets{KeyID: "k2", Ciphertext: []byte("sealed")}}
	}
	n, err := s.UpsertRootKey(14, nil, rekey)
	must.NoError(t, err)
	must.EqOp(t, size, n)
	check(rec.take(), structs.EventVolumeUpdated, 14)
}

// BenchmarkStateStore_Events_VolumeBatch measures what building the
// events costs a batch register of 1,000 volumes of one plugin that runs
// 50 node instances (the cost of a key rotation that rewrites them is
// the same join), without a sink and with one. The volumes are
// deregistered between registers, outside the timer and without a sink.
func BenchmarkStateStore_Events_VolumeBatch(b *testing.B) {
	const size, instances = 1000, 50
	for _, withSink := range []bool{false, true} {
		b.Run(fmt.Sprintf("sink=%v", withSink), func(b *testing.B) {
			s := statetest.New(b)
			sink := &discardSink{}
			for i := 0; i < instances; i++ {
				upsertNodes(b, s, 1, statetest.NodeWithPlugin(fmt.Sprintf("n%02d", i), plugID, false, true, true))
			}
			vols := make([]*structs.CSIVolume, size)
			ids := make([]string, size)
			for i := range vols {
				vols[i] = statetest.Volume(fmt.Sprintf("vol-%04d", i), plugID)
				ids[i] = vols[i].ID
			}
			index := uint64(10)
			b.ReportAllocs()
			b.ResetTimer()
			for n := 0; n < b.N; n++ {
				if withSink {
					s.SetEventSink(sink)
				}
				index++
				if err := s.UpsertCSIVolume(index, vols); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				s.SetEventSink(nil)
				index++
				if err := s.CSIVolumeDeregister(index, structs.DefaultNamespace, ids, false); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "volumes/s")
			if withSink && sink.events != b.N*size {
				b.Fatalf("%d events for %d volumes registered", sink.events, b.N*size)
			}
		})
	}
}

var _ state.EventSink = (*discardSink)(nil)
