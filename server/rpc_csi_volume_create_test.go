package server

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

func TestCSIVolume_Delete_RefusedWhileClaimed(t *testing.T) {
	s := testServer(t)
	seed(t, s)
	var resp structs.CSIVolumeDeleteResponse
	err := rpcCall(t, s, "CSIVolume.Delete", &structs.CSIVolumeDeleteRequest{VolumeIDs: []string{"data"}}, &resp)
	must.ErrorIs(t, err, structs.ErrConflict)
	must.ErrorContains(t, err, "alloc-1")
	vol, err := s.State().CSIVolumeByID(nil, "default", "data")
	must.NoError(t, err)
	must.NotNil(t, vol, must.Sprint("a refused delete leaves the volume registered"))
}

func TestCSIVolume_Create_PluginCannotCreate(t *testing.T) {
	s := testServer(t)
	var nresp structs.NodeUpdateResponse
	must.NoError(t, rpcCall(t, s, "Node.Register", &structs.NodeRegisterRequest{
		Node: statetest.NodeWithPlugin("node-1", "hostpath", true, true, true)}, &nresp))
	vol := statetest.Volume("data", "hostpath")
	vol.ExternalID = ""
	var resp structs.CSIVolumeCreateResponse
	err := rpcCall(t, s, "CSIVolume.Create", &structs.CSIVolumeCreateRequest{Volumes: []*structs.CSIVolume{vol}}, &resp)
	must.ErrorIs(t, err, structs.ErrBadRequest)
	must.ErrorContains(t, err, "CREATE_DELETE_VOLUME")
	must.ErrorContains(t, err, `"data"`)
}
