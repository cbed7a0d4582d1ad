package volumemanager

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/client/csi"
	"github.com/berth-csi/berth/client/csitest"
	"github.com/berth-csi/berth/client/dynamicplugins"
	"github.com/berth-csi/berth/internal/backoff"
	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/structs"
)

// fastRetry keeps tests that inject retryable errors quick.
var fastRetry = backoff.Policy{Initial: time.Millisecond, Max: 5 * time.Millisecond, Multiplier: 2, MaxAttempts: 3}

// newRegistry registers plugins as the client config declares them.
func newRegistry(t *testing.T, plugins ...*dynamicplugins.PluginInfo) *dynamicplugins.Registry {
	t.Helper()
	r := dynamicplugins.New(testlog.Logger(t, "registry"))
	for _, p := range plugins {
		must.NoError(t, r.Register(p))
	}
	return r
}

// newManager builds a manager on dataDir: call it again on the same dir
// for a restarted client.
func newManager(t *testing.T, dataDir string, r *dynamicplugins.Registry) *Manager {
	t.Helper()
	m, err := New(Config{DataDir: dataDir, Registry: r, Logger: testlog.Logger(t, "volumemanager"), Retry: fastRetry})
	must.NoError(t, err)
	return m
}

func node(id, socket string) *dynamicplugins.PluginInfo {
	return &dynamicplugins.PluginInfo{ID: id, Type: structs.CSIPluginTypeNode, Socket: socket}
}

// mockCalls returns the gRPCCall lines the mock driver (run with -v=5)
// logged for method, e.g. "NodeStageVolume", in order.
func mockCalls(t *testing.T, p *csitest.Plugin, method string) []string {
	t.Helper()
	b, err := os.ReadFile(p.LogPath)
	must.NoError(t, err)
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "gRPCCall:") && strings.Contains(l, "/"+method+`"`) {
			out = append(out, l)
		}
	}
	return out
}

// mountReq is a request for volume "data" (the mock's volume "1") for
// alloc, with the publish context the mock's node calls need.
func mountReq(alloc string) *MountRequest {
	return &MountRequest{AllocID: alloc, VolumeID: "data", ExternalVolumeID: "1", PluginID: "mock",
		AccessMode: structs.CSIVolumeAccessModeMultiNodeMultiWriter, AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem,
		MountOptions:   &structs.CSIMountOptions{FSType: "ext4", MountFlags: []string{"password=hunter2-flag"}},
		Secrets:        structs.CSISecrets{"password": "hunter2-secret"},
		VolumeContext:  map[string]string{"vc": "1"},
		PublishContext: map[string]string{"device": "/dev/mock"},
	}
}

// readUsage reads the usage file of dataDir as written.
func readUsage(t *testing.T, dataDir string) usageFile {
	t.Helper()
	return readUsageFile(t, filepath.Join(dataDir, "client", "csi", "volumes.json"))
}

func readUsageFile(t *testing.T, path string) usageFile {
	t.Helper()
	b, err := os.ReadFile(path)
	must.NoError(t, err)
	var f usageFile
	must.NoError(t, json.Unmarshal(b, &f))
	return f
}

