package main

import (
	"context"
	"os"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// CreateSnapshot copies a volume directory. The name is the idempotency
// key: the same name and source return the snapshot made before; the
// same name with another source is ALREADY_EXISTS. The copy is complete
// when the call returns, so snapshots are always ready to use.
func (s *controllerServer) CreateSnapshot(ctx context.Context, req *csi.CreateSnapshotRequest) (*csi.CreateSnapshotResponse, error) {
	name, src := req.GetName(), req.GetSourceVolumeId()
	if name == "" {
		return nil, status.Error(codes.InvalidArgument, "CreateSnapshot: name is missing")
	}
	if src == "" {
		return nil, status.Errorf(codes.InvalidArgument, "CreateSnapshot %q: source_volume_id is missing", name)
	}

	s.opMu.Lock()
	defer s.opMu.Unlock()
	st := s.store.current()
	if sn := st.snapshotByName(name); sn != nil {
		if sn.SourceVolumeID != src {
			return nil, status.Errorf(codes.AlreadyExists, "snapshot %q already exists as %s of volume %s, not of %s", name, sn.ID, sn.SourceVolumeID, src)
		}
		return &csi.CreateSnapshotResponse{Snapshot: csiSnapshot(sn)}, nil
	}
	v, ok := st.Volumes[src]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "CreateSnapshot %q: source volume %s not found", name, src)
	}
	sn := &snapshot{
		ID:             newID("snap"),
		Name:           name,
		SourceVolumeID: src,
		SizeBytes:      v.CapacityBytes,
		CreatedAt:      s.now().UTC(),
		Block:          v.Block,
	}
	dir := s.snapshotDir(sn.ID)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, status.Errorf(codes.Internal, "CreateSnapshot %q: create %s: %v", name, dir, err)
	}
	if err := copyTree(ctx, s.volumeDir(src), dir); err != nil {
		os.RemoveAll(dir)
		return nil, status.Errorf(codes.Internal, "CreateSnapshot %q: copy volume %s: %v", name, src, err)
	}
	if err := s.store.update(func(st *state) error {
		st.Snapshots[sn.ID] = sn
		return nil
	}); err != nil {
		os.RemoveAll(dir)
		return nil, status.Errorf(codes.Internal, "CreateSnapshot %q: %v", name, err)
	}
	s.log.Info("snapshot created", "snapshot_id", sn.ID, "name", name, "source_volume_id", src)
	return &csi.CreateSnapshotResponse{Snapshot: csiSnapshot(sn)}, nil
}

// DeleteSnapshot removes the copy; an unknown snapshot is already gone.
func (s *controllerServer) DeleteSnapshot(ctx context.Context, req *csi.DeleteSnapshotRequest) (*csi.DeleteSnapshotResponse, error) {
	id := req.GetSnapshotId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "DeleteSnapshot: snapshot_id is missing")
	}
	s.opMu.Lock()
	defer s.opMu.Unlock()
	if _, ok := s.store.current().Snapshots[id]; !ok {
		return &csi.DeleteSnapshotResponse{}, nil
	}
	dir := s.snapshotDir(id)
	if err := os.RemoveAll(dir); err != nil {
		return nil, status.Errorf(codes.Internal, "DeleteSnapshot %s: remove %s: %v", id, dir, err)
	}
	if err := s.store.update(func(st *state) error {
		delete(st.Snapshots, id)
		return nil
	}); err != nil {
		return nil, status.Errorf(codes.Internal, "DeleteSnapshot %s: %v", id, err)
	}
	s.log.Info("snapshot deleted", "snapshot_id", id)
	return &csi.DeleteSnapshotResponse{}, nil
}

// GetSnapshot returns one snapshot.
func (s *controllerServer) GetSnapshot(ctx context.Context, req *csi.GetSnapshotRequest) (*csi.GetSnapshotResponse, error) {
	id := req.GetSnapshotId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "GetSnapshot: snapshot_id is missing")
	}
	sn, ok := s.store.current().Snapshots[id]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "GetSnapshot: snapshot %s not found", id)
	}
	return &csi.GetSnapshotResponse{Snapshot: csiSnapshot(sn)}, nil
}

// csiSnapshot is the CSI view of a snapshot.
func csiSnapshot(sn *snapshot) *csi.Snapshot {
	out := &csi.Snapshot{
		SnapshotId:     sn.ID,
		SourceVolumeId: sn.SourceVolumeID,
		SizeBytes:      sn.SizeBytes,
		CreationTime:   timestamppb.New(sn.CreatedAt),
		ReadyToUse:     true,
	}
	return out
}
