package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-csi/berth/internal/testlog"
	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/shoenig/test/must"
)

func TestStore_Restart_KeepsVolumesAndSnapshots(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	_, cs, _ := services(newTestDriver(t, cfg))

	vol := createVolume(t, cs, "data", 1<<20)
	must.NoError(t, os.WriteFile(filepath.Join(cfg.Root, "volumes", vol.VolumeId, "hello"), []byte("hi"), 0o644))
	snap, err := cs.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "snap", SourceVolumeId: vol.VolumeId})
	must.NoError(t, err)
	_, err = cs.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{
		VolumeId: vol.VolumeId, NodeId: cfg.NodeID, VolumeCapability: mountCap(singleWriter), Readonly: true})
	must.NoError(t, err)

	// a second plugin process on the same root
	_, cs2, _ := services(newTestDriver(t, cfg))

	again := createVolume(t, cs2, "data", 1<<20)
	must.Eq(t, vol.VolumeId, again.VolumeId)
	must.Eq(t, int64(1<<20), again.CapacityBytes)

	got, err := cs2.ControllerGetVolume(ctx, &csi.ControllerGetVolumeRequest{VolumeId: vol.VolumeId})
	must.NoError(t, err)
	must.Eq(t, []string{cfg.NodeID}, got.GetStatus().GetPublishedNodeIds())

	snaps, err := cs2.ListSnapshots(ctx, &csi.ListSnapshotsRequest{})
	must.NoError(t, err)
	must.Len(t, 1, snaps.Entries)
	s := snaps.Entries[0].Snapshot
	must.Eq(t, snap.Snapshot.SnapshotId, s.SnapshotId)
	must.Eq(t, vol.VolumeId, s.SourceVolumeId)
	must.Eq(t, snap.Snapshot.CreationTime.AsTime(), s.CreationTime.AsTime())

	// the same snapshot name is still the same snapshot
	again2, err := cs2.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "snap", SourceVolumeId: vol.VolumeId})
	must.NoError(t, err)
	must.Eq(t, snap.Snapshot.SnapshotId, again2.Snapshot.SnapshotId)
}

func TestStore_Open_CorruptFileIsAClearError(t *testing.T) {
	cases := []struct {
		name, content, want string
	}{
		{"not json", "{volumes: oops", "corrupt state file"},
		{"truncated", `{"version": 1, "volumes": {"vol-1": {"id": "vol-1"`, "corrupt state file"},
		{"unknown version", `{"version": 99}`, "unknown state version"},
		{"entry under the wrong key", `{"version": 1, "volumes": {"vol-1": {"id": "vol-2", "name": "x"}}}`, "volume entry vol-1 is malformed"},
		{"nameless snapshot", `{"version": 1, "snapshots": {"s": {"id": "s"}}}`, "snapshot entry s is malformed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			path := filepath.Join(cfg.Root, stateFileName)
			must.NoError(t, os.WriteFile(path, []byte(tc.content), 0o600))

			_, err := newDriver(cfg, testlog.Logger(t, "berth-hostpath"))
			must.ErrorIs(t, err, errCorruptState)
			must.StrContains(t, err.Error(), path)
			must.StrContains(t, err.Error(), tc.want)

			// the file is left for the operator, untouched
			data, err := os.ReadFile(path)
			must.NoError(t, err)
			must.Eq(t, tc.content, string(data))
		})
	}
}

func TestStore_Open_NullMapsAreEmpty(t *testing.T) {
	path := filepath.Join(t.TempDir(), stateFileName)
	must.NoError(t, os.WriteFile(path, []byte(`{"version": 1, "volumes": null}`), 0o600))
	s, err := openStore(path)
	must.NoError(t, err)
	must.NoError(t, s.update(func(st *state) error {
		st.Volumes["v"] = &volume{ID: "v", Name: "n"}
		st.Stages["/s"] = &stageRecord{VolumeID: "v", Path: "/s"}
		return nil
	}))
}

func TestStore_Update_FailureChangesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, stateFileName)
	s, err := openStore(path)
	must.NoError(t, err)
	must.NoError(t, s.update(func(st *state) error {
		st.Volumes["v1"] = &volume{ID: "v1", Name: "one"}
		return nil
	}))
	before := s.current()

	t.Run("fn fails", func(t *testing.T) {
		boom := errors.New("boom")
		err := s.update(func(st *state) error {
			st.Volumes["v2"] = &volume{ID: "v2", Name: "two"}
			st.Volumes["v1"].Name = "renamed"
			return boom
		})
		must.ErrorIs(t, err, boom)
		must.Eq(t, before, s.current())
		must.Eq(t, "one", s.current().Volumes["v1"].Name)
	})

	t.Run("save fails", func(t *testing.T) {
		s.path = filepath.Join(dir, "missing", stateFileName) // no such directory
		defer func() { s.path = path }()
		err := s.update(func(st *state) error {
			st.Volumes["v2"] = &volume{ID: "v2", Name: "two"}
			return nil
		})
		must.ErrorIs(t, err, errSaveState)
		must.MapNotContainsKey(t, s.current().Volumes, "v2")
	})

	// only the state file is left: temp files are renamed or removed
	entries, err := os.ReadDir(dir)
	must.NoError(t, err)
	must.Len(t, 1, entries)
	must.Eq(t, stateFileName, entries[0].Name())

	reopened, err := openStore(path)
	must.NoError(t, err)
	must.Eq(t, s.current(), reopened.current())
}

func TestState_Copy_IsDeep(t *testing.T) {
	st := newState()
	st.Volumes["v"] = &volume{ID: "v", Name: "n", Parameters: map[string]string{"a": "1"},
		Attachments: map[string]attachment{"node": {AccessMode: "SINGLE_NODE_WRITER"}}}
	st.Publishes["/t"] = &publishRecord{VolumeID: "v", TargetPath: "/t", Usage: usage{MountFlags: []string{"noatime"}}}

	c := st.copy()
	c.Volumes["v"].Parameters["a"] = "2"
	c.Volumes["v"].Attachments["other"] = attachment{}
	c.Publishes["/t"].Usage.MountFlags[0] = "nodev"
	delete(c.Volumes, "v")

	must.Eq(t, "1", st.Volumes["v"].Parameters["a"])
	must.MapLen(t, 1, st.Volumes["v"].Attachments)
	must.Eq(t, "noatime", st.Publishes["/t"].Usage.MountFlags[0])
}

func TestDriver_New_RootIsAFile(t *testing.T) {
	cfg := testConfig(t)
	cfg.Root = filepath.Join(cfg.Root, "file")
	must.NoError(t, os.WriteFile(cfg.Root, nil, 0o600))
	_, err := newDriver(cfg, testlog.Logger(t, "berth-hostpath"))
	must.Error(t, err)
	must.True(t, strings.Contains(err.Error(), cfg.Root))
}