func TestManager_MountVolume_StagesOncePublishesPerAlloc(t *testing.T) {
	p := csitest.StartMockDriver(t, csitest.MockOptions{ExtraArgs: []string{"-v=5"}})
	dataDir := t.TempDir()
	m := newManager(t, dataDir, newRegistry(t, node("mock", p.Socket)))
	ctx := context.Background()
	host := filepath.Join(dataDir, "client", "csi", "mock")
	staging := filepath.Join(host, "staging", "data")
	count := func(method string) int { return len(mockCalls(t, p, method)) }

	r1, err := m.MountVolume(ctx, mountReq("a1"))
	must.NoError(t, err)
	must.Eq(t, filepath.Join(host, "per-alloc", "a1", "data"), r1.HostPath)
	must.DirExists(t, r1.HostPath)
	stages := mockCalls(t, p, "NodeStageVolume")
	must.SliceLen(t, 1, stages)
	must.StrContains(t, stages[0], `"staging_target_path":"`+staging+`"`)
	must.StrContains(t, stages[0], `"publish_context":{"device":"/dev/mock"}`)
	must.StrContains(t, stages[0], `"volume_context":{"vc":"1"}`)
	must.StrContains(t, stages[0], `"secrets":{"password":"hunter2-secret"}`, must.Sprint("the secrets reach the plugin"))
	must.StrContains(t, stages[0], `"access_mode":{"mode":5}`)
	publishes := mockCalls(t, p, "NodePublishVolume")
	must.SliceLen(t, 1, publishes)
	must.StrContains(t, publishes[0], `"target_path":"`+r1.HostPath+`"`)
	must.StrContains(t, publishes[0], `"staging_target_path":"`+staging+`"`)

	again, err := m.MountVolume(ctx, mountReq("a1"))
	must.NoError(t, err)
	must.Eq(t, r1, again, must.Sprint("the same path for the same alloc"))
	must.Eq(t, 1, count("NodeGetCapabilities"), must.Sprint("a mounted volume needs no call"))
	must.Eq(t, 1, count("NodePublishVolume"))

	r2, err := m.MountVolume(ctx, mountReq("a2"))
	must.NoError(t, err)
	must.Eq(t, filepath.Join(host, "per-alloc", "a2", "data"), r2.HostPath)
	must.Eq(t, 1, count("NodeStageVolume"), must.Sprint("staged once per node"))
	must.Eq(t, 2, count("NodePublishVolume"), must.Sprint("published once per alloc"))
	must.Eq(t, 1, count("NodeGetCapabilities"), must.Sprint("staged already, no group: no capability call on the claim's path"))

	// The first alloc's unmount leaves the volume staged for the second.
	must.NoError(t, m.UnmountVolume(ctx, "a1", "data", "mock", "1"))
	unpublishes := mockCalls(t, p, "NodeUnpublishVolume")
	must.SliceLen(t, 1, unpublishes)
	must.StrContains(t, unpublishes[0], `"target_path":"`+r1.HostPath+`"`)
	must.Eq(t, 0, count("NodeUnstageVolume"))
	must.DirNotExists(t, filepath.Join(host, "per-alloc", "a1"), must.Sprint("the alloc's dir is removed with its last volume"))
	must.DirExists(t, r2.HostPath)
	must.NoError(t, m.UnmountVolume(ctx, "a1", "data", "mock", "1"), must.Sprint("again: nothing to do"))
	must.Eq(t, 1, count("NodeUnpublishVolume"))

	// The last alloc's unmount unstages.
	must.NoError(t, m.UnmountVolume(ctx, "a2", "data", "mock", ""))
	must.Eq(t, 2, count("NodeUnpublishVolume"))
	unstages := mockCalls(t, p, "NodeUnstageVolume")
	must.SliceLen(t, 1, unstages)
	must.StrContains(t, unstages[0], `"staging_target_path":"`+staging+`"`)
	must.DirNotExists(t, staging)
	must.DirNotExists(t, filepath.Join(host, "per-alloc", "a2"))
	must.SliceEmpty(t, readUsage(t, dataDir).Volumes)

	// Unknown volumes and allocs are nothing to do, plugin or not.
	must.NoError(t, m.UnmountVolume(ctx, "a2", "data", "mock", "1"))
	must.NoError(t, m.UnmountVolume(ctx, "a9", "other", "gone", ""))
	must.Eq(t, 2, count("NodeUnpublishVolume"))
	must.Eq(t, 1, count("NodeUnstageVolume"))
	must.Eq(t, 0, m.locks.Len(), must.Sprint("no lock is left behind"))
}

