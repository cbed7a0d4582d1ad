package csi

import (
	"context"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/client/csitest"
	"github.com/berth-csi/berth/structs"
)

func TestClient_ControllerExpandVolume_Hostpath(t *testing.T) {
	p := csitest.StartHostpath(t)
	c := dial(t, p.Socket)
	ctx := context.Background()

	v, err := c.CreateVolume(ctx, &CreateVolumeRequest{Name: "data", CapacityMin: 1 << 20, Capabilities: writer})
	must.NoError(t, err)
	must.Eq(t, int64(1<<20), v.CapacityBytes)

	req := &ExpandVolumeRequest{ExternalVolumeID: v.ExternalVolumeID, CapacityMin: 2 << 20, CapacityMax: 4 << 20,
		Capability: writer[0], MountOptions: &structs.CSIMountOptions{MountFlags: []string{"noatime"}}}
	got, err := c.ControllerExpandVolume(ctx, req)
	must.NoError(t, err)
	must.Eq(t, &ExpandVolumeResponse{CapacityBytes: 2 << 20, NodeExpansionRequired: true}, got,
		must.Sprint("a plugin with the node EXPAND_VOLUME capability asks for node expansion, as the spec has it"))
	again, err := c.ControllerExpandVolume(ctx, req)
	must.NoError(t, err)
	must.Eq(t, got, again, must.Sprint("expanding to the same size again is a no-op"))

	// Volumes do not shrink: a limit below the capacity is out of range.
	_, err = c.ControllerExpandVolume(ctx, &ExpandVolumeRequest{ExternalVolumeID: v.ExternalVolumeID, CapacityMin: 1 << 20, CapacityMax: 1 << 20})
	must.Eq(t, CodeOutOfRange, CodeOf(err))
	must.True(t, IsFinal(err))
	must.StrHasPrefix(t, `plugin "mock": ControllerExpandVolume: OutOfRange: `, err.Error())

	_, err = c.ControllerExpandVolume(ctx, &ExpandVolumeRequest{ExternalVolumeID: "vol-gone", CapacityMin: 1 << 20})
	must.Eq(t, CodeNotFound, CodeOf(err))
}

func TestClient_ControllerExpandVolume_MockDriver(t *testing.T) {
	// -node-expand-required makes the mock ask for node expansion.
	p := csitest.StartMockDriver(t, csitest.MockOptions{ExtraArgs: []string{"-node-expand-required", "-v=5"}})
	c := dial(t, p.Socket)
	ctx := context.Background()

	const gib = int64(1 << 30)
	got, err := c.ControllerExpandVolume(ctx, &ExpandVolumeRequest{ExternalVolumeID: "1", CapacityMin: 200 * gib,
		Capability: writer[0], MountOptions: &structs.CSIMountOptions{FSType: "ext4"}, Secrets: structs.CSISecrets{"k": "v"}})
	must.NoError(t, err)
	must.Eq(t, &ExpandVolumeResponse{CapacityBytes: 200 * gib, NodeExpansionRequired: true}, got)

	calls := mockCalls(t, p, "ControllerExpandVolume")
	must.SliceLen(t, 1, calls)
	must.StrContains(t, calls[0], `"capacity_range":{"required_bytes":214748364800}`)
	must.StrContains(t, calls[0], `"volume_capability":{"AccessType":{"Mount":{"fs_type":"ext4"}},"access_mode":{"mode":1}}`)
	must.StrContains(t, calls[0], `"secrets":{"k":"v"}`)

	t.Run("node", func(t *testing.T) {
		// The mock does not check that the volume is staged at the path:
		// it records and returns the capacity asked for.
		capacity, err := c.NodeExpandVolume(ctx, &NodeExpandVolumeRequest{ExternalVolumeID: "1",
			VolumePath: "/mnt/staging/1", StagingPath: "/mnt/staging/1", CapacityMin: 200 * gib, Capability: writer[0]})
		must.NoError(t, err)
		must.Eq(t, 200*gib, capacity)
		calls := mockCalls(t, p, "NodeExpandVolume")
		must.SliceLen(t, 1, calls)
		must.StrContains(t, calls[0], `"staging_target_path":"/mnt/staging/1"`)
		must.StrContains(t, calls[0], `"volume_path":"/mnt/staging/1"`)

		_, err = c.NodeExpandVolume(ctx, &NodeExpandVolumeRequest{ExternalVolumeID: "99", VolumePath: "/mnt/99", CapacityMin: gib})
		must.Eq(t, CodeNotFound, CodeOf(err))
		must.StrHasPrefix(t, `plugin "mock": NodeExpandVolume: NotFound: 99`, err.Error())
	})
}

