package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// NodePublishVolume creates the target directory and bind-mounts the
// staging path on it (the volume directory under -disable-stage),
// read-only when the request, the access mode or ControllerPublishVolume
// says so.
func (s *nodeServer) NodePublishVolume(ctx context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "NodePublishVolume: volume_id is missing")
	}
	target, err := absPath("target_path", req.GetTargetPath())
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "NodePublishVolume %s: %v", id, err)
	}
	c := req.GetVolumeCapability()
	if err := checkCapability(c); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "NodePublishVolume %s: %v", id, err)
	}
	staging := ""
	if s.stageEnabled() {
		if req.GetStagingTargetPath() == "" {
			return nil, status.Errorf(codes.FailedPrecondition, "NodePublishVolume %s: staging_target_path is missing; this plugin has STAGE_UNSTAGE_VOLUME, call NodeStageVolume first", id)
		}
		if staging, err = absPath("staging_target_path", req.GetStagingTargetPath()); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "NodePublishVolume %s: %v", id, err)
		}
	}

	s.opMu.Lock()
	defer s.opMu.Unlock()
	st := s.store.current()
	v, ok := st.Volumes[id]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "NodePublishVolume: volume %s not found", id)
	}
	if err := checkAccessType(v, c); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "NodePublishVolume %s: %v", id, err)
	}
	readonly := req.GetReadonly() || readerOnly(c.GetAccessMode().GetMode()) ||
		req.GetPublishContext()[publishContextReadonly] == "true"
	source := s.volumeDir(id)
	if s.stageEnabled() {
		stage, ok := st.Stages[staging]
		if !ok || stage.VolumeID != id {
			return nil, status.Errorf(codes.FailedPrecondition, "NodePublishVolume %s: volume is not staged at %s; call NodeStageVolume first", id, staging)
		}
		source, readonly = staging, readonly || stage.Usage.Readonly
	} else if s.attachEnabled() {
		a, ok := v.Attachments[s.cfg.NodeID]
		if !ok {
			return nil, status.Errorf(codes.FailedPrecondition, "NodePublishVolume %s: volume is not controller-published to node %q; call ControllerPublishVolume first", id, s.cfg.NodeID)
		}
		readonly = readonly || a.Readonly
	}
	want := &publishRecord{VolumeID: id, TargetPath: target, StagingPath: staging, Usage: usageOf(c, req.GetReadonly())}
	group := func() error { // once the request is known good
		return s.giveMountGroup(id, c.GetMount().GetVolumeMountGroup(), readonly)
	}

	if have, ok := st.Publishes[target]; ok {
		if have.VolumeID != id {
			return nil, status.Errorf(codes.FailedPrecondition, "NodePublishVolume %s: target %s is in use by volume %s", id, target, have.VolumeID)
		}
		if have.StagingPath != staging || !have.Usage.equal(want.Usage) {
			return nil, status.Errorf(codes.AlreadyExists, "NodePublishVolume %s: already published at %s with other arguments (%s, staged at %s)",
				id, target, describeUsage(have.Usage), have.StagingPath)
		}
		if have.Usage.Block {
			err = s.ensureBlockTarget(st, have, readonly)
		} else {
			err = errors.Join(group(), mountTarget(have, source, readonly))
		}
		if err != nil {
			return nil, status.Errorf(codes.Internal, "NodePublishVolume %s: %v", id, err)
		}
		return &csi.NodePublishVolumeResponse{}, nil
	}
	for _, other := range st.publishesOf(id) {
		if exclusiveOnNode(other.Usage.AccessMode) || exclusiveOnNode(want.Usage.AccessMode) {
			return nil, status.Errorf(codes.FailedPrecondition, "NodePublishVolume %s: already published at %s with access mode %s; %s allows one target path per node",
				id, other.TargetPath, other.Usage.AccessMode, want.Usage.AccessMode)
		}
		if !sameCapability(other.Usage, want.Usage) {
			return nil, status.Errorf(codes.FailedPrecondition, "NodePublishVolume %s: already published at %s with another capability (%s)", id, other.TargetPath, describeUsage(other.Usage))
		}
	}
	if fi, err := os.Stat(filepath.Dir(target)); err != nil || !fi.IsDir() {
		return nil, status.Errorf(codes.FailedPrecondition, "NodePublishVolume %s: the parent of target %s is not a directory (the CO creates it): %v", id, target, statErr(fi, err))
	}

	if v.Block {
		return s.publishBlock(st, want, readonly)
	}
	switch fi, err := os.Stat(target); {
	case errors.Is(err, fs.ErrNotExist):
		want.CreatedTarget = true
	case err != nil:
		return nil, status.Errorf(codes.Internal, "NodePublishVolume %s: %v", id, err)
	case !fi.IsDir():
		return nil, status.Errorf(codes.FailedPrecondition, "NodePublishVolume %s: target %s exists and is not a directory", id, target)
	default:
		if err := notMounted(target); err != nil {
			return nil, status.Errorf(codes.FailedPrecondition, "NodePublishVolume %s: %v", id, err)
		}
	}

	if err := group(); err != nil {
		return nil, status.Errorf(codes.Internal, "NodePublishVolume %s: %v", id, err)
	}
	if err := s.store.update(func(st *state) error {
		st.Publishes[target] = want
		return nil
	}); err != nil {
		return nil, status.Errorf(codes.Internal, "NodePublishVolume %s: %v", id, err)
	}
	if err := mountTarget(want, source, readonly); err != nil {
		if want.CreatedTarget {
			_ = os.Remove(target)
		}
		s.forget(func(st *state) { delete(st.Publishes, target) })
		return nil, status.Errorf(codes.Internal, "NodePublishVolume %s: %v", id, err)
	}
	s.log.Info("volume published", "volume_id", id, "target_path", target, "readonly", readonly)
	return &csi.NodePublishVolumeResponse{}, nil
}

