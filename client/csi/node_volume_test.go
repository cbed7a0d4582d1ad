package csi

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/client/csitest"
	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/structs"
)

// mockDevice is the publish context the mock driver's node calls need
// unless it runs with -disable-attach (ControllerPublishVolume returns it).
var mockDevice = map[string]string{"device": "/dev/mock"}

// requireRoot skips a test that bind-mounts, saying why.
func requireRoot(t *testing.T) {
	t.Helper()
	testlog.NeedRoot(t, "berth-hostpath bind-mounts, which needs CAP_SYS_ADMIN")
}

func TestClient_NodeStagePublish_MockDriver(t *testing.T) {
	p := csitest.StartMockDriver(t, csitest.MockOptions{ExtraArgs: []string{"-v=5"}})
	c := dial(t, p.Socket)
	ctx := context.Background()
	staging := t.TempDir() // the CO creates the staging dir...
	targets := t.TempDir() // ...and the target's parent
	target := filepath.Join(targets, "alloc-1")

	stage := &NodeStageVolumeRequest{ExternalVolumeID: "1", StagingPath: staging, Capability: writer[0],
		MountOptions: &structs.CSIMountOptions{FSType: "ext4"}, Secrets: structs.CSISecrets{"k": "v"},
		VolumeContext: map[string]string{"vc": "1"}, PublishContext: mockDevice}
	must.NoError(t, c.NodeStageVolume(ctx, stage))
	must.NoError(t, c.NodeStageVolume(ctx, stage), must.Sprint("staged again at the same path: OK"))
	calls := mockCalls(t, p, "NodeStageVolume")
	must.SliceLen(t, 2, calls)
	must.StrContains(t, calls[0], `"staging_target_path":"`+staging+`"`)
	must.StrContains(t, calls[0], `"publish_context":{"device":"/dev/mock"}`)
	must.StrContains(t, calls[0], `"volume_context":{"vc":"1"}`)
	must.StrContains(t, calls[0], `"secrets":{"k":"v"}`)
	must.StrContains(t, calls[0], `"volume_capability":{"AccessType":{"Mount":{"fs_type":"ext4"}},"access_mode":{"mode":1}}`)

	publish := &NodePublishVolumeRequest{ExternalVolumeID: "1", StagingPath: staging, TargetPath: target,
		Capability: writer[0], ReadOnly: true, PublishContext: mockDevice}
	must.NoError(t, c.NodePublishVolume(ctx, publish))
	must.DirExists(t, target) // the mock creates the target, as plugins must
	calls = mockCalls(t, p, "NodePublishVolume")
	must.SliceLen(t, 1, calls)
	must.StrContains(t, calls[0], `"target_path":"`+target+`"`)
	must.StrContains(t, calls[0], `"staging_target_path":"`+staging+`"`)
	must.StrContains(t, calls[0], `"readonly":true`)

	must.NoError(t, c.NodeUnpublishVolume(ctx, "1", target))
	must.DirNotExists(t, target) // and removes it
	must.NoError(t, c.NodeUnpublishVolume(ctx, "1", target), must.Sprint("not published there: OK"))
	must.NoError(t, c.NodeUnstageVolume(ctx, "1", staging))
	must.NoError(t, c.NodeUnstageVolume(ctx, "1", staging), must.Sprint("not staged there: OK"))

	// A volume the plugin does not know is NOT_FOUND: for the undoing
	// calls that is done, for the others a final error.
	must.NoError(t, c.NodeUnpublishVolume(ctx, "99", target))
	must.NoError(t, c.NodeUnstageVolume(ctx, "99", staging))
	must.SliceLen(t, 3, mockCalls(t, p, "NodeUnstageVolume"), must.Sprint("each reached the plugin"))
	err := c.NodeStageVolume(ctx, &NodeStageVolumeRequest{ExternalVolumeID: "99", StagingPath: staging,
		Capability: writer[0], PublishContext: mockDevice})
	must.Eq(t, CodeNotFound, CodeOf(err))
	must.True(t, IsFinal(err))
	must.StrHasPrefix(t, `plugin "mock": NodeStageVolume: NotFound: 99`, err.Error())
	err = c.NodePublishVolume(ctx, &NodePublishVolumeRequest{ExternalVolumeID: "99", TargetPath: target, Capability: writer[0],
		PublishContext: mockDevice})
	must.Eq(t, CodeNotFound, CodeOf(err))

	// The mock needs the publish context of an attached volume.
	err = c.NodeStageVolume(ctx, &NodeStageVolumeRequest{ExternalVolumeID: "1", StagingPath: staging, Capability: writer[0]})
	must.Eq(t, CodeInvalidArgument, CodeOf(err))
	must.True(t, IsFinal(err))
}

