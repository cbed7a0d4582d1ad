package main

import (
	"context"
	"fmt"
	"maps"
	"os"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// CreateVolume makes a directory, empty or a copy of a snapshot or of
// another volume. The name is the idempotency key: the same name with
// compatible arguments returns the volume made before.
func (s *controllerServer) CreateVolume(ctx context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	name := req.GetName()
	if name == "" {
		return nil, status.Error(codes.InvalidArgument, "CreateVolume: name is missing")
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "CreateVolume %q: %v", name, err)
	}
	block, err := blockOf(req.GetVolumeCapabilities())
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "CreateVolume %q: %v", name, err)
	}
	if err := checkRange(req.GetCapacityRange()); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "CreateVolume %q: %v", name, err)
	}
	if len(req.GetMutableParameters()) > 0 {
		return nil, status.Errorf(codes.InvalidArgument, "CreateVolume %q: mutable_parameters are not supported (no MODIFY_VOLUME capability)", name)
	}
	srcSnap := req.GetVolumeContentSource().GetSnapshot().GetSnapshotId()
	srcVol := req.GetVolumeContentSource().GetVolume().GetVolumeId()
	if req.GetVolumeContentSource() != nil && srcSnap == "" && srcVol == "" {
		return nil, status.Errorf(codes.InvalidArgument, "CreateVolume %q: volume_content_source names no snapshot or volume", name)
	}

	s.opMu.Lock()
	defer s.opMu.Unlock()
	st := s.store.current()

	if v := st.volumeByName(name); v != nil {
		if why := incompatible(v, req, block, s.reachable(req.GetAccessibilityRequirements())); why != "" {
			return nil, status.Errorf(codes.AlreadyExists, "volume %q already exists as %s with %s", name, v.ID, why)
		}
		return &csi.CreateVolumeResponse{Volume: s.csiVolume(v)}, nil
	}
	if !s.reachable(req.GetAccessibilityRequirements()) {
		return nil, status.Errorf(codes.ResourceExhausted, "CreateVolume %q: this plugin provisions only on node %s with topology %s, which no requisite topology matches",
			name, s.cfg.NodeID, formatTopology(s.cfg.Topology))
	}

	src, srcSize := "", int64(0)
	switch {
	case srcSnap != "":
		sn, ok := st.Snapshots[srcSnap]
		if !ok {
			return nil, status.Errorf(codes.NotFound, "CreateVolume %q: source snapshot %q not found", name, srcSnap)
		}
		if sn.Block != block {
			return nil, status.Errorf(codes.InvalidArgument, "CreateVolume %q: source snapshot %q is of a %s volume, and the capabilities ask for a %s one",
				name, srcSnap, accessTypeName(sn.Block), accessTypeName(block))
		}
		src, srcSize = s.snapshotDir(sn.ID), sn.SizeBytes
	case srcVol != "":
		sv, ok := st.Volumes[srcVol]
		if !ok {
			return nil, status.Errorf(codes.NotFound, "CreateVolume %q: source volume %q not found", name, srcVol)
		}
		if sv.Block != block {
			return nil, status.Errorf(codes.InvalidArgument, "CreateVolume %q: source volume %q is a %s volume, and the capabilities ask for a %s one",
				name, srcVol, accessTypeName(sv.Block), accessTypeName(block))
		}
		src, srcSize = s.volumeDir(sv.ID), sv.CapacityBytes
	}
	capacity, err := pickCapacity(req.GetCapacityRange(), srcSize)
	if err != nil {
		return nil, status.Errorf(codes.OutOfRange, "CreateVolume %q: %v", name, err)
	}
	if block && capacity == 0 {
		capacity = defaultBlockBytes
	}

	v := &volume{
		ID:               newID("vol"),
		Name:             name,
		CapacityBytes:    capacity,
		Parameters:       maps.Clone(req.GetParameters()),
		SourceSnapshotID: srcSnap,
		SourceVolumeID:   srcVol,
		Topology:         maps.Clone(s.cfg.Topology),
		CreatedAt:        s.now().UTC(),
		Block:            block,
	}
	dir := s.volumeDir(v.ID)
	if err := os.Mkdir(dir, 0o777); err != nil {
		return nil, status.Errorf(codes.Internal, "CreateVolume %q: create %s: %v", name, dir, err)
	}
	if src != "" {
		if err := copyTree(ctx, src, dir); err != nil {
			os.RemoveAll(dir)
			return nil, status.Errorf(codes.Internal, "CreateVolume %q: copy %s to %s: %v", name, src, dir, err)
		}
	}
	if block {
		var err error
		if src == "" {
			err = makeBlockImage(dir, capacity)
		} else {
			err = s.growBlockImage(v.ID, capacity) // the copy's image, to the new capacity
		}
		if err != nil {
			os.RemoveAll(dir)
			return nil, status.Errorf(codes.Internal, "CreateVolume %q: make the block image: %v", name, err)
		}
	}
	// Writable by whichever user the workload runs as, as
	// csi-driver-host-path's volumes are; whatever the umask or the
	// source's mode. Only mounts reach it: volumes/ is 0700.
	if err := os.Chmod(dir, volumeDirMode); err != nil {
		os.RemoveAll(dir)
		return nil, status.Errorf(codes.Internal, "CreateVolume %q: %v", name, err)
	}
	if err := s.store.update(func(st *state) error {
		st.Volumes[v.ID] = v
		return nil
	}); err != nil {
		os.RemoveAll(dir)
		return nil, status.Errorf(codes.Internal, "CreateVolume %q: %v", name, err)
	}
	s.log.Info("volume created", "volume_id", v.ID, "name", name, "capacity_bytes", capacity,
		"source_snapshot_id", srcSnap, "source_volume_id", srcVol)
	return &csi.CreateVolumeResponse{Volume: s.csiVolume(v)}, nil
}

