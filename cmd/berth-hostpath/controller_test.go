package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/shoenig/test/must"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
)

func TestCreateVolume_Idempotency(t *testing.T) {
	ctx := context.Background()
	_, cs, _ := services(newTestDriver(t, testConfig(t)))
	caps := []*csi.VolumeCapability{mountCap(singleWriter)}
	first, err := cs.CreateVolume(ctx, &csi.CreateVolumeRequest{
		Name: "data", VolumeCapabilities: caps, Parameters: map[string]string{"tier": "fast"},
		CapacityRange: &csi.CapacityRange{RequiredBytes: 10 << 20, LimitBytes: 10 << 20},
	})
	must.NoError(t, err)
	must.Eq(t, int64(10<<20), first.Volume.CapacityBytes)

	ok := []struct {
		name string
		r    *csi.CapacityRange
		caps []*csi.VolumeCapability
	}{
		{"same range", &csi.CapacityRange{RequiredBytes: 10 << 20, LimitBytes: 10 << 20}, caps},
		{"smaller required", &csi.CapacityRange{RequiredBytes: 1 << 20}, caps},
		{"only a larger limit", &csi.CapacityRange{LimitBytes: 1 << 30}, caps},
		{"no range", nil, caps},
		{"other access modes", nil, []*csi.VolumeCapability{mountCap(csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER)}},
	}
	for _, tc := range ok {
		t.Run("compatible/"+tc.name, func(t *testing.T) {
			resp, err := cs.CreateVolume(ctx, &csi.CreateVolumeRequest{
				Name: "data", VolumeCapabilities: tc.caps, CapacityRange: tc.r, Parameters: map[string]string{"tier": "fast"}})
			must.NoError(t, err)
			must.Eq(t, first.Volume.VolumeId, resp.Volume.VolumeId)
			must.Eq(t, first.Volume.CapacityBytes, resp.Volume.CapacityBytes)
		})
	}

	snap, err := cs.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: first.Volume.VolumeId})
	must.NoError(t, err)
	conflicts := []struct {
		name   string
		req    *csi.CreateVolumeRequest
		reason string
	}{
		{"larger required", &csi.CreateVolumeRequest{CapacityRange: &csi.CapacityRange{RequiredBytes: 20 << 20},
			Parameters: map[string]string{"tier": "fast"}}, "capacity 10485760 bytes, outside the requested range (required 20971520"},
		{"smaller limit", &csi.CreateVolumeRequest{CapacityRange: &csi.CapacityRange{LimitBytes: 1 << 20},
			Parameters: map[string]string{"tier": "fast"}}, "limit 1048576"},
		{"other parameters", &csi.CreateVolumeRequest{Parameters: map[string]string{"tier": "slow"}}, "other parameters"},
		{"no parameters", &csi.CreateVolumeRequest{}, "other parameters"},
		{"a content source", &csi.CreateVolumeRequest{Parameters: map[string]string{"tier": "fast"},
			VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
				Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: snap.Snapshot.SnapshotId}}}}, "another content source"},
	}
	for _, tc := range conflicts {
		t.Run("incompatible/"+tc.name, func(t *testing.T) {
			tc.req.Name, tc.req.VolumeCapabilities = "data", caps
			_, err := cs.CreateVolume(ctx, tc.req)
			mustCode(t, err, codes.AlreadyExists, `volume "data" already exists as `+first.Volume.VolumeId, tc.reason)
		})
	}
}

