package volumemanager

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/client/csi"
	"github.com/berth-csi/berth/client/csitest"
	"github.com/berth-csi/berth/client/dynamicplugins"
	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/structs"
)

// expandReq asks for volume data (external extID of plugin) to be
// expanded to capacityMin.
func expandReq(plugin, extID string, capacityMin int64) *ExpandRequest {
	return &ExpandRequest{VolumeID: "data", ExternalVolumeID: extID, PluginID: plugin, CapacityMin: capacityMin}
}

// TestManager_ExpandVolume_Hostpath expands a volume in use on a real
// berth-hostpath that sees the node's dirs at its mount_dir (a symlink
// here, a bind mount in a plugin task): the plugin is told the paths as
// it staged and published the volume at, through its view, and refuses
// any other path. With -disable-stage, the published path alone.
func TestManager_ExpandVolume_Hostpath(t *testing.T) {
	requireRoot(t)
	for _, tc := range []struct {
		name  string
		args  []string
		stage bool
	}{
		{"staged and published", nil, true},
		{"-disable-stage", []string{"-disable-stage"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := csitest.StartHostpath(t, tc.args...)
			extID, pc := hostpathVolume(t, p, true)
			dataDir := t.TempDir()
			host := PluginHostDir(dataDir, "hostpath")
			must.NoError(t, os.MkdirAll(host, 0o750))
			mountDir := filepath.Join(t.TempDir(), "csi")
			must.NoError(t, os.Symlink(host, mountDir))
			m := newManager(t, dataDir, newRegistry(t, &dynamicplugins.PluginInfo{ID: "hostpath", Type: structs.CSIPluginTypeMonolith,
				Socket: p.Socket, Source: dynamicplugins.SourceTask, AllocID: "plugin-alloc", MountDir: mountDir}))
			unmountAllOnCleanup(t, m)
			ctx := context.Background()

			res, err := m.ExpandVolume(ctx, expandReq("hostpath", extID, 1<<20))
			must.NoError(t, err)
			must.Eq(t, &ExpandResult{}, res, must.Sprint("not in use here: nothing called"))

			for _, alloc := range []string{"a2", "a1"} {
				_, err = m.MountVolume(ctx, &MountRequest{AllocID: alloc, VolumeID: "data", ExternalVolumeID: extID, PluginID: "hostpath",
					AccessMode: structs.CSIVolumeAccessModeMultiNodeMultiWriter, AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem,
					PublishContext: pc})
				must.NoError(t, err)
			}

			// Not grown by the controller yet: the plugin refuses, a final error.
			_, err = m.ExpandVolume(ctx, expandReq("hostpath", extID, 4<<20))
			must.Eq(t, csi.CodeOutOfRange, csi.CodeOf(err), must.Sprint(err))
			must.True(t, csi.IsFinal(err))
			must.StrHasPrefix(t, `volume "data" for alloc a1: NodeExpandVolume with plugin "hostpath": OutOfRange: `, err.Error())

			cc, err := csi.Dial(ctx, p.Socket, testlog.Logger(t, "csi"), csi.WithPluginID("hostpath"))
			must.NoError(t, err)
			defer cc.Close()
			grown, err := cc.ControllerExpandVolume(ctx, &csi.ExpandVolumeRequest{ExternalVolumeID: extID, CapacityMin: 4 << 20})
			must.NoError(t, err)
			must.True(t, grown.NodeExpansionRequired)

			res, err = m.ExpandVolume(ctx, expandReq("hostpath", extID, 4<<20))
			must.NoError(t, err)
			want := &ExpandResult{InUse: true, Called: true, CapacityBytes: 4 << 20,
				VolumePath: mountDir + "/per-alloc/a1/data"}
			if tc.stage {
				want.StagingPath = mountDir + "/staging/data"
			}
			must.Eq(t, want, res, must.Sprint("the first alloc's published path, as the plugin sees it"))
			log, err := os.ReadFile(p.LogPath)
			must.NoError(t, err)
			must.StrContains(t, string(log), "volume expanded on the node: volume_id="+extID+" volume_path="+want.VolumePath)

			// Another volume under the same ID is not this one: nothing to do.
			res, err = m.ExpandVolume(ctx, expandReq("hostpath", "vol-other", 4<<20))
			must.NoError(t, err)
			must.False(t, res.InUse)

			for _, alloc := range []string{"a1", "a2"} {
				must.NoError(t, m.UnmountVolume(ctx, alloc, "data", "hostpath", extID))
			}
			res, err = m.ExpandVolume(ctx, expandReq("hostpath", extID, 4<<20))
			must.NoError(t, err)
			must.False(t, res.InUse, must.Sprint("unmounted: nothing to expand"))
		})
	}
}

