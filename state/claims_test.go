package state_test

import (
	"fmt"
	"testing"

	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
	"github.com/shoenig/test/must"
)

func TestStateStore_CSIVolumeClaimBatch_Batch(t *testing.T) {
	cases := []struct {
		name      string
		reqs      []structs.CSIVolumeClaimRequest
		want      []error
		wantIndex uint64 // of csi_volumes afterwards
		wantWrite map[string][]string
	}{
		{
			name:      "all succeed",
			reqs:      []structs.CSIVolumeClaimRequest{claimReq("snw", "a1", write), claimReq("mnmw", "b1", write)},
			want:      []error{nil, nil},
			wantIndex: 10,
			wantWrite: map[string][]string{"snw": {"a1"}, "mnmw": {"b1"}},
		},
		{
			name: "a failed claim does not stop the others",
			reqs: []structs.CSIVolumeClaimRequest{
				claimReq("snw", "a1", write), claimReq("nope", "a1", write), claimReq("mnmw", "b1", write),
			},
			want:      []error{nil, structs.ErrNotFound, nil},
			wantIndex: 10,
			wantWrite: map[string][]string{"snw": {"a1"}, "mnmw": {"b1"}},
		},
		{
			name:      "claims in one batch see each other",
			reqs:      []structs.CSIVolumeClaimRequest{claimReq("snw", "a1", write), claimReq("snw", "a2", write)},
			want:      []error{nil, structs.ErrConflict},
			wantIndex: 10,
			wantWrite: map[string][]string{"snw": {"a1"}},
		},
		{
			name: "take and release in one batch",
			reqs: []structs.CSIVolumeClaimRequest{
				claimReq("snw", "a1", write), releaseReq("snw", "a1", freed), claimReq("snw", "b1", write),
			},
			want:      []error{nil, nil, nil},
			wantIndex: 10,
			wantWrite: map[string][]string{"snw": {"b1"}},
		},
		{
			name:      "every claim fails",
			reqs:      []structs.CSIVolumeClaimRequest{claimReq("snr", "a1", write), claimReq("snw", "ghost", write)},
			want:      []error{structs.ErrBadRequest, structs.ErrNotFound},
			wantIndex: 4,
			wantWrite: map[string][]string{"snr": nil, "snw": nil},
		},
		{
			name:      "empty batch",
			want:      []error{},
			wantIndex: 4,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := claimWorld(t)
			errs := s.CSIVolumeClaimBatch(10, tc.reqs)
			must.SliceLen(t, len(tc.want), errs)
			for i := range tc.want {
				mustCode(t, tc.want[i], errs[i])
			}
			must.Eq(t, tc.wantIndex, mustIndex(t, s, state.TableCSIVolumes))
			for id, writers := range tc.wantWrite {
				vol := mustVolume(t, s, id)
				must.MapLen(t, len(writers), vol.WriteClaims)
				for _, w := range writers {
					must.MapContainsKey(t, vol.WriteClaims, w)
				}
			}
		})
	}
}

func TestStateStore_CSIVolumeClaimBatch_Namespace(t *testing.T) {
	s := claimWorld(t)
	v := statetest.Volume("data", plugID)
	v.Namespace = "prod"
	upsertVolumes(t, s, 5, v)

	req := claimReq("data", "a1", write)
	mustCode(t, structs.ErrNotFound, claimOne(s, 10, req))

	req.Namespace = "prod"
	must.NoError(t, claimOne(s, 11, req))
	vol, err := s.CSIVolumeByID(nil, "prod", "data")
	must.NoError(t, err)
	must.MapContainsKey(t, vol.WriteClaims, "a1")
}

func TestStateStore_CSIVolumeClaimBatch_DoesNotChangeReadRows(t *testing.T) {
	s := claimWorld(t)
	before := mustVolume(t, s, "snw")
	raw := collect[structs.CSIVolume](t)(s.CSIVolumesByIDPrefix(nil, "default", "snw"))[0]
	must.NoError(t, claimOne(s, 10, claimReq("snw", "a1", write)))
	must.MapEmpty(t, raw.WriteClaims, must.Sprint("a row read before the write must not change"))
	must.MapEmpty(t, before.WriteClaims)
}

// BenchmarkStateStore_CSIVolumeClaimBatch measures claims applied 64 to a
// transaction against one per transaction.
func BenchmarkStateStore_CSIVolumeClaimBatch(b *testing.B) {
	for _, size := range []int{1, 64} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			s := statetest.New(b)
			upsertNodes(b, s, 1, statetest.NodeWithPlugin("n1", plugID, false, true, true))
			const vols = 256
			allocs := make([]*structs.Allocation, vols)
			volumes := make([]*structs.CSIVolume, vols)
			for i := range volumes {
				allocs[i] = statetest.Alloc(fmt.Sprintf("alloc-%03d", i), "n1")
				volumes[i] = statetest.Volume(fmt.Sprintf("vol-%03d", i), plugID)
			}
			upsertAllocs(b, s, 2, allocs...)
			upsertVolumes(b, s, 3, volumes...)

			reqs := make([]structs.CSIVolumeClaimRequest, size)
			index := uint64(10)
			b.ReportAllocs()
			b.ResetTimer()
			for n := 0; n < b.N; n++ {
				for i := range reqs {
					k := (n*size + i) % vols
					reqs[i] = claimReq(volumes[k].ID, allocs[k].ID, write)
				}
				index++
				for _, err := range s.CSIVolumeClaimBatch(index, reqs) {
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "claims/s")
		})
	}
}
