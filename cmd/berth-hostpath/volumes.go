package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// DeleteVolume removes the directory. An unknown volume is already gone
// (OK); a volume still published or staged is FAILED_PRECONDITION, since
// removing it would pull the data from under a mount. Snapshots are
// copies and do not depend on their source.
func (s *controllerServer) DeleteVolume(ctx context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "DeleteVolume: volume_id is missing")
	}
	s.opMu.Lock()
	defer s.opMu.Unlock()
	st := s.store.current()
	v, ok := st.Volumes[id]
	if !ok {
		return &csi.DeleteVolumeResponse{}, nil
	}
	if why := inUse(st, v); why != "" {
		return nil, status.Errorf(codes.FailedPrecondition, "DeleteVolume %s: volume is %s", id, why)
	}
	dir := s.volumeDir(id)
	if err := os.RemoveAll(dir); err != nil {
		return nil, status.Errorf(codes.Internal, "DeleteVolume %s: remove %s: %v", id, dir, err)
	}
	if err := s.store.update(func(st *state) error {
		delete(st.Volumes, id)
		return nil
	}); err != nil {
		return nil, status.Errorf(codes.Internal, "DeleteVolume %s: %v", id, err)
	}
	s.log.Info("volume deleted", "volume_id", id, "name", v.Name)
	return &csi.DeleteVolumeResponse{}, nil
}

// inUse says where a volume is still in use, or "".
func inUse(st *state, v *volume) string {
	var uses []string
	if len(v.Attachments) > 0 {
		uses = append(uses, "controller-published to node "+strings.Join(publishedNodes(v), ", "))
	}
	if paths := st.stagesOf(v.ID); len(paths) > 0 {
		uses = append(uses, "staged at "+strings.Join(paths, ", "))
	}
	for _, p := range st.publishesOf(v.ID) {
		uses = append(uses, "published at "+p.TargetPath)
	}
	return strings.Join(uses, "; ")
}

// ValidateVolumeCapabilities confirms the capabilities (and parameters)
// this plugin can serve for the volume.
func (s *controllerServer) ValidateVolumeCapabilities(ctx context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "ValidateVolumeCapabilities: volume_id is missing")
	}
	if len(req.GetVolumeCapabilities()) == 0 {
		return nil, status.Errorf(codes.InvalidArgument, "ValidateVolumeCapabilities %s: volume_capabilities is missing", id)
	}
	v, ok := s.store.current().Volumes[id]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "ValidateVolumeCapabilities: volume %s not found", id)
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: err.Error()}, nil
	}
	for _, c := range req.GetVolumeCapabilities() {
		if err := checkAccessType(v, c); err != nil {
			return &csi.ValidateVolumeCapabilitiesResponse{Message: err.Error()}, nil
		}
	}
	if len(req.GetParameters()) > 0 && !maps.Equal(req.GetParameters(), v.Parameters) {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: "parameters differ from those the volume was created with"}, nil
	}
	if len(req.GetMutableParameters()) > 0 {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: "mutable_parameters are not supported"}, nil
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeContext:      req.GetVolumeContext(),
		VolumeCapabilities: req.GetVolumeCapabilities(),
		Parameters:         req.GetParameters(),
	}}, nil
}

// ControllerGetVolume returns the volume and the nodes it is published to.
func (s *controllerServer) ControllerGetVolume(ctx context.Context, req *csi.ControllerGetVolumeRequest) (*csi.ControllerGetVolumeResponse, error) {
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "ControllerGetVolume: volume_id is missing")
	}
	v, ok := s.store.current().Volumes[id]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "ControllerGetVolume: volume %s not found", id)
	}
	return &csi.ControllerGetVolumeResponse{
		Volume: s.csiVolume(v),
		Status: &csi.ControllerGetVolumeResponse_VolumeStatus{PublishedNodeIds: publishedNodes(v)},
	}, nil
}

func publishedNodes(v *volume) []string {
	return slices.Sorted(maps.Keys(v.Attachments))
}