// incompatible says how an existing volume differs from a CreateVolume
// request for the same name, or "" when the request matches it.
func incompatible(v *volume, req *csi.CreateVolumeRequest, block, reachable bool) string {
	r := req.GetCapacityRange()
	switch {
	case v.Block != block:
		return fmt.Sprintf("the %s access type", accessTypeName(v.Block))
	case !capacityFits(v.CapacityBytes, r):
		return fmt.Sprintf("capacity %d bytes, outside the requested range (required %d, limit %d)",
			v.CapacityBytes, r.GetRequiredBytes(), r.GetLimitBytes())
	case !maps.Equal(v.Parameters, req.GetParameters()):
		return "other parameters"
	case v.SourceSnapshotID != req.GetVolumeContentSource().GetSnapshot().GetSnapshotId() ||
		v.SourceVolumeID != req.GetVolumeContentSource().GetVolume().GetVolumeId():
		return fmt.Sprintf("another content source (snapshot %q, volume %q)", v.SourceSnapshotID, v.SourceVolumeID)
	case !reachable:
		return "a topology that no requisite topology matches"
	}
	return ""
}

// checkRange rejects negative sizes and an empty range.
func checkRange(r *csi.CapacityRange) error {
	if r.GetRequiredBytes() < 0 || r.GetLimitBytes() < 0 {
		return fmt.Errorf("capacity_range has a negative size (required %d, limit %d)", r.GetRequiredBytes(), r.GetLimitBytes())
	}
	return nil
}

// pickCapacity chooses the capacity of a new volume: required_bytes, else
// limit_bytes, else the source's size (0, "unknown", for an empty volume
// without a range); never less than the source.
func pickCapacity(r *csi.CapacityRange, sourceSize int64) (int64, error) {
	req, limit := r.GetRequiredBytes(), r.GetLimitBytes()
	if limit > 0 && req > limit {
		return 0, fmt.Errorf("required_bytes %d exceeds limit_bytes %d", req, limit)
	}
	c := req
	if c == 0 {
		c = limit
	}
	c = max(c, sourceSize)
	if limit > 0 && c > limit {
		return 0, fmt.Errorf("the source holds %d bytes, more than limit_bytes %d", sourceSize, limit)
	}
	return c, nil
}

// capacityFits reports whether a capacity satisfies a range.
func capacityFits(c int64, r *csi.CapacityRange) bool {
	return (r.GetRequiredBytes() == 0 || c >= r.GetRequiredBytes()) &&
		(r.GetLimitBytes() == 0 || c <= r.GetLimitBytes())
}

// csiVolume is the CSI view of a volume.
func (d *driver) csiVolume(v *volume) *csi.Volume {
	out := &csi.Volume{VolumeId: v.ID, CapacityBytes: v.CapacityBytes}
	if len(v.Topology) > 0 {
		out.AccessibleTopology = []*csi.Topology{{Segments: maps.Clone(v.Topology)}}
	}
	switch {
	case v.SourceSnapshotID != "":
		out.ContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
			Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: v.SourceSnapshotID}}}
	case v.SourceVolumeID != "":
		out.ContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{
			Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: v.SourceVolumeID}}}
	}
	return out
}