func TestClient_NodeCalls_InjectedErrors(t *testing.T) {
	// Each undoing call answers NOT_FOUND first (done), then UNAVAILABLE
	// (retry), then works; a stage answers ABORTED once.
	p := csitest.StartMockDriver(t, csitest.MockOptions{ExtraArgs: []string{"-disable-attach"}, Hooks: `globals: |
  unpublishes = 0;
  unstages = 0;
  stages = 0;
nodeUnpublishVolumeStart: |
  unpublishes = unpublishes + 1;
  if (unpublishes == 1) { NOTFOUND; } else if (unpublishes == 2) { UNAVAILABLE; } else { OK; };
nodeUnstageVolumeStart: |
  unstages = unstages + 1;
  if (unstages == 1) { NOTFOUND; } else if (unstages == 2) { UNAVAILABLE; } else { OK; };
nodeStageVolumeStart: |
  stages = stages + 1;
  if (stages == 1) { ABORTED; } else { OK; };
`})
	c := dial(t, p.Socket)
	ctx := context.Background()
	staging, target := t.TempDir(), filepath.Join(t.TempDir(), "t")

	err := c.NodeStageVolume(ctx, &NodeStageVolumeRequest{ExternalVolumeID: "1", StagingPath: staging, Capability: writer[0]})
	must.Eq(t, CodeAborted, CodeOf(err))
	must.False(t, IsFinal(err), must.Sprint("an operation is pending: retry"))
	must.NoError(t, c.NodeStageVolume(ctx, &NodeStageVolumeRequest{ExternalVolumeID: "1", StagingPath: staging, Capability: writer[0]}))

	for _, undo := range []struct {
		name string
		fn   func() error
	}{
		{"NodeUnpublishVolume", func() error { return c.NodeUnpublishVolume(ctx, "1", target) }},
		{"NodeUnstageVolume", func() error { return c.NodeUnstageVolume(ctx, "1", staging) }},
	} {
		t.Run(undo.name, func(t *testing.T) {
			must.NoError(t, undo.fn(), must.Sprint("NOT_FOUND: already undone"))
			err := undo.fn()
			must.Eq(t, CodeUnavailable, CodeOf(err))
			must.False(t, IsFinal(err))
			must.StrHasPrefix(t, `plugin "mock": `+undo.name+`: Unavailable: `, err.Error())
			must.NoError(t, undo.fn())
		})
	}
}

