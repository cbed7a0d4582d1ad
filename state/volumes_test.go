package state_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
	"github.com/shoenig/test/must"
)

// volumeWorld is a store where plugins hostpath and other run on n1, with
// alloc a1 on n1.
func volumeWorld(t testing.TB) *state.StateStore {
	t.Helper()
	s := statetest.New(t)
	n1 := withPlugins("n1", false, plugID, "other")
	upsertNodes(t, s, 1, n1)
	upsertAllocs(t, s, 2, statetest.Alloc("a1", "n1"))
	return s
}

func TestStateStore_UpsertCSIVolume_Register(t *testing.T) {
	noExt := statetest.Volume("bad", plugID)
	noExt.ExternalID = ""
	cases := []struct {
		name    string
		vols    []*structs.CSIVolume
		want    error
		wantIDs []string
	}{
		{name: "one volume", vols: []*structs.CSIVolume{statetest.Volume("data", plugID)}, wantIDs: []string{"default/data"}},
		{
			name:    "batch",
			vols:    []*structs.CSIVolume{statetest.Volume("a", plugID), statetest.Volume("b", "other")},
			wantIDs: []string{"default/a", "default/b"},
		},
		{
			name: "namespace defaults",
			vols: []*structs.CSIVolume{func() *structs.CSIVolume {
				v := statetest.Volume("data", plugID)
				v.Namespace = ""
				return v
			}()},
			wantIDs: []string{"default/data"},
		},
		{name: "no volumes", vols: nil, want: structs.ErrBadRequest},
		{name: "nil volume", vols: []*structs.CSIVolume{nil}, want: structs.ErrBadRequest},
		{name: "invalid volume", vols: []*structs.CSIVolume{noExt}, want: structs.ErrBadRequest},
		{name: "plugin not running", vols: []*structs.CSIVolume{statetest.Volume("data", "nowhere")}, want: structs.ErrBadRequest},
		{
			name: "one bad volume writes none",
			vols: []*structs.CSIVolume{statetest.Volume("good", plugID), statetest.Volume("data", "nowhere")},
			want: structs.ErrBadRequest,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := volumeWorld(t)
			mustCode(t, tc.want, s.UpsertCSIVolume(10, tc.vols))
			got := collect[structs.CSIVolume](t)(s.CSIVolumes(nil))
			if tc.want != nil {
				must.SliceEmpty(t, got)
				must.Eq(t, uint64(0), mustIndex(t, s, state.TableCSIVolumes))
				return
			}
			must.Eq(t, tc.wantIDs, volumeIDs(got))
			must.Eq(t, uint64(10), mustIndex(t, s, state.TableCSIVolumes))
			for _, v := range got {
				must.Eq(t, uint64(10), v.CreateIndex)
				must.Eq(t, uint64(10), v.ModifyIndex)
				// A row at rest stores no claim maps; a copy, which is
				// what every writer changes, has them.
				must.Nil(t, v.ReadClaims)
				must.Nil(t, v.PastClaims)
				c := v.Copy()
				must.NotNil(t, c.ReadClaims)
				must.NotNil(t, c.WriteClaims)
				must.NotNil(t, c.PastClaims)
			}
		})
	}
}

func TestStateStore_UpsertCSIVolume_NewDropsWhatIsNotRegistered(t *testing.T) {
	s := volumeWorld(t)
	vol := statetest.Volume("data", plugID)
	vol.Provider = "claimed-provider"
	vol.ProviderVersion = "9"
	vol.Schedulable = true
	vol.NodesHealthy = 7
	vol.AccessMode = structs.CSIVolumeAccessModeSingleNodeWriter
	vol.WriteClaims = map[string]*structs.CSIVolumeClaim{"a1": {AllocID: "a1", NodeID: "n1"}}
	upsertVolumes(t, s, 10, vol)

	rows := collect[structs.CSIVolume](t)(s.CSIVolumes(nil))
	must.SliceLen(t, 1, rows)
	row := rows[0]
	must.Eq(t, "", row.Provider)
	must.Eq(t, "", row.ProviderVersion)
	must.False(t, row.Schedulable)
	must.Eq(t, 0, row.NodesHealthy)
	must.Eq(t, structs.CSIVolumeAccessModeUnknown, row.AccessMode)
	must.MapEmpty(t, row.WriteClaims)
	must.MapLen(t, 1, vol.WriteClaims, must.Sprint("the caller's volume must not be changed"))

	// The read joins the plugin's provider back in.
	must.Eq(t, statetest.Provider, mustVolume(t, s, "data").Provider)
}