func TestManager_Restart_KeepsUsage(t *testing.T) {
	p := csitest.StartMockDriver(t, csitest.MockOptions{ExtraArgs: []string{"-v=5"}})
	dataDir := t.TempDir()
	r := newRegistry(t, node("mock", p.Socket))
	ctx := context.Background()
	count := func(method string) int { return len(mockCalls(t, p, method)) }

	m1 := newManager(t, dataDir, r)
	r1, err := m1.MountVolume(ctx, mountReq("a1"))
	must.NoError(t, err)
	_, err = m1.MountVolume(ctx, mountReq("a2"))
	must.NoError(t, err)

	// The client restarts: a new manager on the same data dir.
	m2 := newManager(t, dataDir, r)
	again, err := m2.MountVolume(ctx, mountReq("a1"))
	must.NoError(t, err)
	must.Eq(t, r1, again, must.Sprint("a restored alloc gets its path back, with no call"))
	_, err = m2.MountVolume(ctx, mountReq("a3"))
	must.NoError(t, err)
	must.Eq(t, 1, count("NodeStageVolume"), must.Sprint("still staged after the restart"))

	must.NoError(t, m2.UnmountVolume(ctx, "a1", "data", "mock", "1"))
	must.NoError(t, m2.UnmountVolume(ctx, "a2", "data", "mock", "1"))
	must.Eq(t, 0, count("NodeUnstageVolume"), must.Sprint("a3 still uses it"))

	m3 := newManager(t, dataDir, r)
	must.NoError(t, m3.UnmountVolume(ctx, "a3", "data", "mock", "1"))
	must.Eq(t, 3, count("NodeUnpublishVolume"))
	must.Eq(t, 1, count("NodeUnstageVolume"), must.Sprint("unstaged after the last alloc"))
	must.MapEmpty(t, newManager(t, dataDir, r).usage)
}

func TestManager_UsageFile(t *testing.T) {
	// NodePublishVolume fails finally for alloc a2, once.
	p := csitest.StartMockDriver(t, csitest.MockOptions{ExtraArgs: []string{"-v=5"}, Hooks: `globals: |
  publishes = 0;
nodePublishVolumeStart: |
  publishes = publishes + 1;
  if (publishes == 2) { INTERNAL; } else { OK; };
`})
	dataDir := t.TempDir()
	m := newManager(t, dataDir, newRegistry(t, node("mock", p.Socket)))
	ctx := context.Background()
	host := filepath.Join(dataDir, "client", "csi", "mock")

	_, err := m.MountVolume(ctx, mountReq("a1"))
	must.NoError(t, err)
	ro := mountReq("a2")
	ro.ReadOnly = true
	_, err = m.MountVolume(ctx, ro)
	must.ErrorContains(t, err, `volume "data" for alloc a2: NodePublishVolume with plugin "mock": Internal: `)

	target := func(alloc string) string { return filepath.Join(host, "per-alloc", alloc, "data") }
	want := usageFile{Version: 1, Volumes: []*volumeUsage{{
		PluginID: "mock", VolumeID: "data", ExternalVolumeID: "1", AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem,
		Stage: stageStaged, StagingPath: filepath.Join(host, "staging", "data"), PluginStagingPath: filepath.Join(host, "staging", "data"),
		Allocs: map[string]*allocUsage{
			"a1": {State: publishPublished, AccessMode: structs.CSIVolumeAccessModeMultiNodeMultiWriter, TargetPath: target("a1"), PluginTargetPath: target("a1")},
			// The failed mount is kept: a2 is a user until it is unmounted.
			"a2": {State: publishPublishing, AccessMode: structs.CSIVolumeAccessModeMultiNodeMultiWriter, ReadOnly: true,
				TargetPath: target("a2"), PluginTargetPath: target("a2")},
		},
	}}}
	must.Eq(t, want, readUsage(t, dataDir))

	raw, err := os.ReadFile(filepath.Join(dataDir, "client", "csi", "volumes.json"))
	must.NoError(t, err)
	must.StrNotContains(t, string(raw), "hunter2", must.Sprint("no secret or mount flag is written"))
	must.StrNotContains(t, string(raw), "/dev/mock", must.Sprint("no publish context is written"))
	fi, err := os.Stat(filepath.Join(dataDir, "client", "csi", "volumes.json"))
	must.NoError(t, err)
	must.Eq(t, os.FileMode(0o600), fi.Mode().Perm())
	entries, err := os.ReadDir(filepath.Join(dataDir, "client", "csi"))
	must.NoError(t, err)
	for _, e := range entries {
		must.False(t, strings.HasPrefix(e.Name(), "."), must.Sprintf("no temp file left: %s", e.Name()))
	}

	// The retried mount publishes; a different read-only flag for the
	// same alloc is refused.
	_, err = m.MountVolume(ctx, ro)
	must.NoError(t, err)
	must.Eq(t, publishPublished, readUsage(t, dataDir).Volumes[0].Allocs["a2"].State)
	_, err = m.MountVolume(ctx, mountReq("a2"))
	must.ErrorIs(t, err, ErrConflict)
	must.ErrorContains(t, err, `volume "data" for alloc a2: check usage with plugin "mock": volumemanager: conflicts with the volume's use on this node: `+
		`it is mounted for this alloc as multi-node-multi-writer read_only=true, not multi-node-multi-writer read_only=false`)
}