func TestCreateVolume_BadRequests(t *testing.T) {
	ctx := context.Background()
	_, cs, _ := services(newTestDriver(t, testConfig(t)))
	caps := []*csi.VolumeCapability{mountCap(singleWriter)}
	block := &csi.VolumeCapability{AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: singleWriter}}
	cases := []struct {
		name  string
		req   *csi.CreateVolumeRequest
		code  codes.Code
		parts []string
	}{
		{"no name", &csi.CreateVolumeRequest{VolumeCapabilities: caps}, codes.InvalidArgument, []string{"name is missing"}},
		{"no capabilities", &csi.CreateVolumeRequest{Name: "v"}, codes.InvalidArgument, []string{"volume_capabilities is missing"}},
		{"block and mount", &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: []*csi.VolumeCapability{block, caps[0]}},
			codes.InvalidArgument, []string{"mix the block and mount access types"}},
		{"no access mode", &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: []*csi.VolumeCapability{
			{AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}}}}},
			codes.InvalidArgument, []string{"no access mode"}},
		{"unknown mount flag", &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: []*csi.VolumeCapability{mountCap(singleWriter, "data=journal")}},
			codes.InvalidArgument, []string{`mount flag 1 of 1 is not supported`}},
		{"negative size", &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: caps, CapacityRange: &csi.CapacityRange{RequiredBytes: -1}},
			codes.InvalidArgument, []string{"negative"}},
		{"required above limit", &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: caps,
			CapacityRange: &csi.CapacityRange{RequiredBytes: 2, LimitBytes: 1}}, codes.OutOfRange, []string{"required_bytes 2 exceeds limit_bytes 1"}},
		{"mutable parameters", &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: caps, MutableParameters: map[string]string{"a": "b"}},
			codes.InvalidArgument, []string{"mutable_parameters"}},
		{"unknown snapshot", &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: caps, VolumeContentSource: &csi.VolumeContentSource{
			Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: "snap-x"}}}},
			codes.NotFound, []string{`source snapshot "snap-x" not found`}},
		{"unknown volume", &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: caps, VolumeContentSource: &csi.VolumeContentSource{
			Type: &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: "vol-x"}}}},
			codes.NotFound, []string{`source volume "vol-x" not found`}},
		{"empty source", &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: caps, VolumeContentSource: &csi.VolumeContentSource{}},
			codes.InvalidArgument, []string{"names no snapshot or volume"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cs.CreateVolume(ctx, tc.req)
			mustCode(t, err, tc.code, tc.parts...)
		})
	}
	list, err := cs.ListVolumes(ctx, &csi.ListVolumesRequest{})
	must.NoError(t, err)
	must.SliceEmpty(t, list.Entries)
}

func TestCreateVolume_FromSnapshotAndClone(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	_, cs, _ := services(newTestDriver(t, cfg))
	src := createVolume(t, cs, "src", 4<<20)
	srcDir := filepath.Join(cfg.Root, "volumes", src.VolumeId)
	must.NoError(t, os.MkdirAll(filepath.Join(srcDir, "sub"), 0o755))
	must.NoError(t, os.WriteFile(filepath.Join(srcDir, "sub", "file"), []byte("before"), 0o640))
	must.NoError(t, os.Symlink("sub/file", filepath.Join(srcDir, "link")))

	snap, err := cs.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "snap", SourceVolumeId: src.VolumeId})
	must.NoError(t, err)
	must.True(t, snap.Snapshot.ReadyToUse)
	must.Eq(t, int64(4<<20), snap.Snapshot.SizeBytes)
	// the snapshot is a point in time: later writes do not reach it
	must.NoError(t, os.WriteFile(filepath.Join(srcDir, "sub", "file"), []byte("after"), 0o640))

	fromSnap := &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
		Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: snap.Snapshot.SnapshotId}}}
	fromVol := &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{
		Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: src.VolumeId}}}
	for name, tc := range map[string]struct {
		source *csi.VolumeContentSource
		want   string
	}{
		"from snapshot": {fromSnap, "before"},
		"clone":         {fromVol, "after"},
	} {
		t.Run(name, func(t *testing.T) {
			resp, err := cs.CreateVolume(ctx, &csi.CreateVolumeRequest{
				Name: name, VolumeCapabilities: []*csi.VolumeCapability{mountCap(singleWriter)}, VolumeContentSource: tc.source})
			must.NoError(t, err)
			must.Eq(t, int64(4<<20), resp.Volume.CapacityBytes) // no range: the source's size
			must.NotNil(t, resp.Volume.ContentSource)
			dir := filepath.Join(cfg.Root, "volumes", resp.Volume.VolumeId)
			data, err := os.ReadFile(filepath.Join(dir, "link"))
			must.NoError(t, err)
			must.Eq(t, tc.want, string(data))
			fi, err := os.Stat(filepath.Join(dir, "sub", "file"))
			must.NoError(t, err)
			must.Eq(t, os.FileMode(0o640), fi.Mode().Perm())
			fi, err = os.Stat(dir)
			must.NoError(t, err)
			must.Eq(t, os.FileMode(0o777), fi.Mode().Perm(), must.Sprint("a copy's dir is open to every user too"))
		})
	}

	t.Run("smaller than the source", func(t *testing.T) {
		_, err := cs.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "small", VolumeContentSource: fromSnap,
			VolumeCapabilities: []*csi.VolumeCapability{mountCap(singleWriter)}, CapacityRange: &csi.CapacityRange{LimitBytes: 1 << 20}})
		mustCode(t, err, codes.OutOfRange, "the source holds 4194304 bytes, more than limit_bytes 1048576")
	})
	t.Run("larger than the source", func(t *testing.T) {
		resp, err := cs.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "large", VolumeContentSource: fromSnap,
			VolumeCapabilities: []*csi.VolumeCapability{mountCap(singleWriter)}, CapacityRange: &csi.CapacityRange{RequiredBytes: 8 << 20}})
		must.NoError(t, err)
		must.Eq(t, int64(8<<20), resp.Volume.CapacityBytes)
	})
	t.Run("snapshots outlive their volume", func(t *testing.T) {
		_, err := cs.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: src.VolumeId})
		must.NoError(t, err)
		resp, err := cs.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "late", VolumeContentSource: fromSnap,
			VolumeCapabilities: []*csi.VolumeCapability{mountCap(singleWriter)}})
		must.NoError(t, err)
		_, err = os.Stat(filepath.Join(cfg.Root, "volumes", resp.Volume.VolumeId, "sub", "file"))
		must.NoError(t, err)
	})
}

