package server

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// seedVolume registers a node running hostpath and volume "data" on it.
func seedVolume(t *testing.T, s *Server) {
	t.Helper()
	var nresp structs.NodeUpdateResponse
	must.NoError(t, rpcCall(t, s, "Node.Register", &structs.NodeRegisterRequest{
		Node: statetest.NodeWithPlugin("node-1", "hostpath", false, true, true)}, &nresp))
	var vresp structs.CSIVolumeRegisterResponse
	must.NoError(t, rpcCall(t, s, "CSIVolume.Register", &structs.CSIVolumeRegisterRequest{
		Volumes: []*structs.CSIVolume{statetest.Volume("data", "hostpath")}}, &vresp))
}

// TestCSIVolume_Register_ExternalIDTaken: a storage volume registered as
// one volume cannot be registered as another, in its namespace or any
// other (409, naming the volume that has it); the volume itself may be
// registered again.
func TestCSIVolume_Register_ExternalIDTaken(t *testing.T) {
	s := testServer(t)
	seedVolume(t, s) // volume "data" on ext-data of hostpath

	onData := func(id, ns string) *structs.CSIVolume {
		v := statetest.Volume(id, "hostpath")
		v.Namespace, v.ExternalID = ns, "ext-data"
		return v
	}
	cases := []struct {
		name    string
		vol     *structs.CSIVolume
		wantErr string
	}{
		{"another volume", onData("copy", "default"),
			`volume "copy": external ID ext-data of plugin hostpath is already registered as volume "data" in namespace "default"; deregister it first`},
		{"another namespace", onData("data", "prod"),
			`volume "data": external ID ext-data of plugin hostpath is already registered as volume "data" in namespace "default"; deregister it first`},
		{"the same volume again", onData("data", "default"), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// The volumes' table, not the latest index: the leader's own
			// writes (its first root key) may land meanwhile.
			before, err := s.State().Index(state.TableCSIVolumes)
			must.NoError(t, err)
			var resp structs.CSIVolumeRegisterResponse
			err = rpcCall(t, s, "CSIVolume.Register", &structs.CSIVolumeRegisterRequest{
				Volumes: []*structs.CSIVolume{tc.vol}, WriteRequest: structs.WriteRequest{Namespace: tc.vol.Namespace}}, &resp)
			if tc.wantErr == "" {
				must.NoError(t, err)
				return
			}
			must.ErrorIs(t, err, structs.ErrConflict)
			must.EqError(t, err, tc.wantErr)
			after, err := s.State().Index(state.TableCSIVolumes)
			must.NoError(t, err)
			must.Eq(t, before, after, must.Sprint("a refused register writes nothing"))
			vol, err := s.State().CSIVolumeByID(nil, tc.vol.Namespace, tc.vol.ID)
			must.NoError(t, err)
			if tc.vol.Namespace != "default" || tc.vol.ID != "data" {
				must.Nil(t, vol)
			}
		})
	}
}

// TestCSIVolume_Register_ExternalIDTakenInOneRequest: two volumes of one
// request on one storage volume are refused together.
func TestCSIVolume_Register_ExternalIDTakenInOneRequest(t *testing.T) {
	s := testServer(t)
	seedVolume(t, s)
	a, b := statetest.Volume("a", "hostpath"), statetest.Volume("b", "hostpath")
	b.ExternalID = a.ExternalID
	var resp structs.CSIVolumeRegisterResponse
	err := rpcCall(t, s, "CSIVolume.Register", &structs.CSIVolumeRegisterRequest{Volumes: []*structs.CSIVolume{a, b}}, &resp)
	must.ErrorIs(t, err, structs.ErrConflict)
	must.ErrorContains(t, err, `volume "b": external ID ext-a of plugin hostpath is already registered as volume "a"`)
	vol, err := s.State().CSIVolumeByID(nil, "default", "a")
	must.NoError(t, err)
	must.Nil(t, vol, must.Sprint("a refused request registers none of its volumes"))
}
