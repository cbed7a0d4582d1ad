package integration

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/client/clienttest"
	"github.com/berth-csi/berth/client/csitest"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

func createSpec(id string) *structs.CSIVolume {
	vol := statetest.Volume(id, "hostpath")
	vol.ExternalID = ""
	vol.RequestedCapacityMin = 1 << 20
	return vol
}

func TestVolumes_CreateAndDelete_Hostpath(t *testing.T) {
	c := hostpathCluster(t)

	// Through a follower: the create is forwarded to the leader, which
	// calls the client over whichever server holds its session.
	via := c.Followers()[0]
	start := time.Now()
	created, err := create(t, via, createSpec("data"))
	must.NoError(t, err)
	t.Logf("figure: volume create through a follower in %s", time.Since(start).Round(time.Millisecond))
	ext := created.ExternalID
	must.NotEq(t, "", ext)
	must.GreaterEq(t, int64(1<<20), created.Capacity)
	must.True(t, volume(t, c, "data").Schedulable)

	// A retried create finds the same volume.
	again, err := create(t, via, createSpec("data"))
	must.NoError(t, err)
	must.Eq(t, ext, again.ExternalID)

	var del structs.CSIVolumeDeleteResponse
	must.NoError(t, rpc(t, via, "CSIVolume.Delete", &structs.CSIVolumeDeleteRequest{VolumeIDs: []string{"data"}}, &del))
	var get structs.CSIVolumeGetResponse
	must.NoError(t, rpc(t, via, "CSIVolume.Get", &structs.CSIVolumeGetRequest{ID: "data"}, &get))
	must.Nil(t, get.Volume)

	// Deleting again is a clear NotFound, and creating with the same name
	// now makes a new volume at the provider.
	err = rpc(t, via, "CSIVolume.Delete", &structs.CSIVolumeDeleteRequest{VolumeIDs: []string{"data"}}, &del)
	must.ErrorIs(t, err, structs.ErrNotFound)
	fresh, err := create(t, via, createSpec("data"))
	must.NoError(t, err)
	must.NotEq(t, "", fresh.ExternalID)
	must.NotEq(t, ext, fresh.ExternalID)
}

func TestVolumes_Create_BadInput(t *testing.T) {
	c := cluster(t)
	mock := csitest.StartMockDriver(t, csitest.MockOptions{})
	clienttest.New(t, "client-1", rpcAddrs(c), clienttest.WithPlugin("nodeonly", "node", mock.Socket))
	eventually(t, 20*time.Second, "plugin healthy", func() bool { return healthy(plugin(t, c, "nodeonly"), 0, 1) })

	both := createSpec("v1")
	both.PluginID = "nodeonly"
	both.SnapshotID, both.CloneID = "s", "c"
	withExt := createSpec("v2")
	withExt.ExternalID = "given"
	noController := createSpec("v3")
	noController.PluginID = "nodeonly"
	unknown := createSpec("v4")
	unknown.PluginID = "nope"
	cases := []struct {
		name string
		vol  *structs.CSIVolume
		code error
		want string
	}{
		{"snapshot and clone", both, structs.ErrBadRequest, "not both"},
		{"external id given", withExt, structs.ErrBadRequest, "external_id"},
		{"no controller", noController, structs.ErrBadRequest, "no controller instance"},
		{"unknown plugin", unknown, structs.ErrBadRequest, `"nope"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var resp structs.CSIVolumeCreateResponse
			err := rpc(t, c.Leader(), "CSIVolume.Create", &structs.CSIVolumeCreateRequest{Volumes: []*structs.CSIVolume{tc.vol}}, &resp)
			must.ErrorIs(t, err, tc.code)
			must.ErrorContains(t, err, tc.want)
			must.ErrorContains(t, err, tc.vol.ID)
		})
	}
	var list structs.CSIVolumeListResponse
	must.NoError(t, rpc(t, c.Leader(), "CSIVolume.List", &structs.CSIVolumeListRequest{}, &list))
	must.SliceEmpty(t, list.Volumes, must.Sprint("nothing registered on failure"))
}