// ControllerExpandVolume records a larger capacity, and works while the
// volume is published (ONLINE expansion). A directory has no size to
// grow, but the node offers EXPAND_VOLUME, so the answer asks the CO to
// call NodeExpandVolume on each node that has the volume (as the spec
// requires of a plugin with that node capability that wants the call):
// the node checks where the volume is and confirms the capacity, so that
// a CO's node expansion is exercised for real.
func (s *controllerServer) ControllerExpandVolume(ctx context.Context, req *csi.ControllerExpandVolumeRequest) (*csi.ControllerExpandVolumeResponse, error) {
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "ControllerExpandVolume: volume_id is missing")
	}
	r := req.GetCapacityRange()
	if r == nil || (r.GetRequiredBytes() == 0 && r.GetLimitBytes() == 0) {
		return nil, status.Errorf(codes.InvalidArgument, "ControllerExpandVolume %s: capacity_range is missing", id)
	}
	if err := checkRange(r); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "ControllerExpandVolume %s: %v", id, err)
	}
	if c := req.GetVolumeCapability(); c != nil {
		if err := checkCapability(c); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "ControllerExpandVolume %s: %v", id, err)
		}
	}
	s.opMu.Lock()
	defer s.opMu.Unlock()
	v, ok := s.store.current().Volumes[id]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "ControllerExpandVolume: volume %s not found", id)
	}
	if c := req.GetVolumeCapability(); c != nil {
		if err := checkAccessType(v, c); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "ControllerExpandVolume %s: %v", id, err)
		}
	}
	capacity, err := expandTo(v.CapacityBytes, r)
	if err != nil {
		return nil, status.Errorf(codes.OutOfRange, "ControllerExpandVolume %s: %v", id, err)
	}
	if v.Block {
		// The image grows first: a record of a capacity the file does
		// not have would be a lie after a failure.
		if err := s.growBlockImage(id, capacity); err != nil {
			return nil, status.Errorf(codes.Internal, "ControllerExpandVolume %s: grow %s: %v", id, s.blockImage(id), err)
		}
	}
	if capacity != v.CapacityBytes {
		if err := s.store.update(func(st *state) error {
			st.Volumes[id].CapacityBytes = capacity
			return nil
		}); err != nil {
			return nil, status.Errorf(codes.Internal, "ControllerExpandVolume %s: %v", id, err)
		}
		s.log.Info("volume expanded", "volume_id", id, "from_bytes", v.CapacityBytes, "to_bytes", capacity)
	}
	return &csi.ControllerExpandVolumeResponse{CapacityBytes: capacity, NodeExpansionRequired: s.nodeExpands()}, nil
}

// expandTo is the capacity after an expansion to r: never smaller than
// now (expansion does not shrink), so a repeated call is a no-op.
func expandTo(current int64, r *csi.CapacityRange) (int64, error) {
	req, limit := r.GetRequiredBytes(), r.GetLimitBytes()
	if limit > 0 && req > limit {
		return 0, fmt.Errorf("required_bytes %d exceeds limit_bytes %d", req, limit)
	}
	if limit > 0 && current > limit {
		return 0, fmt.Errorf("the volume has %d bytes, more than limit_bytes %d; volumes do not shrink", current, limit)
	}
	return max(current, req), nil
}

// GetCapacity reports the free space of the root directory's filesystem
// for mount volumes reachable from the given topology, and 0 otherwise.
func (s *controllerServer) GetCapacity(ctx context.Context, req *csi.GetCapacityRequest) (*csi.GetCapacityResponse, error) {
	for _, c := range req.GetVolumeCapabilities() {
		if checkCapability(c) != nil {
			return &csi.GetCapacityResponse{}, nil
		}
	}
	if t := req.GetAccessibleTopology(); t != nil && len(s.cfg.Topology) > 0 && !topologyMatches(t.GetSegments(), s.cfg.Topology) {
		return &csi.GetCapacityResponse{}, nil
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(s.cfg.Root, &fs); err != nil {
		return nil, status.Errorf(codes.Internal, "GetCapacity: statfs %s: %v", s.cfg.Root, err)
	}
	return &csi.GetCapacityResponse{AvailableCapacity: int64(fs.Bavail) * fs.Bsize}, nil
}

func (s *controllerServer) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	var caps []*csi.ControllerServiceCapability
	for _, t := range s.controllerCapabilities() {
		caps = append(caps, &csi.ControllerServiceCapability{Type: &csi.ControllerServiceCapability_Rpc{
			Rpc: &csi.ControllerServiceCapability_RPC{Type: t}}})
	}
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: caps}, nil
}