func TestStateStore_UpsertCSIVolume_Update(t *testing.T) {
	cases := []struct {
		name   string
		change func(v *structs.CSIVolume)
		want   error
	}{
		{name: "same again", change: func(v *structs.CSIVolume) {}},
		{name: "capacity", change: func(v *structs.CSIVolume) { v.RequestedCapacityMax = 1 << 30 }},
		{name: "mount options", change: func(v *structs.CSIVolume) { v.MountOptions = &structs.CSIMountOptions{FSType: "xfs"} }},
		{name: "secrets", change: func(v *structs.CSIVolume) { v.Secrets = structs.CSISecrets{"k": "v"} }},
		{name: "context", change: func(v *structs.CSIVolume) { v.Context = map[string]string{"k": "v"} }},
		{name: "plugin_id", change: func(v *structs.CSIVolume) { v.PluginID = "other" }, want: structs.ErrConflict},
		{name: "external_id", change: func(v *structs.CSIVolume) { v.ExternalID = "ext-new" }, want: structs.ErrConflict},
		{name: "name", change: func(v *structs.CSIVolume) { v.Name = "renamed" }, want: structs.ErrConflict},
		{name: "parameters", change: func(v *structs.CSIVolume) { v.Parameters = map[string]string{"tier": "gold"} }, want: structs.ErrConflict},
		{
			name: "capability in use kept, another added",
			change: func(v *structs.CSIVolume) {
				v.RequestedCapabilities = append(v.RequestedCapabilities, &structs.CSIVolumeCapability{
					AccessMode:     structs.CSIVolumeAccessModeSingleNodeWriter,
					AttachmentMode: structs.CSIVolumeAttachmentModeBlockDevice,
				})
			},
		},
		{
			name: "capability in use dropped",
			change: func(v *structs.CSIVolume) {
				v.RequestedCapabilities = []*structs.CSIVolumeCapability{{
					AccessMode:     structs.CSIVolumeAccessModeSingleNodeWriter,
					AttachmentMode: structs.CSIVolumeAttachmentModeBlockDevice,
				}}
			},
			want: structs.ErrConflict,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := volumeWorld(t)
			upsertVolumes(t, s, 10, statetest.Volume("data", plugID))
			must.NoError(t, claimOne(s, 11, claimReq("data", "a1", structs.CSIVolumeClaimWrite)))

			update := statetest.Volume("data", plugID)
			tc.change(update)
			mustCode(t, tc.want, s.UpsertCSIVolume(12, []*structs.CSIVolume{update}))

			vol := mustVolume(t, s, "data")
			must.Eq(t, uint64(10), vol.CreateIndex)
			must.MapContainsKey(t, vol.WriteClaims, "a1", must.Sprint("an update keeps the claims"))
			must.Eq(t, structs.CSIVolumeAccessModeSingleNodeWriter, vol.AccessMode)
			must.Eq(t, structs.CSIVolumeAttachmentModeFilesystem, vol.AttachmentMode)
			if tc.want != nil {
				must.Eq(t, uint64(11), vol.ModifyIndex)
				must.Eq(t, statetest.Volume("data", plugID).ExternalID, vol.ExternalID)
				return
			}
			must.Eq(t, uint64(12), vol.ModifyIndex)
			must.Eq(t, update.RequestedCapacityMax, vol.RequestedCapacityMax)
			must.Eq(t, len(update.RequestedCapabilities), len(vol.RequestedCapabilities))
		})
	}
}

func TestStateStore_UpsertCSIVolume_UnclaimedMayDropCapability(t *testing.T) {
	s := volumeWorld(t)
	upsertVolumes(t, s, 10, statetest.Volume("data", plugID))
	update := statetest.Volume("data", plugID)
	update.RequestedCapabilities[0].AccessMode = structs.CSIVolumeAccessModeMultiNodeReader
	must.NoError(t, s.UpsertCSIVolume(11, []*structs.CSIVolume{update}))
	must.Eq(t, structs.CSIVolumeAccessModeMultiNodeReader, mustVolume(t, s, "data").RequestedCapabilities[0].AccessMode)
}

func TestStateStore_CSIVolumeByID_Absent(t *testing.T) {
	s := volumeWorld(t)
	upsertVolumes(t, s, 10, statetest.Volume("data", plugID))
	for _, tc := range []struct{ name, ns, id string }{
		{"other id", structs.DefaultNamespace, "nope"},
		{"other namespace", "prod", "data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vol, err := s.CSIVolumeByID(nil, tc.ns, tc.id)
			must.NoError(t, err)
			must.Nil(t, vol)
		})
	}
}

