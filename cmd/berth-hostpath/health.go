package main

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// maxUsageWalk bounds the entries one NodeGetVolumeStats counts; past it
// the figures are those of the entries counted (a lower bound).
const maxUsageWalk = 1_000_000

// NodeGetVolumeStats reports the volume's own usage where it is staged
// or published: the bytes its files take (allocated blocks, as du counts
// them) and its inodes, against its capacity (the filesystem's size for a
// volume created without one) and the inodes of the filesystem that
// holds it. Available is what is left of the capacity, never more than
// the filesystem has free.
func (s *nodeServer) NodeGetVolumeStats(ctx context.Context, req *csi.NodeGetVolumeStatsRequest) (*csi.NodeGetVolumeStatsResponse, error) {
	id, path := req.GetVolumeId(), req.GetVolumePath()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "NodeGetVolumeStats: volume_id is missing")
	}
	if path == "" {
		return nil, status.Errorf(codes.InvalidArgument, "NodeGetVolumeStats %s: volume_path is missing", id)
	}
	st := s.store.current()
	if err := s.inPlace(st, id, path); err != nil {
		return nil, err
	}
	if v := st.Volumes[id]; v.Block {
		u, err := s.blockUsage(v)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "NodeGetVolumeStats %s: %v", id, err)
		}
		return &csi.NodeGetVolumeStatsResponse{Usage: []*csi.VolumeUsage{u}}, nil
	}
	var sfs unix.Statfs_t
	if err := unix.Statfs(path, &sfs); err != nil {
		return nil, status.Errorf(codes.Internal, "NodeGetVolumeStats %s: statfs %s: %v", id, path, err)
	}
	used, inodes, err := diskUsage(ctx, path)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "NodeGetVolumeStats %s: count %s: %v", id, path, err)
	}
	bs := sfs.Bsize
	fsTotal, fsFree := int64(sfs.Blocks)*bs, int64(sfs.Bavail)*bs
	total := st.Volumes[id].CapacityBytes
	if total <= 0 {
		total = fsTotal
	}
	avail := min(max(total-used, 0), fsFree)
	return &csi.NodeGetVolumeStatsResponse{Usage: []*csi.VolumeUsage{
		{Unit: csi.VolumeUsage_BYTES, Total: total, Available: avail, Used: used},
		{Unit: csi.VolumeUsage_INODES, Total: int64(sfs.Files), Available: int64(sfs.Ffree), Used: inodes},
	}}, nil
}

// diskUsage counts the blocks and inodes under root, never following a
// link, at most maxUsageWalk entries; an entry gone while counted is
// skipped.
func diskUsage(ctx context.Context, root string) (bytes, inodes int64, err error) {
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p != root {
				return nil
			}
			return err
		}
		if inodes >= maxUsageWalk {
			return filepath.SkipAll
		}
		if inodes%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		inodes++
		bytes += st.Blocks * 512
		return nil
	})
	return bytes, inodes, err
}

// NodeGetVolumeHealth reports the volume abnormal (INACCESSIBLE) when its
// directory is gone, or when the path it was published or staged at is
// recorded but no longer mounted. Either path may be left out.
func (s *nodeServer) NodeGetVolumeHealth(ctx context.Context, req *csi.NodeGetVolumeHealthRequest) (*csi.NodeGetVolumeHealthResponse, error) {
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "NodeGetVolumeHealth: volume_id is missing")
	}
	st := s.store.current()
	if _, ok := st.Volumes[id]; !ok {
		return nil, status.Errorf(codes.NotFound, "NodeGetVolumeHealth: volume %s not found", id)
	}
	h := s.volumeHealth(st.Volumes[id])
	for _, p := range []string{req.GetVolumePublishPath(), req.GetStagingTargetPath()} {
		if p == "" || len(h.HealthStatuses) > 0 {
			continue
		}
		if err := s.inPlace(st, id, p); err != nil {
			h.HealthStatuses = append(h.HealthStatuses, &csi.VolumeHealth_VolumeHealthEntry{
				Status: csi.VolumeHealthErrorType_INACCESSIBLE, Reason: "NotMounted", Message: status.Convert(err).Message()})
		}
	}
	return &csi.NodeGetVolumeHealthResponse{VolumeHealth: h}, nil
}

// ControllerGetVolumeHealth reports the volume abnormal (INACCESSIBLE)
// when its directory is gone.
func (s *controllerServer) ControllerGetVolumeHealth(ctx context.Context, req *csi.ControllerGetVolumeHealthRequest) (*csi.ControllerGetVolumeHealthResponse, error) {
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "ControllerGetVolumeHealth: volume_id is missing")
	}
	v, ok := s.store.current().Volumes[id]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "ControllerGetVolumeHealth: volume %s not found", id)
	}
	return &csi.ControllerGetVolumeHealthResponse{VolumeHealth: s.volumeHealth(v)}, nil
}

// volumeHealth is the health of a known volume's directory, and of a
// block volume's image.
func (d *driver) volumeHealth(v *volume) *csi.VolumeHealth {
	h := &csi.VolumeHealth{VolumeId: v.ID}
	dir := d.volumeDir(v.ID)
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		h.HealthStatuses = append(h.HealthStatuses, &csi.VolumeHealth_VolumeHealthEntry{
			Status: csi.VolumeHealthErrorType_INACCESSIBLE, Reason: "VolumeDirMissing", Message: "the volume's directory " + dir + " is gone"})
	case err != nil:
		h.HealthStatuses = append(h.HealthStatuses, &csi.VolumeHealth_VolumeHealthEntry{
			Status: csi.VolumeHealthErrorType_INACCESSIBLE, Reason: "VolumeDirUnreadable", Message: err.Error()})
	case !fi.IsDir():
		h.HealthStatuses = append(h.HealthStatuses, &csi.VolumeHealth_VolumeHealthEntry{
			Status: csi.VolumeHealthErrorType_INACCESSIBLE, Reason: "VolumeDirNotADirectory", Message: dir + " is not a directory"})
	case v.Block:
		if fi, err := os.Lstat(d.blockImage(v.ID)); err != nil || !fi.Mode().IsRegular() {
			h.HealthStatuses = append(h.HealthStatuses, &csi.VolumeHealth_VolumeHealthEntry{
				Status: csi.VolumeHealthErrorType_INACCESSIBLE, Reason: "VolumeImageMissing", Message: "the block volume's image " + d.blockImage(v.ID) + " is gone or not a file"})
		}
	}
	return h
}