// TestManager_ExpandVolume_Mock checks the request the plugin gets (the
// mock logs it): the host paths of a plugin without a mount_dir, the
// capacity range and the capability in use (its spec predates the
// secrets of NodeExpandVolume, which it drops); a retryable
// failure is retried; a plugin without the node EXPAND_VOLUME capability
// is not called.
func TestManager_ExpandVolume_Mock(t *testing.T) {
	p := csitest.StartMockDriver(t, csitest.MockOptions{ExtraArgs: []string{"-v=5", "-node-expand-required"}, Hooks: `globals: |
  expands = 0;
nodeExpandVolumeStart: |
  expands = expands + 1;
  if (expands == 1) { UNAVAILABLE; } else { OK; };
`})
	dataDir := t.TempDir()
	m := newManager(t, dataDir, newRegistry(t, node("mock", p.Socket)))
	ctx := context.Background()
	_, err := m.MountVolume(ctx, mountReq("a1"))
	must.NoError(t, err)

	req := expandReq("mock", "1", 2<<30)
	req.CapacityMax = 4 << 30
	res, err := m.ExpandVolume(ctx, req)
	must.NoError(t, err)
	host := PluginHostDir(dataDir, "mock")
	must.Eq(t, &ExpandResult{InUse: true, Called: true, CapacityBytes: 2 << 30,
		VolumePath: host + "/per-alloc/a1/data", StagingPath: host + "/staging/data"}, res)
	calls := mockCalls(t, p, "NodeExpandVolume")
	must.SliceLen(t, 2, calls, must.Sprint("UNAVAILABLE is retried"))
	for _, part := range []string{`"volume_id":"1"`, `"volume_path":"` + host + `/per-alloc/a1/data"`,
		`"staging_target_path":"` + host + `/staging/data"`, `"capacity_range":{"required_bytes":2147483648,"limit_bytes":4294967296}`,
		`"access_mode":{"mode":5}`} {
		must.StrContains(t, calls[1], part)
	}

	// Without the node capability: in use, nothing called.
	plain := csitest.StartMockDriver(t, csitest.MockOptions{ExtraArgs: []string{"-v=5"}})
	m2 := newManager(t, t.TempDir(), newRegistry(t, node("mock", plain.Socket)))
	_, err = m2.MountVolume(ctx, mountReq("a1"))
	must.NoError(t, err)
	res, err = m2.ExpandVolume(ctx, expandReq("mock", "1", 2<<30))
	must.NoError(t, err)
	must.True(t, res.InUse)
	must.False(t, res.Called)
	must.SliceEmpty(t, mockCalls(t, plain, "NodeExpandVolume"))
}

func TestManager_ExpandVolume_Invalid(t *testing.T) {
	m := newManager(t, t.TempDir(), newRegistry(t))
	for _, tc := range []struct {
		name string
		req  *ExpandRequest
		msg  string
	}{
		{"nil", nil, "no expand request"},
		{"no volume", &ExpandRequest{ExternalVolumeID: "1", PluginID: "mock", CapacityMin: 1}, "volume ID is required"},
		{"no external ID", &ExpandRequest{VolumeID: "data", PluginID: "mock", CapacityMin: 1}, "external volume ID is required"},
		{"no capacity", expandReq("mock", "1", 0), "capacity range [0, 0]"},
		{"max below min", &ExpandRequest{VolumeID: "data", ExternalVolumeID: "1", PluginID: "mock", CapacityMin: 2, CapacityMax: 1},
			"capacity range [2, 1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := m.ExpandVolume(context.Background(), tc.req)
			must.ErrorIs(t, err, ErrInvalidRequest)
			must.True(t, strings.Contains(err.Error(), tc.msg), must.Sprint(err))
		})
	}
}