// sameCapability compares two usages but for readonly.
func sameCapability(a, b usage) bool {
	a.Readonly, b.Readonly = false, false
	return a.equal(b)
}

// mountTarget creates the target directory when the plugin owns it
// (again, after a crash between recording and creating it) and bind-mounts
// source on it unless that is done already.
func mountTarget(r *publishRecord, source string, readonly bool) error {
	if r.CreatedTarget {
		if err := os.Mkdir(r.TargetPath, 0o750); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	return ensureBind(source, r.TargetPath, readonly, r.Usage.MountFlags)
}

// NodeUnpublishVolume unmounts the target and removes the directory if
// NodePublishVolume created it (the spec makes that the plugin's job; a
// directory the CO made is the CO's). A volume not published there is
// OK; an unknown volume is NOT_FOUND.
func (s *nodeServer) NodeUnpublishVolume(ctx context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "NodeUnpublishVolume: volume_id is missing")
	}
	target, err := absPath("target_path", req.GetTargetPath())
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "NodeUnpublishVolume %s: %v", id, err)
	}

	s.opMu.Lock()
	defer s.opMu.Unlock()
	st := s.store.current()
	have, ok := st.Publishes[target]
	if !ok || have.VolumeID != id {
		if _, known := st.Volumes[id]; !known {
			return nil, status.Errorf(codes.NotFound, "NodeUnpublishVolume: volume %s not found", id)
		}
		return &csi.NodeUnpublishVolumeResponse{}, nil
	}
	if !have.Usage.Block { // a block target is a device node, not a mount
		if err := unmount(target); err != nil {
			return nil, status.Errorf(codes.Internal, "NodeUnpublishVolume %s: %v", id, err)
		}
	}
	if have.CreatedTarget {
		if err := os.Remove(target); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, status.Errorf(codes.Internal, "NodeUnpublishVolume %s: remove target %s: %v", id, target, err)
		}
	}
	if have.Loop != "" { // the last user of the volume's loop device detaches it
		if err := s.releaseLoop(st, id, have.Loop, 1); err != nil {
			return nil, status.Errorf(codes.Internal, "NodeUnpublishVolume %s: %v", id, err)
		}
	}
	if err := s.store.update(func(st *state) error {
		delete(st.Publishes, target)
		return nil
	}); err != nil {
		return nil, status.Errorf(codes.Internal, "NodeUnpublishVolume %s: %v", id, err)
	}
	s.log.Info("volume unpublished", "volume_id", id, "target_path", target)
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// publishBlock makes the target a device node of the volume's loop
// device: the stage's, or under -disable-stage one this publish attaches.
// The target must not exist: the plugin makes it, and removes it on
// unpublish.
func (s *nodeServer) publishBlock(st *state, want *publishRecord, readonly bool) (*csi.NodePublishVolumeResponse, error) {
	id, target := want.VolumeID, want.TargetPath
	if _, err := os.Lstat(target); err == nil {
		return nil, status.Errorf(codes.FailedPrecondition, "NodePublishVolume %s: target %s exists; for a block volume the plugin makes the target (a device node)", id, target)
	}
	dev := s.volumeLoop(st, id)
	if dev == "" && s.stageEnabled() {
		return nil, status.Errorf(codes.FailedPrecondition, "NodePublishVolume %s: the volume's loop device is gone; call NodeStageVolume again", id)
	}
	attached := false // by this publish (-disable-stage): undone if it fails
	if dev == "" {
		var err error
		if dev, err = attachLoop(s.blockImage(id)); err != nil {
			return nil, status.Errorf(codes.Internal, "NodePublishVolume %s: %v", id, err)
		}
		attached = true
	}
	want.Loop, want.CreatedTarget = dev, true
	undoAttach := func() {
		if attached {
			_ = detachLoop(dev)
		}
	}
	if err := s.store.update(func(st *state) error {
		st.Publishes[target] = want
		return nil
	}); err != nil {
		undoAttach()
		return nil, status.Errorf(codes.Internal, "NodePublishVolume %s: %v", id, err)
	}
	if err := makeBlockTarget(target, dev, readonly); err != nil {
		_ = os.Remove(target)
		s.forget(func(st *state) { delete(st.Publishes, target) })
		undoAttach()
		return nil, status.Errorf(codes.Internal, "NodePublishVolume %s: %v", id, err)
	}
	s.log.Info("block volume published", "volume_id", id, "target_path", target, "loop_device", dev, "readonly", readonly)
	return &csi.NodePublishVolumeResponse{}, nil
}

// ensureBlockTarget puts back a recorded block publish's device node,
// attaching the loop device again where the publish attached it.
func (s *nodeServer) ensureBlockTarget(st *state, have *publishRecord, readonly bool) error {
	dev := s.volumeLoop(st, have.VolumeID)
	if dev == "" {
		if s.stageEnabled() {
			return fmt.Errorf("the volume's loop device is gone; call NodeStageVolume again")
		}
		var err error
		if dev, err = attachLoop(s.blockImage(have.VolumeID)); err != nil {
			return err
		}
		if err := s.store.update(func(st *state) error {
			st.Publishes[have.TargetPath].Loop = dev
			return nil
		}); err != nil {
			return err
		}
	}
	if err := makeBlockTarget(have.TargetPath, dev, readonly); err != nil {
		// Our own node, of a loop device since replaced: made again.
		if rmErr := os.Remove(have.TargetPath); rmErr != nil {
			return err
		}
		return makeBlockTarget(have.TargetPath, dev, readonly)
	}
	return nil
}
