package client

import (
	"context"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/client/csitest"
	"github.com/berth-csi/berth/client/volumemanager"
	"github.com/berth-csi/berth/structs"
)

// TestClientCSI_NodeExpandVolume_OverTheWire: a server's node expand
// reaches the volume manager, which expands the volume where it is in use
// here; its answers and coded errors cross the wire.
func TestClientCSI_NodeExpandVolume_OverTheWire(t *testing.T) {
	// The first expand fails finally (NOT_FOUND), the rest succeed.
	p := csitest.StartMockDriver(t, csitest.MockOptions{ExtraArgs: []string{"-node-expand-required"}, Hooks: `globals: |
  expands = 0;
nodeExpandVolumeStart: |
  expands = expands + 1;
  if (expands == 1) { NOTFOUND; } else { OK; };
`})
	c := newCSIClient(t, monolith("mock", p.Socket))
	node := c.NodeID()
	expand := func(nodeID, volumeID string) (*structs.ClientCSINodeExpandVolumeResponse, error) {
		var reply structs.ClientCSINodeExpandVolumeResponse
		err := callWire(t, c, "ClientCSI.NodeExpandVolume", &structs.ClientCSINodeExpandVolumeRequest{PluginID: "mock", NodeID: nodeID,
			VolumeID: volumeID, ExternalVolumeID: "1", CapacityMin: 2 << 30}, &reply)
		return &reply, err
	}

	got, err := expand(node, "data")
	must.NoError(t, err)
	must.Eq(t, &structs.ClientCSINodeExpandVolumeResponse{}, got, must.Sprint("not in use here"))

	_, err = c.Volumes().MountVolume(context.Background(), &volumemanager.MountRequest{AllocID: "a1", VolumeID: "data", ExternalVolumeID: "1",
		PluginID: "mock", AccessMode: structs.CSIVolumeAccessModeSingleNodeWriter,
		AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem, PublishContext: map[string]string{"device": "/dev/mock"}})
	must.NoError(t, err)

	_, err = expand(node, "data")
	must.ErrorIs(t, err, structs.ErrNotFound)
	must.StrHasPrefix(t, `node `+node+`: volume "data" for alloc a1: NodeExpandVolume with plugin "mock": NotFound: `, err.Error())

	got, err = expand(node, "data")
	must.NoError(t, err)
	must.Eq(t, &structs.ClientCSINodeExpandVolumeResponse{InUse: true, CapacityBytes: 2 << 30}, got)

	_, err = expand("other-node", "data")
	must.ErrorIs(t, err, structs.ErrBadRequest)
	must.EqError(t, err, `volume "data": a node expand for node other-node reached node `+node)
	_, err = expand("", "data")
	must.ErrorIs(t, err, structs.ErrBadRequest)
	_, err = expand(node, "../data")
	must.ErrorIs(t, err, structs.ErrBadRequest)
	must.StrContains(t, err.Error(), "cannot name a directory")

	// A plugin that is not running cannot expand yet: the server retries.
	must.NoError(t, c.Registry().Deregister("mock", ""))
	_, err = expand(node, "data")
	must.ErrorIs(t, err, structs.ErrUnavailable)
	must.EqError(t, err, `node `+node+`: volume "data" for alloc a1: find plugin with plugin "mock": volumemanager: plugin not running on this node`)
}