func TestManager_FinishesUnmount(t *testing.T) {
	// NodeUnstageVolume fails finally, once; NodeUnpublishVolume answers
	// UNAVAILABLE until the retries run out, once.
	p := csitest.StartMockDriver(t, csitest.MockOptions{ExtraArgs: []string{"-v=5"}, Hooks: `globals: |
  unstages = 0;
  unpublishes = 0;
nodeUnstageVolumeStart: |
  unstages = unstages + 1;
  if (unstages == 1) { INTERNAL; } else { OK; };
nodeUnpublishVolumeStart: |
  unpublishes = unpublishes + 1;
  if (unpublishes <= 3) { UNAVAILABLE; } else { OK; };
`})
	dataDir := t.TempDir()
	r := newRegistry(t, node("mock", p.Socket))
	m := newManager(t, dataDir, r)
	ctx := context.Background()
	_, err := m.MountVolume(ctx, mountReq("a1"))
	must.NoError(t, err)

	err = m.UnmountVolume(ctx, "a1", "data", "mock", "1")
	must.ErrorContains(t, err, `volume "data" for alloc a1: NodeUnpublishVolume with plugin "mock": Unavailable: `)
	must.False(t, csi.IsFinal(err), must.Sprint("retry it"))
	must.SliceLen(t, 3, mockCalls(t, p, "NodeUnpublishVolume"), must.Sprint("tried MaxAttempts times"))
	must.Eq(t, publishUnpublishing, readUsage(t, dataDir).Volumes[0].Allocs["a1"].State)
	_, err = m.MountVolume(ctx, mountReq("a1"))
	must.ErrorIs(t, err, ErrConflict, must.Sprint("no mount while its unmount is unfinished"))

	err = m.UnmountVolume(ctx, "a1", "data", "mock", "1")
	var ve *Error
	must.True(t, errors.As(err, &ve))
	must.Eq(t, Error{VolumeID: "data", AllocID: "a1", PluginID: "mock", Step: "NodeUnstageVolume", Err: ve.Err}, *ve)
	must.Eq(t, csi.CodeInternal, csi.CodeOf(err))
	u := readUsage(t, dataDir).Volumes[0]
	must.MapEmpty(t, u.Allocs)
	must.Eq(t, stageUnstaging, u.Stage)

	// After a restart, asking again (the alloc is gone from the record)
	// finishes the unstage.
	m2 := newManager(t, dataDir, r)
	must.NoError(t, m2.UnmountVolume(ctx, "a1", "data", "mock", "1"))
	must.SliceLen(t, 2, mockCalls(t, p, "NodeUnstageVolume"))
	must.SliceEmpty(t, readUsage(t, dataDir).Volumes)
}