// TestCreateVolume_Modes: a volume's dir is 0777 whatever the umask, so a
// workload writes into it as any user; the dirs that hold volumes and
// snapshots are 0700, also on a root an older version laid out.
func TestCreateVolume_Modes(t *testing.T) {
	cfg := testConfig(t)
	must.NoError(t, os.MkdirAll(filepath.Join(cfg.Root, "volumes"), 0o755))
	old := unix.Umask(0o077)
	_, cs, _ := services(newTestDriver(t, cfg))
	v := createVolume(t, cs, "data", 1<<20)
	unix.Umask(old)
	for dir, want := range map[string]os.FileMode{
		filepath.Join(cfg.Root, "volumes", v.VolumeId): 0o777,
		filepath.Join(cfg.Root, "volumes"):             0o700,
		filepath.Join(cfg.Root, "snapshots"):           0o700,
	} {
		fi, err := os.Stat(dir)
		must.NoError(t, err)
		must.Eq(t, want, fi.Mode().Perm(), must.Sprint(dir))
	}
}

func TestCreateSnapshot_Idempotency(t *testing.T) {
	ctx := context.Background()
	_, cs, _ := services(newTestDriver(t, testConfig(t)))
	a := createVolume(t, cs, "a", 0)
	b := createVolume(t, cs, "b", 0)
	first, err := cs.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: a.VolumeId})
	must.NoError(t, err)

	again, err := cs.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: a.VolumeId})
	must.NoError(t, err)
	must.Eq(t, first.Snapshot.SnapshotId, again.Snapshot.SnapshotId)
	must.Eq(t, first.Snapshot.CreationTime.AsTime(), again.Snapshot.CreationTime.AsTime())

	_, err = cs.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: b.VolumeId})
	mustCode(t, err, codes.AlreadyExists, `snapshot "s" already exists as `+first.Snapshot.SnapshotId, "of volume "+a.VolumeId+", not of "+b.VolumeId)

	_, err = cs.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "t", SourceVolumeId: "vol-gone"})
	mustCode(t, err, codes.NotFound, "source volume vol-gone not found")
	_, err = cs.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{SourceVolumeId: a.VolumeId})
	mustCode(t, err, codes.InvalidArgument, "name is missing")
	_, err = cs.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "t"})
	mustCode(t, err, codes.InvalidArgument, "source_volume_id is missing")

	for range 2 {
		_, err = cs.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: first.Snapshot.SnapshotId})
		must.NoError(t, err)
	}
	_, err = cs.GetSnapshot(ctx, &csi.GetSnapshotRequest{SnapshotId: first.Snapshot.SnapshotId})
	mustCode(t, err, codes.NotFound, first.Snapshot.SnapshotId)
	_, err = cs.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{})
	mustCode(t, err, codes.InvalidArgument, "snapshot_id is missing")
}

