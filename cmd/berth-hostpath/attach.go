package main

import (
	"context"
	"strconv"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// publishContextReadonly is the key of ControllerPublishVolume's
// publish_context that carries the readonly flag to the node.
const publishContextReadonly = "readonly"

// ControllerPublishVolume "attaches" a volume to this node: the
// attachment is recorded, counts against -max-volumes, makes the volume
// read-only on the node when asked, and is required before NodeStage.
// There is one node, so any other node ID is NOT_FOUND.
func (s *controllerServer) ControllerPublishVolume(ctx context.Context, req *csi.ControllerPublishVolumeRequest) (*csi.ControllerPublishVolumeResponse, error) {
	if !s.attachEnabled() {
		return nil, status.Error(codes.Unimplemented, "ControllerPublishVolume: disabled by -disable-attach")
	}
	id, node := req.GetVolumeId(), req.GetNodeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "ControllerPublishVolume: volume_id is missing")
	}
	if node == "" {
		return nil, status.Errorf(codes.InvalidArgument, "ControllerPublishVolume %s: node_id is missing", id)
	}
	if err := checkCapability(req.GetVolumeCapability()); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "ControllerPublishVolume %s: %v", id, err)
	}

	s.opMu.Lock()
	defer s.opMu.Unlock()
	st := s.store.current()
	v, ok := st.Volumes[id]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "ControllerPublishVolume: volume %s not found", id)
	}
	if err := checkAccessType(v, req.GetVolumeCapability()); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "ControllerPublishVolume %s: %v", id, err)
	}
	if node != s.cfg.NodeID {
		return nil, status.Errorf(codes.NotFound, "ControllerPublishVolume %s: node %q not found; this plugin serves node %q only", id, node, s.cfg.NodeID)
	}
	want := attachment{Readonly: req.GetReadonly(), AccessMode: req.GetVolumeCapability().GetAccessMode().GetMode().String()}
	resp := &csi.ControllerPublishVolumeResponse{PublishContext: map[string]string{
		publishContextReadonly: strconv.FormatBool(want.Readonly),
	}}
	if have, ok := v.Attachments[node]; ok {
		if have != want {
			return nil, status.Errorf(codes.AlreadyExists, "ControllerPublishVolume %s: already published to node %q with readonly=%t and access mode %s",
				id, node, have.Readonly, have.AccessMode)
		}
		return resp, nil
	}
	if limit := s.cfg.MaxVolumes; limit > 0 && st.attachedCount(node) >= limit {
		return nil, status.Errorf(codes.ResourceExhausted, "ControllerPublishVolume %s: node %q already has %d volumes published, the maximum (-max-volumes)", id, node, limit)
	}
	if err := s.store.update(func(st *state) error {
		v := st.Volumes[id]
		if v.Attachments == nil {
			v.Attachments = map[string]attachment{}
		}
		v.Attachments[node] = want
		return nil
	}); err != nil {
		return nil, status.Errorf(codes.Internal, "ControllerPublishVolume %s: %v", id, err)
	}
	s.log.Info("volume controller-published", "volume_id", id, "node_id", node, "readonly", want.Readonly)
	return resp, nil
}

// ControllerUnpublishVolume drops the attachment to one node, or to all
// nodes when node_id is empty. A volume or node that is not known is
// already unpublished (OK).
func (s *controllerServer) ControllerUnpublishVolume(ctx context.Context, req *csi.ControllerUnpublishVolumeRequest) (*csi.ControllerUnpublishVolumeResponse, error) {
	if !s.attachEnabled() {
		return nil, status.Error(codes.Unimplemented, "ControllerUnpublishVolume: disabled by -disable-attach")
	}
	id, node := req.GetVolumeId(), req.GetNodeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "ControllerUnpublishVolume: volume_id is missing")
	}
	s.opMu.Lock()
	defer s.opMu.Unlock()
	v, ok := s.store.current().Volumes[id]
	if !ok || len(v.Attachments) == 0 {
		return &csi.ControllerUnpublishVolumeResponse{}, nil
	}
	if _, ok := v.Attachments[node]; node != "" && !ok {
		return &csi.ControllerUnpublishVolumeResponse{}, nil
	}
	if err := s.store.update(func(st *state) error {
		v := st.Volumes[id]
		if node == "" {
			v.Attachments = nil
		} else {
			delete(v.Attachments, node)
		}
		return nil
	}); err != nil {
		return nil, status.Errorf(codes.Internal, "ControllerUnpublishVolume %s: %v", id, err)
	}
	s.log.Info("volume controller-unpublished", "volume_id", id, "node_id", node)
	return &csi.ControllerUnpublishVolumeResponse{}, nil
}
