package state_test

import (
	"testing"

	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
	"github.com/shoenig/test/must"
)

// onDisk is volume id in namespace ns on the plugin's storage volume ext.
func onDisk(id, ns, pluginID, ext string) *structs.CSIVolume {
	v := statetest.Volume(id, pluginID)
	v.Namespace, v.ExternalID = ns, ext
	return v
}

// TestStateStore_UpsertCSIVolume_ExternalIDUnique: a plugin's storage
// volume is registered as one volume at most, across namespaces; the
// volume itself may be registered again (an update), and another plugin's
// volume of the same external ID is another disk.
func TestStateStore_UpsertCSIVolume_ExternalIDUnique(t *testing.T) {
	const taken = `volume "b": external ID disk-1 of plugin hostpath is already registered as volume "a" in namespace "default"; deregister it first`
	cases := []struct {
		name    string
		vols    []*structs.CSIVolume
		wantErr string
		wantIDs []string // rows after the write
	}{
		{name: "the same volume again", vols: []*structs.CSIVolume{onDisk("a", "default", plugID, "disk-1")},
			wantIDs: []string{"default/a"}},
		{name: "another volume", vols: []*structs.CSIVolume{onDisk("b", "default", plugID, "disk-1")}, wantErr: taken},
		{name: "another namespace", vols: []*structs.CSIVolume{onDisk("b", "prod", plugID, "disk-1")},
			wantErr: `volume "b": external ID disk-1 of plugin hostpath is already registered as volume "a" in namespace "default"; deregister it first`},
		{name: "the same ID in another namespace", vols: []*structs.CSIVolume{onDisk("a", "prod", plugID, "disk-1")},
			wantErr: `volume "a": external ID disk-1 of plugin hostpath is already registered as volume "a" in namespace "default"; deregister it first`},
		{name: "another plugin's disk of that ID", vols: []*structs.CSIVolume{onDisk("b", "default", "other", "disk-1")},
			wantIDs: []string{"default/a", "default/b"}},
		{name: "another disk", vols: []*structs.CSIVolume{onDisk("b", "default", plugID, "disk-2")},
			wantIDs: []string{"default/a", "default/b"}},
		{name: "twice in one batch", vols: []*structs.CSIVolume{onDisk("b", "default", plugID, "disk-2"), onDisk("c", "prod", plugID, "disk-2")},
			wantErr: `volume "c": external ID disk-2 of plugin hostpath is already registered as volume "b" in namespace "default"; deregister it first`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := volumeWorld(t)
			upsertVolumes(t, s, 10, onDisk("a", "default", plugID, "disk-1"))

			if tc.wantErr != "" && len(tc.vols) == 1 {
				err := s.CheckCSIVolumeExternalID(tc.vols[0])
				must.ErrorIs(t, err, structs.ErrConflict)
				must.EqError(t, err, tc.wantErr, must.Sprint("the endpoint's check says what the write says"))
			}
			err := s.UpsertCSIVolume(11, tc.vols)
			if tc.wantErr != "" {
				must.ErrorIs(t, err, structs.ErrConflict)
				must.EqError(t, err, tc.wantErr)
				must.Eq(t, uint64(10), mustIndex(t, s, state.TableCSIVolumes), must.Sprint("nothing written"))
				must.Eq(t, []string{"default/a"}, volumeIDs(collect[structs.CSIVolume](t)(s.CSIVolumes(nil))))
				return
			}
			must.NoError(t, err)
			for _, v := range tc.vols {
				must.NoError(t, s.CheckCSIVolumeExternalID(v), must.Sprint("registered, a volume is not another of itself"))
			}
			must.Eq(t, tc.wantIDs, volumeIDs(collect[structs.CSIVolume](t)(s.CSIVolumes(nil))))
		})
	}
}

// TestStateStore_UpsertCSIVolume_ExternalIDFreedByDeregister: once the
// volume on a disk is deregistered, another may take the disk.
func TestStateStore_UpsertCSIVolume_ExternalIDFreedByDeregister(t *testing.T) {
	s := volumeWorld(t)
	upsertVolumes(t, s, 10, onDisk("a", "default", plugID, "disk-1"))
	must.ErrorIs(t, s.UpsertCSIVolume(11, []*structs.CSIVolume{onDisk("b", "prod", plugID, "disk-1")}), structs.ErrConflict)
	must.NoError(t, s.CSIVolumeDeregister(12, "default", []string{"a"}, false))
	must.NoError(t, s.UpsertCSIVolume(13, []*structs.CSIVolume{onDisk("b", "prod", plugID, "disk-1")}))
	must.Eq(t, []string{"prod/b"}, volumeIDs(collect[structs.CSIVolume](t)(s.CSIVolumes(nil))))
}