func TestDeleteVolume(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	_, cs, _ := services(newTestDriver(t, cfg))
	v := createVolume(t, cs, "v", 0)
	_, err := cs.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{
		VolumeId: v.VolumeId, NodeId: cfg.NodeID, VolumeCapability: mountCap(singleWriter)})
	must.NoError(t, err)

	_, err = cs.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: v.VolumeId})
	mustCode(t, err, codes.FailedPrecondition, "controller-published to node node-1")

	_, err = cs.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: v.VolumeId, NodeId: cfg.NodeID})
	must.NoError(t, err)
	for range 2 {
		_, err = cs.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: v.VolumeId})
		must.NoError(t, err)
	}
	_, err = os.Stat(filepath.Join(cfg.Root, "volumes", v.VolumeId))
	must.ErrorIs(t, err, os.ErrNotExist)
	_, err = cs.DeleteVolume(ctx, &csi.DeleteVolumeRequest{})
	mustCode(t, err, codes.InvalidArgument, "volume_id is missing")
	// the name is free again, for a new volume
	again := createVolume(t, cs, "v", 0)
	must.NotEq(t, v.VolumeId, again.VolumeId)
}

func TestControllerPublishVolume(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	cfg.MaxVolumes = 2
	_, cs, _ := services(newTestDriver(t, cfg))
	v1, v2, v3 := createVolume(t, cs, "v1", 0), createVolume(t, cs, "v2", 0), createVolume(t, cs, "v3", 0)
	pub := func(id, node string, readonly bool) (*csi.ControllerPublishVolumeResponse, error) {
		return cs.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{
			VolumeId: id, NodeId: node, VolumeCapability: mountCap(singleWriter), Readonly: readonly})
	}

	resp, err := pub(v1.VolumeId, cfg.NodeID, true)
	must.NoError(t, err)
	must.Eq(t, map[string]string{"readonly": "true"}, resp.PublishContext)
	resp, err = pub(v1.VolumeId, cfg.NodeID, true)
	must.NoError(t, err, must.Sprint("a repeat is OK"))
	must.Eq(t, map[string]string{"readonly": "true"}, resp.PublishContext)

	_, err = pub(v1.VolumeId, cfg.NodeID, false)
	mustCode(t, err, codes.AlreadyExists, "already published to node", "readonly=true")
	_, err = pub(v1.VolumeId, "node-2", false)
	mustCode(t, err, codes.NotFound, `node "node-2" not found`, `serves node "node-1"`)
	_, err = pub("vol-gone", cfg.NodeID, false)
	mustCode(t, err, codes.NotFound, "volume vol-gone not found")

	_, err = pub(v2.VolumeId, cfg.NodeID, false)
	must.NoError(t, err)
	_, err = pub(v3.VolumeId, cfg.NodeID, false)
	mustCode(t, err, codes.ResourceExhausted, "already has 2 volumes published")

	// unpublish is idempotent, also for unknown volumes and nodes
	for _, req := range []*csi.ControllerUnpublishVolumeRequest{
		{VolumeId: v2.VolumeId, NodeId: cfg.NodeID},
		{VolumeId: v2.VolumeId, NodeId: cfg.NodeID},
		{VolumeId: v2.VolumeId, NodeId: "node-2"},
		{VolumeId: "vol-gone", NodeId: cfg.NodeID},
		{VolumeId: v1.VolumeId}, // every node
	} {
		_, err := cs.ControllerUnpublishVolume(ctx, req)
		must.NoError(t, err)
	}
	_, err = pub(v3.VolumeId, cfg.NodeID, false)
	must.NoError(t, err, must.Sprint("room again after unpublish"))
	got, err := cs.ControllerGetVolume(ctx, &csi.ControllerGetVolumeRequest{VolumeId: v1.VolumeId})
	must.NoError(t, err)
	must.SliceEmpty(t, got.Status.PublishedNodeIds)
}

