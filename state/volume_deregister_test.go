package state_test

import (
	"testing"

	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
	"github.com/shoenig/test/must"
)

func TestStateStore_CSIVolumeDeregister(t *testing.T) {
	stop := func(s *state.StateStore, index uint64, id string) {
		a := statetest.Alloc(id, "n1")
		a.DesiredStatus = structs.AllocDesiredStatusStop
		a.ClientStatus = structs.AllocClientStatusComplete
		must.NoError(t, s.UpsertAllocs(index, []*structs.Allocation{a}))
	}
	cases := []struct {
		name      string
		setup     func(t *testing.T, s *state.StateStore) // at indexes 11..19
		namespace string
		ids       []string
		force     bool
		want      error
		remaining []string
	}{
		{name: "unclaimed", ids: []string{"data"}, remaining: []string{"default/logs"}},
		{name: "both", ids: []string{"data", "logs"}, remaining: []string{}},
		{name: "duplicate id", ids: []string{"data", "data"}, remaining: []string{"default/logs"}},
		{name: "no ids", ids: nil, want: structs.ErrBadRequest, remaining: []string{"default/data", "default/logs"}},
		{name: "unknown volume deletes nothing", ids: []string{"data", "nope"}, want: structs.ErrNotFound, remaining: []string{"default/data", "default/logs"}},
		{name: "other namespace", namespace: "prod", ids: []string{"data"}, want: structs.ErrNotFound, remaining: []string{"default/data", "default/logs"}},
		{
			name: "write claim refused",
			setup: func(t *testing.T, s *state.StateStore) {
				must.NoError(t, claimOne(s, 11, claimReq("data", "a1", structs.CSIVolumeClaimWrite)))
			},
			ids: []string{"logs", "data"}, want: structs.ErrConflict, remaining: []string{"default/data", "default/logs"},
		},
		{
			name: "read claim refused",
			setup: func(t *testing.T, s *state.StateStore) {
				must.NoError(t, claimOne(s, 11, claimReq("data", "a1", structs.CSIVolumeClaimRead)))
			},
			ids: []string{"data"}, want: structs.ErrConflict, remaining: []string{"default/data", "default/logs"},
		},
		{
			name: "past claim refused",
			setup: func(t *testing.T, s *state.StateStore) {
				must.NoError(t, claimOne(s, 11, claimReq("data", "a1", structs.CSIVolumeClaimWrite)))
				must.NoError(t, claimOne(s, 12, releaseReq("data", "a1", structs.CSIVolumeClaimStateNodeDetached)))
				stop(s, 13, "a1")
			},
			ids: []string{"data"}, want: structs.ErrConflict, remaining: []string{"default/data", "default/logs"},
		},
		{
			name: "force with a live alloc refused",
			setup: func(t *testing.T, s *state.StateStore) {
				must.NoError(t, claimOne(s, 11, claimReq("data", "a1", structs.CSIVolumeClaimWrite)))
			},
			ids: []string{"data"}, force: true, want: structs.ErrConflict, remaining: []string{"default/data", "default/logs"},
		},
		{
			name: "force with a stopped alloc",
			setup: func(t *testing.T, s *state.StateStore) {
				must.NoError(t, claimOne(s, 11, claimReq("data", "a1", structs.CSIVolumeClaimWrite)))
				stop(s, 12, "a1")
			},
			ids: []string{"data"}, force: true, remaining: []string{"default/logs"},
		},
		{
			name: "force with a past claim of a stopped alloc",
			setup: func(t *testing.T, s *state.StateStore) {
				must.NoError(t, claimOne(s, 11, claimReq("data", "a1", structs.CSIVolumeClaimWrite)))
				must.NoError(t, claimOne(s, 12, releaseReq("data", "a1", structs.CSIVolumeClaimStateUnpublishing)))
				stop(s, 13, "a1")
			},
			ids: []string{"data"}, force: true, remaining: []string{"default/logs"},
		},
		{
			name:  "force not needed when unclaimed",
			ids:   []string{"data"},
			force: true, remaining: []string{"default/logs"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := volumeWorld(t)
			upsertVolumes(t, s, 10, statetest.Volume("data", plugID), statetest.Volume("logs", plugID))
			if tc.setup != nil {
				tc.setup(t, s)
			}
			before := mustIndex(t, s, state.TableCSIVolumes)

			ns := tc.namespace
			if ns == "" {
				ns = structs.DefaultNamespace
			}
			mustCode(t, tc.want, s.CSIVolumeDeregister(20, ns, tc.ids, tc.force))

			must.Eq(t, tc.remaining, volumeIDs(collect[structs.CSIVolume](t)(s.CSIVolumes(nil))))
			if tc.want != nil {
				must.Eq(t, before, mustIndex(t, s, state.TableCSIVolumes))
			} else {
				must.Eq(t, uint64(20), mustIndex(t, s, state.TableCSIVolumes))
			}
		})
	}
}

func TestStateStore_CSIVolumeDeregister_ForceWhenAllocIsGone(t *testing.T) {
	vol := statetest.Volume("data", plugID)
	vol.WriteClaims = map[string]*structs.CSIVolumeClaim{
		"gone": {AllocID: "gone", NodeID: "n1", Mode: structs.CSIVolumeClaimWrite},
	}
	vol.AccessMode = structs.CSIVolumeAccessModeSingleNodeWriter
	vol.AttachmentMode = structs.CSIVolumeAttachmentModeFilesystem
	s := restored(t, map[string][]any{
		state.TableCSIPlugins: {structs.NewCSIPlugin(plugID, 1)},
		state.TableCSIVolumes: {vol},
	})

	mustCode(t, structs.ErrConflict, s.CSIVolumeDeregister(10, structs.DefaultNamespace, []string{"data"}, false))
	must.NoError(t, s.CSIVolumeDeregister(11, structs.DefaultNamespace, []string{"data"}, true))
	got, err := s.CSIVolumeByID(nil, structs.DefaultNamespace, "data")
	must.NoError(t, err)
	must.Nil(t, got)
}