func TestStateStore_CSIVolumeReads(t *testing.T) {
	s := volumeWorld(t)
	upsertNodes(t, s, 3, withPlugins("n2", false, plugID))
	upsertAllocs(t, s, 4, statetest.Alloc("a2", "n2"), statetest.Alloc("a3", "n1"))
	vol := func(ns, id, plugin string) *structs.CSIVolume {
		v := statetest.Volume(id, plugin)
		v.Namespace, v.ExternalID = ns, "ext-"+ns+"-"+id // one disk per volume
		v.RequestedCapabilities[0].AccessMode = structs.CSIVolumeAccessModeMultiNodeMultiWriter
		return v
	}
	upsertVolumes(t, s, 10,
		vol("default", "data-1", plugID),
		vol("default", "data-2", plugID),
		vol("default", "logs", "other"),
		vol("prod", "data-1", plugID),
	)
	claims := []structs.CSIVolumeClaimRequest{
		claimReq("data-1", "a1", structs.CSIVolumeClaimWrite),
		claimReq("data-2", "a2", structs.CSIVolumeClaimRead),
		claimReq("logs", "a3", structs.CSIVolumeClaimRead),
	}
	prodClaim := claimReq("data-1", "a2", structs.CSIVolumeClaimWrite)
	prodClaim.Namespace = "prod"
	claims = append(claims, prodClaim)
	for _, err := range s.CSIVolumeClaimBatch(11, claims) {
		must.NoError(t, err)
	}
	// a3's claim is being released: it still counts for node and alloc.
	must.NoError(t, claimOne(s, 12, releaseReq("logs", "a3", structs.CSIVolumeClaimStateUnpublishing)))

	all := collect[structs.CSIVolume](t)
	cases := []struct {
		name string
		got  []*structs.CSIVolume
		want []string
	}{
		{"all", all(s.CSIVolumes(nil)), []string{"default/data-1", "default/data-2", "default/logs", "prod/data-1"}},
		{"prefix in default", all(s.CSIVolumesByIDPrefix(nil, "default", "data")), []string{"default/data-1", "default/data-2"}},
		{"prefix in prod", all(s.CSIVolumesByIDPrefix(nil, "prod", "data")), []string{"prod/data-1"}},
		{"empty prefix lists the namespace", all(s.CSIVolumesByIDPrefix(nil, "default", "")), []string{"default/data-1", "default/data-2", "default/logs"}},
		{"namespace defaults", all(s.CSIVolumesByIDPrefix(nil, "", "l")), []string{"default/logs"}},
		{"by plugin in default", all(s.CSIVolumesByPluginID(nil, "default", plugID)), []string{"default/data-1", "default/data-2"}},
		{"by plugin in prod", all(s.CSIVolumesByPluginID(nil, "prod", plugID)), []string{"prod/data-1"}},
		{"by other plugin", all(s.CSIVolumesByPluginID(nil, "default", "other")), []string{"default/logs"}},
		{"by node n1", all(s.CSIVolumesByNodeID(nil, "n1")), []string{"default/data-1", "default/logs"}},
		{"by node n2", all(s.CSIVolumesByNodeID(nil, "n2")), []string{"default/data-2", "prod/data-1"}},
		{"by node prefix is not a match", all(s.CSIVolumesByNodeID(nil, "n")), []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			must.Eq(t, tc.want, volumeIDs(tc.got))
		})
	}

	// The volumes of an alloc, in every namespace, are found by its claims
	// (the claim_alloc index) when its client reports it over: each claim
	// starts releasing in the same write.
	must.NoError(t, s.UpdateAllocsFromClient(13, []*structs.Allocation{{ID: "a2", ClientStatus: structs.AllocClientStatusComplete}},
		time.Unix(100, 0)))
	for _, v := range []struct{ ns, id string }{{"default", "data-2"}, {"prod", "data-1"}} {
		vol, err := s.CSIVolumeByID(nil, v.ns, v.id)
		must.NoError(t, err)
		must.NotNil(t, vol.PastClaims["a2"], must.Sprintf("%s/%s", v.ns, v.id))
		must.EqOp(t, structs.CSIVolumeClaimStateUnpublishing, vol.PastClaims["a2"].State, must.Sprintf("%s/%s", v.ns, v.id))
	}
}

func BenchmarkStateStore_UpsertCSIVolume(b *testing.B) {
	s := volumeWorld(b)
	vols := make([]*structs.CSIVolume, 100)
	for i := range vols {
		vols[i] = statetest.Volume(fmt.Sprintf("vol-%03d", i), plugID)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		v := vols[i%len(vols)]
		if err := s.UpsertCSIVolume(uint64(10+i), []*structs.CSIVolume{v}); err != nil {
			b.Fatal(err)
		}
	}
}
