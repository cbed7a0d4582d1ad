package main

import (
	"context"
	"path/filepath"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func (s *nodeServer) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{
		NodeId:             s.cfg.NodeID,
		MaxVolumesPerNode:  s.cfg.MaxVolumes,
		AccessibleTopology: s.topology(),
	}, nil
}

func (s *nodeServer) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	var caps []*csi.NodeServiceCapability
	for _, t := range s.nodeCapabilities() {
		caps = append(caps, &csi.NodeServiceCapability{Type: &csi.NodeServiceCapability_Rpc{
			Rpc: &csi.NodeServiceCapability_RPC{Type: t}}})
	}
	return &csi.NodeGetCapabilitiesResponse{Capabilities: caps}, nil
}

// NodeExpandVolume has nothing to grow on a directory: it checks the
// request (the volume staged or published at volume_path, and staged at
// staging_target_path when one is given, as the spec asks the CO to) and
// answers the capacity ControllerExpandVolume recorded, which must cover
// the required bytes. It works while the volume is in use (ONLINE).
func (s *nodeServer) NodeExpandVolume(ctx context.Context, req *csi.NodeExpandVolumeRequest) (*csi.NodeExpandVolumeResponse, error) {
	id, path, staging := req.GetVolumeId(), req.GetVolumePath(), req.GetStagingTargetPath()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "NodeExpandVolume: volume_id is missing")
	}
	if path == "" {
		return nil, status.Errorf(codes.InvalidArgument, "NodeExpandVolume %s: volume_path is missing", id)
	}
	if c := req.GetVolumeCapability(); c != nil {
		if err := checkCapability(c); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "NodeExpandVolume %s: %v", id, err)
		}
	}
	if err := checkRange(req.GetCapacityRange()); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "NodeExpandVolume %s: %v", id, err)
	}
	st := s.store.current()
	if err := s.inPlace(st, id, path); err != nil {
		return nil, err
	}
	if staging != "" {
		if rec, ok := st.Stages[filepath.Clean(staging)]; !ok || rec.VolumeID != id {
			return nil, status.Errorf(codes.NotFound, "NodeExpandVolume %s: the volume is not staged at staging_target_path %s", id, staging)
		}
	}
	v := st.Volumes[id]
	if v.Block {
		if err := refreshLoop(s.volumeLoop(st, id)); err != nil {
			return nil, status.Errorf(codes.Internal, "NodeExpandVolume %s: %v", id, err)
		}
	}
	if r := req.GetCapacityRange(); r.GetRequiredBytes() > v.CapacityBytes {
		return nil, status.Errorf(codes.OutOfRange, "NodeExpandVolume %s: required %d bytes but the volume has %d; call ControllerExpandVolume first",
			id, r.GetRequiredBytes(), v.CapacityBytes)
	}
	s.log.Info("volume expanded on the node", "volume_id", id, "volume_path", path, "staging_target_path", staging,
		"capacity_bytes", v.CapacityBytes)
	return &csi.NodeExpandVolumeResponse{CapacityBytes: v.CapacityBytes}, nil
}

// mountedAt returns NOT_FOUND unless the volume exists and is staged or
// published, and mounted, at path.
func mountedAt(st *state, id, path string) error {
	if _, ok := st.Volumes[id]; !ok {
		return status.Errorf(codes.NotFound, "volume %s not found", id)
	}
	p := filepath.Clean(path)
	stage, staged := st.Stages[p]
	pub, published := st.Publishes[p]
	if !(staged && stage.VolumeID == id) && !(published && pub.VolumeID == id) {
		return status.Errorf(codes.NotFound, "volume %s is not staged or published at %s", id, path)
	}
	mounted, err := isMountPoint(p)
	if err != nil {
		return status.Errorf(codes.Internal, "volume %s at %s: %v", id, path, err)
	}
	if !mounted {
		return status.Errorf(codes.NotFound, "volume %s is recorded at %s but not mounted there", id, path)
	}
	return nil
}