func TestController_DisableAttach(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	cfg.DisableAttach = true
	_, cs, _ := services(newTestDriver(t, cfg))
	caps, err := cs.ControllerGetCapabilities(ctx, &csi.ControllerGetCapabilitiesRequest{})
	must.NoError(t, err)
	for _, c := range caps.Capabilities {
		switch c.GetRpc().GetType() {
		case csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME,
			csi.ControllerServiceCapability_RPC_PUBLISH_READONLY,
			csi.ControllerServiceCapability_RPC_LIST_VOLUMES_PUBLISHED_NODES:
			t.Fatalf("advertises %s under -disable-attach", c.GetRpc().GetType())
		}
	}
	_, err = cs.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{})
	mustCode(t, err, codes.Unimplemented, "-disable-attach")
	_, err = cs.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{})
	mustCode(t, err, codes.Unimplemented, "-disable-attach")
}

func TestControllerExpandVolume(t *testing.T) {
	ctx := context.Background()
	_, cs, _ := services(newTestDriver(t, testConfig(t)))
	v := createVolume(t, cs, "v", 4<<20)
	expand := func(req, limit int64) (*csi.ControllerExpandVolumeResponse, error) {
		return cs.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: v.VolumeId,
			CapacityRange: &csi.CapacityRange{RequiredBytes: req, LimitBytes: limit}})
	}
	resp, err := expand(8<<20, 0)
	must.NoError(t, err)
	must.Eq(t, int64(8<<20), resp.CapacityBytes)
	must.True(t, resp.NodeExpansionRequired, must.Sprint("the node offers EXPAND_VOLUME: the CO must call NodeExpandVolume"))

	resp, err = expand(8<<20, 0)
	must.NoError(t, err, must.Sprint("a repeat is OK"))
	must.Eq(t, int64(8<<20), resp.CapacityBytes)
	resp, err = expand(2<<20, 0)
	must.NoError(t, err, must.Sprint("asking for less keeps the size"))
	must.Eq(t, int64(8<<20), resp.CapacityBytes)

	_, err = expand(1<<20, 2<<20)
	mustCode(t, err, codes.OutOfRange, "volumes do not shrink")
	_, err = expand(0, 0)
	mustCode(t, err, codes.InvalidArgument, "capacity_range is missing")
	_, err = cs.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: "vol-gone",
		CapacityRange: &csi.CapacityRange{RequiredBytes: 1}})
	mustCode(t, err, codes.NotFound, "vol-gone")

	got, err := cs.ControllerGetVolume(ctx, &csi.ControllerGetVolumeRequest{VolumeId: v.VolumeId})
	must.NoError(t, err)
	must.Eq(t, int64(8<<20), got.Volume.CapacityBytes)
}