func TestClient_NodeCalls_InvalidRequest(t *testing.T) {
	p := csitest.StartMockDriver(t, csitest.MockOptions{ExtraArgs: []string{"-v=5"}})
	c := dial(t, p.Socket)
	ctx := context.Background()

	stageCases := []struct {
		name string
		req  *NodeStageVolumeRequest
		msg  string
	}{
		{"nil", nil, "a volume ID is required"},
		{"no volume ID", &NodeStageVolumeRequest{StagingPath: "/s", Capability: writer[0]}, "a volume ID is required"},
		{"no staging path", &NodeStageVolumeRequest{ExternalVolumeID: "1", Capability: writer[0]}, `volume "1": the staging path "" must be an absolute path`},
		{"relative staging path", &NodeStageVolumeRequest{ExternalVolumeID: "1", StagingPath: "s", Capability: writer[0]}, `the staging path "s" must be`},
		{"no capability", &NodeStageVolumeRequest{ExternalVolumeID: "1", StagingPath: "/s"}, "a volume capability is nil"},
		{"unknown access mode", &NodeStageVolumeRequest{ExternalVolumeID: "1", StagingPath: "/s", Capability: fsCaps("everyone")[0]}, `access mode "everyone"`},
	}
	for _, tc := range stageCases {
		t.Run("stage "+tc.name, func(t *testing.T) {
			err := c.NodeStageVolume(ctx, tc.req)
			must.ErrorIs(t, err, ErrInvalidRequest)
			must.True(t, IsFinal(err))
			must.StrHasPrefix(t, `plugin "mock": NodeStageVolume: csi: invalid request: `, err.Error())
			must.StrContains(t, err.Error(), tc.msg)
		})
	}

	publishCases := []struct {
		name string
		req  *NodePublishVolumeRequest
		msg  string
	}{
		{"nil", nil, "a volume ID is required"},
		{"no volume ID", &NodePublishVolumeRequest{TargetPath: "/t", Capability: writer[0]}, "a volume ID is required"},
		{"no target", &NodePublishVolumeRequest{ExternalVolumeID: "1", Capability: writer[0]}, `the target path "" must be an absolute path`},
		{"relative target", &NodePublishVolumeRequest{ExternalVolumeID: "1", TargetPath: "t", Capability: writer[0]}, `target path "t"`},
		{"relative staging path", &NodePublishVolumeRequest{ExternalVolumeID: "1", TargetPath: "/t", StagingPath: "s", Capability: writer[0]}, `staging path "s"`},
		{"target is staging path", &NodePublishVolumeRequest{ExternalVolumeID: "1", TargetPath: "/s/", StagingPath: "/s", Capability: writer[0]},
			`volume "1": the target path is the staging path "/s/"`},
		{"no capability", &NodePublishVolumeRequest{ExternalVolumeID: "1", TargetPath: "/t"}, "a volume capability is nil"},
	}
	for _, tc := range publishCases {
		t.Run("publish "+tc.name, func(t *testing.T) {
			err := c.NodePublishVolume(ctx, tc.req)
			must.ErrorIs(t, err, ErrInvalidRequest)
			must.StrHasPrefix(t, `plugin "mock": NodePublishVolume: csi: invalid request: `, err.Error())
			must.StrContains(t, err.Error(), tc.msg)
		})
	}

	for _, tc := range []struct {
		name     string
		id, path string
	}{{"no volume ID", "", "/p"}, {"no path", "1", ""}, {"relative path", "1", "p"}} {
		t.Run("undo "+tc.name, func(t *testing.T) {
			must.ErrorIs(t, c.NodeUnstageVolume(ctx, tc.id, tc.path), ErrInvalidRequest)
			must.ErrorIs(t, c.NodeUnpublishVolume(ctx, tc.id, tc.path), ErrInvalidRequest)
		})
	}
	for _, m := range []string{"NodeStageVolume", "NodeUnstageVolume", "NodePublishVolume", "NodeUnpublishVolume"} {
		must.SliceEmpty(t, mockCalls(t, p, m), must.Sprintf("no invalid %s reached the plugin", m))
	}
}