func TestManager_Restage_AfterUnfinishedUnstage(t *testing.T) {
	p := csitest.StartMockDriver(t, csitest.MockOptions{ExtraArgs: []string{"-v=5"}, Hooks: `nodeUnstageVolumeStart: |
  INTERNAL;
`})
	dataDir := t.TempDir()
	m := newManager(t, dataDir, newRegistry(t, node("mock", p.Socket)))
	ctx := context.Background()
	_, err := m.MountVolume(ctx, mountReq("a1"))
	must.NoError(t, err)
	must.Error(t, m.UnmountVolume(ctx, "a1", "data", "mock", "1"))

	// A new alloc stages the volume again (it may be half unstaged).
	_, err = m.MountVolume(ctx, mountReq("a2"))
	must.NoError(t, err)
	must.SliceLen(t, 2, mockCalls(t, p, "NodeStageVolume"))
	u := readUsage(t, dataDir).Volumes[0]
	must.Eq(t, stageStaged, u.Stage)
	must.MapContainsKeys(t, u.Allocs, []string{"a2"})
}

func TestManager_Retry(t *testing.T) {
	p := csitest.StartMockDriver(t, csitest.MockOptions{ExtraArgs: []string{"-v=5"}, Hooks: `globals: |
  stages = 0;
nodeStageVolumeStart: |
  stages = stages + 1;
  if (stages <= 2) { ABORTED; } else { OK; };
`})
	m := newManager(t, t.TempDir(), newRegistry(t, node("mock", p.Socket)))
	_, err := m.MountVolume(context.Background(), mountReq("a1"))
	must.NoError(t, err)
	must.SliceLen(t, 3, mockCalls(t, p, "NodeStageVolume"), must.Sprint("ABORTED is retried"))
}

