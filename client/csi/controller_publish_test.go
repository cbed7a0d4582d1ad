package csi

import (
	"context"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/client/csitest"
	"github.com/berth-csi/berth/structs"
)

func TestClient_ControllerPublishVolume_MockDriver(t *testing.T) {
	// The attach limit is 1, so a second volume on the node is
	// RESOURCE_EXHAUSTED; the second unpublish of volume 2 is NOT_FOUND.
	p := csitest.StartMockDriver(t, csitest.MockOptions{ExtraArgs: []string{"-v=5", "-attach-limit=1"}, Hooks: `globals: |
  unpublishes = 0;
controllerUnpublishVolumeStart: |
  unpublishes = unpublishes + 1;
  if (unpublishes == 3) { NOTFOUND; } else { OK; };
`})
	c := dial(t, p.Socket)
	ctx := context.Background()
	node := csitest.DefaultMockName

	req := &ControllerPublishVolumeRequest{ExternalVolumeID: "1", ExternalNodeID: node, Capability: writer[0],
		MountOptions: &structs.CSIMountOptions{FSType: "xfs"}, Secrets: structs.CSISecrets{"k": "v"},
		VolumeContext: map[string]string{"vc": "1"}}
	pc, err := c.ControllerPublishVolume(ctx, req)
	must.NoError(t, err)
	must.Eq(t, map[string]string{"device": "/dev/mock", "readonly": "false"}, pc)
	again, err := c.ControllerPublishVolume(ctx, req)
	must.NoError(t, err)
	must.Eq(t, pc, again, must.Sprint("already published, compatibly: OK"))
	calls := mockCalls(t, p, "ControllerPublishVolume")
	must.SliceLen(t, 2, calls)
	must.StrContains(t, calls[0], `"node_id":"`+node+`"`)
	must.StrContains(t, calls[0], `"secrets":{"k":"v"}`)
	must.StrContains(t, calls[0], `"volume_context":{"vc":"1"}`)
	must.StrContains(t, calls[0], `"volume_capability":{"AccessType":{"Mount":{"fs_type":"xfs"}},"access_mode":{"mode":1}}`)

	cases := []struct {
		name string
		req  *ControllerPublishVolumeRequest
		code Code
	}{
		{"readonly differs", &ControllerPublishVolumeRequest{ExternalVolumeID: "1", ExternalNodeID: node, Capability: writer[0], ReadOnly: true}, CodeAlreadyExists},
		{"node at its limit", &ControllerPublishVolumeRequest{ExternalVolumeID: "2", ExternalNodeID: node, Capability: writer[0]}, CodeResourceExhausted},
		{"unknown node", &ControllerPublishVolumeRequest{ExternalVolumeID: "1", ExternalNodeID: "elsewhere", Capability: writer[0]}, CodeNotFound},
		{"unknown volume", &ControllerPublishVolumeRequest{ExternalVolumeID: "99", ExternalNodeID: node, Capability: writer[0]}, CodeNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pc, err := c.ControllerPublishVolume(ctx, tc.req)
			must.Nil(t, pc)
			must.Eq(t, tc.code, CodeOf(err))
			must.StrHasPrefix(t, `plugin "mock": ControllerPublishVolume: `+tc.code.String()+": ", err.Error())
		})
	}
	must.False(t, IsFinal(func() error { _, err := c.ControllerPublishVolume(ctx, cases[1].req); return err }()),
		must.Sprint("RESOURCE_EXHAUSTED: detach something and retry"))

	must.NoError(t, c.ControllerUnpublishVolume(ctx, "1", node, structs.CSISecrets{"k": "v"}))
	must.StrContains(t, mockCalls(t, p, "ControllerUnpublishVolume")[0], `"secrets":{"k":"v"}`)
	must.NoError(t, c.ControllerUnpublishVolume(ctx, "1", node, nil), must.Sprint("not published: OK"))
	must.NoError(t, c.ControllerUnpublishVolume(ctx, "2", node, nil), must.Sprint("NOT_FOUND: unpublished"))
	must.NoError(t, c.ControllerUnpublishVolume(ctx, "1", "elsewhere", nil), must.Sprint("an unknown node has nothing published"))
	must.NoError(t, c.ControllerUnpublishVolume(ctx, "99", node, nil), must.Sprint("an unknown volume is not published"))

	// Volume 1 is detached, so the node has room for volume 2.
	_, err = c.ControllerPublishVolume(ctx, cases[1].req)
	must.NoError(t, err)
}

func TestClient_ControllerPublishVolume_InvalidRequest(t *testing.T) {
	p := csitest.StartMockDriver(t, csitest.MockOptions{ExtraArgs: []string{"-v=5"}})
	c := dial(t, p.Socket)
	ctx := context.Background()
	cases := []struct {
		name string
		req  *ControllerPublishVolumeRequest
		msg  string
	}{
		{"nil", nil, "a volume ID is required"},
		{"no volume ID", &ControllerPublishVolumeRequest{ExternalNodeID: "n", Capability: writer[0]}, "a volume ID is required"},
		{"no node ID", &ControllerPublishVolumeRequest{ExternalVolumeID: "1", Capability: writer[0]}, `volume "1": the plugin's node ID is required`},
		{"no capability", &ControllerPublishVolumeRequest{ExternalVolumeID: "1", ExternalNodeID: "n"}, "a volume capability is nil"},
		{"unknown attachment mode", &ControllerPublishVolumeRequest{ExternalVolumeID: "1", ExternalNodeID: "n",
			Capability: &structs.CSIVolumeCapability{AccessMode: structs.CSIVolumeAccessModeSingleNodeWriter, AttachmentMode: "tape"}}, `attachment mode "tape"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.ControllerPublishVolume(ctx, tc.req)
			must.ErrorIs(t, err, ErrInvalidRequest)
			must.True(t, IsFinal(err))
			must.StrHasPrefix(t, `plugin "mock": ControllerPublishVolume: csi: invalid request: `, err.Error())
			must.StrContains(t, err.Error(), tc.msg)
		})
	}
	err := c.ControllerUnpublishVolume(ctx, "", "n", nil)
	must.ErrorIs(t, err, ErrInvalidRequest)
	err = c.ControllerUnpublishVolume(ctx, "1", "", nil)
	must.ErrorIs(t, err, ErrInvalidRequest, must.Sprint("never from every node"))
	must.StrContains(t, err.Error(), `volume "1": the plugin's node ID is required`)

	must.SliceEmpty(t, mockCalls(t, p, "ControllerPublishVolume"), must.Sprint("no invalid request reached the plugin"))
	must.SliceEmpty(t, mockCalls(t, p, "ControllerUnpublishVolume"), must.Sprint("no invalid request reached the plugin"))
}