func TestValidateVolumeCapabilities(t *testing.T) {
	ctx := context.Background()
	_, cs, _ := services(newTestDriver(t, testConfig(t)))
	resp, err := cs.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "v", Parameters: map[string]string{"a": "1"},
		VolumeCapabilities: []*csi.VolumeCapability{mountCap(singleWriter)}})
	must.NoError(t, err)
	id := resp.Volume.VolumeId
	block := &csi.VolumeCapability{AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: singleWriter}}

	cases := []struct {
		name    string
		req     *csi.ValidateVolumeCapabilitiesRequest
		message string // "" = confirmed
	}{
		{"mount modes", &csi.ValidateVolumeCapabilitiesRequest{VolumeCapabilities: []*csi.VolumeCapability{
			mountCap(singleWriter, "ro", "noexec"), mountCap(csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY)}}, ""},
		{"same parameters", &csi.ValidateVolumeCapabilitiesRequest{Parameters: map[string]string{"a": "1"},
			VolumeCapabilities: []*csi.VolumeCapability{mountCap(singleWriter)}}, ""},
		{"block", &csi.ValidateVolumeCapabilitiesRequest{VolumeCapabilities: []*csi.VolumeCapability{mountCap(singleWriter), block}},
			"is a directory (mount access type); it cannot be used as a block device"},
		{"other parameters", &csi.ValidateVolumeCapabilitiesRequest{Parameters: map[string]string{"a": "2"},
			VolumeCapabilities: []*csi.VolumeCapability{mountCap(singleWriter)}}, "parameters differ"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.VolumeId = id
			resp, err := cs.ValidateVolumeCapabilities(ctx, tc.req)
			must.NoError(t, err)
			if tc.message == "" {
				must.NotNil(t, resp.Confirmed)
				must.Len(t, len(tc.req.VolumeCapabilities), resp.Confirmed.VolumeCapabilities)
			} else {
				must.Nil(t, resp.Confirmed)
				must.StrContains(t, resp.Message, tc.message)
			}
		})
	}
	_, err = cs.ValidateVolumeCapabilities(ctx, &csi.ValidateVolumeCapabilitiesRequest{VolumeId: "vol-gone",
		VolumeCapabilities: []*csi.VolumeCapability{mountCap(singleWriter)}})
	mustCode(t, err, codes.NotFound, "vol-gone")
}

func TestTopology(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	cfg.Topology = map[string]string{"example.com/zone": "a", "example.com/rack": "r1"}
	d := newTestDriver(t, cfg)
	ids, cs, ns := services(d)
	req := func(name string, requisite ...map[string]string) *csi.CreateVolumeRequest {
		r := &csi.CreateVolumeRequest{Name: name, VolumeCapabilities: []*csi.VolumeCapability{mountCap(singleWriter)},
			AccessibilityRequirements: &csi.TopologyRequirement{}}
		for _, seg := range requisite {
			r.AccessibilityRequirements.Requisite = append(r.AccessibilityRequirements.Requisite, &csi.Topology{Segments: seg})
		}
		return r
	}

	pc, err := ids.GetPluginCapabilities(ctx, &csi.GetPluginCapabilitiesRequest{})
	must.NoError(t, err)
	var constrained bool
	for _, c := range pc.Capabilities {
		constrained = constrained || c.GetService().GetType() == csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS
	}
	must.True(t, constrained)
	info, err := ns.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	must.NoError(t, err)
	must.Eq(t, cfg.Topology, info.AccessibleTopology.Segments)

	resp, err := cs.CreateVolume(ctx, req("ok", map[string]string{"example.com/zone": "b"}, map[string]string{"example.com/zone": "a"}))
	must.NoError(t, err)
	must.Eq(t, cfg.Topology, resp.Volume.AccessibleTopology[0].Segments)
	_, err = cs.CreateVolume(ctx, req("elsewhere", map[string]string{"example.com/zone": "b"}))
	mustCode(t, err, codes.ResourceExhausted, "example.com/rack=r1,example.com/zone=a")
	_, err = cs.CreateVolume(ctx, req("ok", map[string]string{"example.com/zone": "b"}))
	mustCode(t, err, codes.AlreadyExists, "topology")

	capacity, err := cs.GetCapacity(ctx, &csi.GetCapacityRequest{AccessibleTopology: &csi.Topology{Segments: map[string]string{"example.com/zone": "b"}}})
	must.NoError(t, err)
	must.Eq(t, int64(0), capacity.AvailableCapacity)
	capacity, err = cs.GetCapacity(ctx, &csi.GetCapacityRequest{AccessibleTopology: &csi.Topology{Segments: map[string]string{"example.com/zone": "a"}}})
	must.NoError(t, err)
	must.Positive(t, capacity.AvailableCapacity)
}