func TestClient_NodeStageVolume_LogsNoSecrets(t *testing.T) {
	p := csitest.StartMockDriver(t, csitest.MockOptions{ExtraArgs: []string{"-disable-attach"}})
	var rec testlog.Recorder
	c, err := Dial(context.Background(), p.Socket, rec.Logger("test"), WithPluginID("mock"))
	must.NoError(t, err)
	defer c.Close()

	staging := t.TempDir()
	must.NoError(t, c.NodeStageVolume(context.Background(), &NodeStageVolumeRequest{ExternalVolumeID: "1", StagingPath: staging,
		Capability: writer[0], MountOptions: &structs.CSIMountOptions{FSType: "cifs", MountFlags: []string{"password=hunter2-flag"}},
		Secrets: structs.CSISecrets{"password": "hunter2-secret"}}))
	must.NoError(t, c.NodePublishVolume(context.Background(), &NodePublishVolumeRequest{ExternalVolumeID: "1", StagingPath: staging,
		TargetPath: filepath.Join(t.TempDir(), "t"), Capability: writer[0], Secrets: structs.CSISecrets{"password": "hunter2-secret"}}))
	out := rec.String()
	must.StrContains(t, out, "/csi.v1.Node/NodeStageVolume")
	must.StrContains(t, out, "/csi.v1.Node/NodePublishVolume")
	must.StrContains(t, out, "volume staged")
	must.StrNotContains(t, out, "hunter2")
}

func TestClient_NodeVolume_Hostpath(t *testing.T) {
	requireRoot(t)
	p := csitest.StartHostpath(t)
	c := dial(t, p.Socket)
	ctx := context.Background()

	v, err := c.CreateVolume(ctx, &CreateVolumeRequest{Name: "data", CapacityMin: 1 << 20, Capabilities: writer})
	must.NoError(t, err)
	multi := &structs.CSIVolumeCapability{AccessMode: structs.CSIVolumeAccessModeMultiNodeMultiWriter,
		AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem}
	pc, err := c.ControllerPublishVolume(ctx, &ControllerPublishVolumeRequest{ExternalVolumeID: v.ExternalVolumeID,
		ExternalNodeID: "hostpath-node", Capability: multi})
	must.NoError(t, err)

	staging := t.TempDir()
	parent := t.TempDir()
	a, b := filepath.Join(parent, "a"), filepath.Join(parent, "b")
	must.NoError(t, c.NodeStageVolume(ctx, &NodeStageVolumeRequest{ExternalVolumeID: v.ExternalVolumeID, StagingPath: staging,
		Capability: multi, PublishContext: pc}))
	for _, target := range []string{a, b} {
		must.NoError(t, c.NodePublishVolume(ctx, &NodePublishVolumeRequest{ExternalVolumeID: v.ExternalVolumeID,
			StagingPath: staging, TargetPath: target, Capability: multi, PublishContext: pc}))
	}
	// Both targets are the same directory, through real bind mounts.
	must.NoError(t, os.WriteFile(filepath.Join(a, "hello"), []byte("from a"), 0o644))
	got, err := os.ReadFile(filepath.Join(b, "hello"))
	must.NoError(t, err)
	must.Eq(t, "from a", string(got))

	// Unstaging while published is refused, and final.
	err = c.NodeUnstageVolume(ctx, v.ExternalVolumeID, staging)
	must.Eq(t, CodeFailedPrecondition, CodeOf(err))
	must.True(t, IsFinal(err))

	for _, target := range []string{a, b} {
		must.NoError(t, c.NodeUnpublishVolume(ctx, v.ExternalVolumeID, target))
		must.NoError(t, c.NodeUnpublishVolume(ctx, v.ExternalVolumeID, target), must.Sprint("again: OK"))
		must.DirNotExists(t, target, must.Sprint("the plugin removes the target it made"))
	}
	must.NoError(t, c.NodeUnstageVolume(ctx, v.ExternalVolumeID, staging))
	must.NoError(t, c.NodeUnstageVolume(ctx, v.ExternalVolumeID, staging), must.Sprint("again: OK"))
	entries, err := os.ReadDir(staging)
	must.NoError(t, err)
	must.SliceEmpty(t, entries, must.Sprint("unmounted: the staging dir is empty again"))

	// Gone volumes are unpublished and unstaged.
	must.NoError(t, c.NodeUnpublishVolume(ctx, "vol-gone", a))
	must.NoError(t, c.NodeUnstageVolume(ctx, "vol-gone", staging))
	must.NoError(t, c.ControllerUnpublishVolume(ctx, v.ExternalVolumeID, "hostpath-node", nil))
}