func TestManager_MountVolume_Errors(t *testing.T) {
	p := csitest.StartMockDriver(t, csitest.MockOptions{ExtraArgs: []string{"-v=5"}})
	ctrl := csitest.StartMockDriver(t, csitest.MockOptions{})
	gone := filepath.Join(t.TempDir(), "gone.sock")
	r := newRegistry(t, node("mock", p.Socket), node("gone", gone),
		&dynamicplugins.PluginInfo{ID: "ctrl", Type: structs.CSIPluginTypeController, Socket: ctrl.Socket})
	dataDir := t.TempDir()
	m := newManager(t, dataDir, r)
	ctx := context.Background()
	with := func(f func(*MountRequest)) *MountRequest { req := mountReq("a1"); f(req); return req }

	cases := []struct {
		name string
		req  *MountRequest
		is   error
		msg  string
	}{
		{"nil", nil, ErrInvalidRequest, "no mount request"},
		{"no alloc", with(func(r *MountRequest) { r.AllocID = "" }), ErrInvalidRequest, `volume "data" for alloc : volumemanager: invalid request: the alloc ID is required`},
		{"dot-dot volume", with(func(r *MountRequest) { r.VolumeID = ".." }), ErrInvalidRequest, `volume ID ".." cannot name a directory`},
		{"slash in alloc", with(func(r *MountRequest) { r.AllocID = "a/b" }), ErrInvalidRequest, `alloc ID "a/b" cannot name a directory`},
		{"reserved plugin ID", with(func(r *MountRequest) { r.PluginID = "volumes.json" }), ErrInvalidRequest, `plugin ID "volumes.json" is reserved`},
		{"no external ID", with(func(r *MountRequest) { r.ExternalVolumeID = "" }), ErrInvalidRequest, "the external volume ID is required"},
		{"bad access mode", with(func(r *MountRequest) { r.AccessMode = "everyone" }), ErrInvalidRequest, `access_mode "everyone"`},
		{"plugin not registered", with(func(r *MountRequest) { r.PluginID = "nope" }), ErrPluginNotRunning,
			`volume "data" for alloc a1: find plugin with plugin "nope": volumemanager: plugin not running on this node`},
		{"controller only", with(func(r *MountRequest) { r.PluginID = "ctrl" }), ErrPluginNotRunning, "it runs only a controller instance here"},
		{"socket gone", with(func(r *MountRequest) { r.PluginID = "gone" }), csi.ErrNoSocket,
			`volume "data" for alloc a1: dial with plugin "gone": csi: no socket at the plugin's path`},
		{"unknown volume", with(func(r *MountRequest) { r.ExternalVolumeID = "99"; r.VolumeID = "lost" }), nil,
			`volume "lost" for alloc a1: NodeStageVolume with plugin "mock": NotFound: 99`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := m.MountVolume(ctx, tc.req)
			must.Nil(t, res)
			if tc.is != nil {
				must.ErrorIs(t, err, tc.is)
			}
			must.ErrorContains(t, err, tc.msg)
		})
	}

	// The volume is in use with one external ID and attachment mode.
	_, err := m.MountVolume(ctx, mountReq("a1"))
	must.NoError(t, err)
	_, err = m.MountVolume(ctx, with(func(r *MountRequest) { r.AllocID, r.ExternalVolumeID = "a2", "2" }))
	must.ErrorIs(t, err, ErrConflict)
	must.ErrorContains(t, err, `it is in use here as external volume "1", not "2"`)
	_, err = m.MountVolume(ctx, with(func(r *MountRequest) { r.AllocID, r.AttachmentMode = "a2", structs.CSIVolumeAttachmentModeBlockDevice }))
	must.ErrorIs(t, err, ErrConflict)
	must.ErrorContains(t, err, "it is in use here as file-system, not block-device")
	must.NoError(t, m.UnmountVolume(ctx, "a1", "data", "mock", "2"), must.Sprint("external volume 2 is not in use here"))
	must.SliceEmpty(t, mockCalls(t, p, "NodeUnpublishVolume"), must.Sprint("and volume 1 is left alone"))

	for _, tc := range []struct{ alloc, vol, plugin, msg string }{
		{"", "data", "mock", "the alloc ID is required"},
		{"a1", "", "mock", "the volume ID is required"},
		{"a1", "data", "", "the plugin ID is required"},
		{"a1", ".", "mock", `volume ID "." cannot name a directory`},
	} {
		err := m.UnmountVolume(ctx, tc.alloc, tc.vol, tc.plugin, "")
		must.ErrorIs(t, err, ErrInvalidRequest)
		must.ErrorContains(t, err, tc.msg)
	}

	// A plugin that stopped cannot unmount: retry when it is back.
	must.NoError(t, r.Deregister("mock/node", ""))
	err = m.UnmountVolume(ctx, "a1", "data", "mock", "1")
	must.ErrorIs(t, err, ErrPluginNotRunning)
	must.NoError(t, r.Register(node("mock", p.Socket)))
	must.NoError(t, m.UnmountVolume(ctx, "a1", "data", "mock", "1"))
	// The failed mount of "lost" is recorded until it is undone: the
	// plugin's NOT_FOUND for a volume it does not know is undone.
	left := readUsage(t, dataDir).Volumes
	must.SliceLen(t, 1, left)
	must.Eq(t, "lost", left[0].VolumeID)
	must.Eq(t, stageStaging, left[0].Stage)
	must.Eq(t, publishPublishing, left[0].Allocs["a1"].State)
	must.NoError(t, m.UnmountVolume(ctx, "a1", "lost", "mock", "99"))
	must.SliceEmpty(t, readUsage(t, dataDir).Volumes)
}