func TestClient_ExpandVolume_InvalidRequest(t *testing.T) {
	p := csitest.StartMockDriver(t, csitest.MockOptions{ExtraArgs: []string{"-v=5"}})
	c := dial(t, p.Socket)
	ctx := context.Background()

	cases := []struct {
		name string
		req  *ExpandVolumeRequest
		msg  string
	}{
		{"nil", nil, "a volume ID is required"},
		{"no volume ID", &ExpandVolumeRequest{CapacityMin: 1}, "a volume ID is required"},
		{"no capacity", &ExpandVolumeRequest{ExternalVolumeID: "1"}, `volume "1": an expansion needs a positive capacity min (got 0)`},
		{"negative capacity", &ExpandVolumeRequest{ExternalVolumeID: "1", CapacityMin: -1}, "positive capacity min (got -1)"},
		{"max below min", &ExpandVolumeRequest{ExternalVolumeID: "1", CapacityMin: 2, CapacityMax: 1}, `volume "1": capacity max 1 is below capacity min 2`},
		{"negative max", &ExpandVolumeRequest{ExternalVolumeID: "1", CapacityMin: 2, CapacityMax: -1}, "capacity max -1 is below"},
		{"unknown access mode", &ExpandVolumeRequest{ExternalVolumeID: "1", CapacityMin: 1, Capability: fsCaps("everyone")[0]}, `access mode "everyone"`},
	}
	for _, tc := range cases {
		t.Run("controller "+tc.name, func(t *testing.T) {
			_, err := c.ControllerExpandVolume(ctx, tc.req)
			must.ErrorIs(t, err, ErrInvalidRequest)
			must.True(t, IsFinal(err))
			must.StrHasPrefix(t, `plugin "mock": ControllerExpandVolume: csi: invalid request: `, err.Error())
			must.StrContains(t, err.Error(), tc.msg)
		})
		t.Run("node "+tc.name, func(t *testing.T) {
			var req *NodeExpandVolumeRequest
			if tc.req != nil {
				req = &NodeExpandVolumeRequest{ExternalVolumeID: tc.req.ExternalVolumeID, VolumePath: "/mnt/v",
					CapacityMin: tc.req.CapacityMin, CapacityMax: tc.req.CapacityMax, Capability: tc.req.Capability}
			}
			_, err := c.NodeExpandVolume(ctx, req)
			must.ErrorIs(t, err, ErrInvalidRequest)
			must.StrHasPrefix(t, `plugin "mock": NodeExpandVolume: csi: invalid request: `, err.Error())
		})
	}
	_, err := c.NodeExpandVolume(ctx, &NodeExpandVolumeRequest{ExternalVolumeID: "1", CapacityMin: 1})
	must.ErrorIs(t, err, ErrInvalidRequest, must.Sprint("a volume path is required"))

	must.SliceEmpty(t, mockCalls(t, p, "ControllerExpandVolume"), must.Sprint("no invalid request reached the plugin"))
	must.SliceEmpty(t, mockCalls(t, p, "NodeExpandVolume"), must.Sprint("no invalid request reached the plugin"))
}
