package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// NodeStageVolume bind-mounts the volume directory on the staging path,
// which the CO has created. Each step is recorded before it is done, so
// a retry after a failure or a restart finishes the work.
func (s *nodeServer) NodeStageVolume(ctx context.Context, req *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	if !s.stageEnabled() {
		return nil, status.Error(codes.Unimplemented, "NodeStageVolume: disabled by -disable-stage")
	}
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "NodeStageVolume: volume_id is missing")
	}
	path, err := absPath("staging_target_path", req.GetStagingTargetPath())
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "NodeStageVolume %s: %v", id, err)
	}
	c := req.GetVolumeCapability()
	if err := checkCapability(c); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "NodeStageVolume %s: %v", id, err)
	}

	s.opMu.Lock()
	defer s.opMu.Unlock()
	st := s.store.current()
	v, ok := st.Volumes[id]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "NodeStageVolume: volume %s not found", id)
	}
	readonly := readerOnly(c.GetAccessMode().GetMode()) || req.GetPublishContext()[publishContextReadonly] == "true"
	if s.attachEnabled() {
		a, ok := v.Attachments[s.cfg.NodeID]
		if !ok {
			return nil, status.Errorf(codes.FailedPrecondition, "NodeStageVolume %s: volume is not controller-published to node %q; call ControllerPublishVolume first", id, s.cfg.NodeID)
		}
		readonly = readonly || a.Readonly
	}
	if err := checkAccessType(v, c); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "NodeStageVolume %s: %v", id, err)
	}
	want := &stageRecord{VolumeID: id, Path: path, Usage: usageOf(c, readonly)}
	group := func() error { // once the request is known good
		return s.giveMountGroup(id, c.GetMount().GetVolumeMountGroup(), readonly)
	}

	if have, ok := st.Stages[path]; ok {
		if have.VolumeID != id {
			return nil, status.Errorf(codes.FailedPrecondition, "NodeStageVolume %s: staging path %s is in use by volume %s", id, path, have.VolumeID)
		}
		if !have.Usage.equal(want.Usage) {
			return nil, status.Errorf(codes.AlreadyExists, "NodeStageVolume %s: already staged at %s with another capability (%s)", id, path, describeUsage(have.Usage))
		}
		if err := errors.Join(group(), s.ensureStaged(st, have, readonly)); err != nil {
			return nil, status.Errorf(codes.Internal, "NodeStageVolume %s: %v", id, err)
		}
		return &csi.NodeStageVolumeResponse{}, nil
	}
	if others := st.stagesOf(id); len(others) > 0 {
		return nil, status.Errorf(codes.FailedPrecondition, "NodeStageVolume %s: already staged at %s; a volume has one staging path per node", id, strings.Join(others, ", "))
	}
	if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
		return nil, status.Errorf(codes.FailedPrecondition, "NodeStageVolume %s: staging path %s is not a directory (the CO creates it): %v", id, path, statErr(fi, err))
	}
	if err := notMounted(path); err != nil {
		return nil, status.Errorf(codes.FailedPrecondition, "NodeStageVolume %s: %v", id, err)
	}
	if err := group(); err != nil {
		return nil, status.Errorf(codes.Internal, "NodeStageVolume %s: %v", id, err)
	}

	if v.Block {
		return s.stageBlock(st, want)
	}
	if err := s.store.update(func(st *state) error {
		st.Stages[path] = want
		return nil
	}); err != nil {
		return nil, status.Errorf(codes.Internal, "NodeStageVolume %s: %v", id, err)
	}
	if err := ensureBind(s.volumeDir(id), path, readonly, want.Usage.MountFlags); err != nil {
		s.forget(func(st *state) { delete(st.Stages, path) })
		return nil, status.Errorf(codes.Internal, "NodeStageVolume %s: %v", id, err)
	}
	s.log.Info("volume staged", "volume_id", id, "staging_path", path, "readonly", readonly)
	return &csi.NodeStageVolumeResponse{}, nil
}

// NodeUnstageVolume unmounts the staging path (the CO removes the
// directory). A volume not staged there is OK; a volume still published
// from there is FAILED_PRECONDITION.
func (s *nodeServer) NodeUnstageVolume(ctx context.Context, req *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	if !s.stageEnabled() {
		return nil, status.Error(codes.Unimplemented, "NodeUnstageVolume: disabled by -disable-stage")
	}
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "NodeUnstageVolume: volume_id is missing")
	}
	path, err := absPath("staging_target_path", req.GetStagingTargetPath())
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "NodeUnstageVolume %s: %v", id, err)
	}

	s.opMu.Lock()
	defer s.opMu.Unlock()
	st := s.store.current()
	if have, ok := st.Stages[path]; !ok || have.VolumeID != id {
		if _, known := st.Volumes[id]; !known {
			return nil, status.Errorf(codes.NotFound, "NodeUnstageVolume: volume %s not found", id)
		}
		return &csi.NodeUnstageVolumeResponse{}, nil
	}
	for _, p := range st.publishesOf(id) {
		if p.StagingPath == path {
			return nil, status.Errorf(codes.FailedPrecondition, "NodeUnstageVolume %s: still published at %s; call NodeUnpublishVolume first", id, p.TargetPath)
		}
	}
	if have := st.Stages[path]; have.Loop != "" {
		if err := s.releaseLoop(st, id, have.Loop, 1); err != nil {
			return nil, status.Errorf(codes.Internal, "NodeUnstageVolume %s: %v", id, err)
		}
	} else if err := unmount(path); err != nil {
		return nil, status.Errorf(codes.Internal, "NodeUnstageVolume %s: %v", id, err)
	}
	if err := s.store.update(func(st *state) error {
		delete(st.Stages, path)
		return nil
	}); err != nil {
		return nil, status.Errorf(codes.Internal, "NodeUnstageVolume %s: %v", id, err)
	}
	s.log.Info("volume unstaged", "volume_id", id, "staging_path", path)
	return &csi.NodeUnstageVolumeResponse{}, nil
}

// ensureBind bind-mounts source on target unless target is already a
// mount point (a retry, or a restart that kept the mounts).
func ensureBind(source, target string, readonly bool, flags []string) error {
	mounted, err := isMountPoint(target)
	if err != nil {
		return err
	}
	if mounted {
		return nil
	}
	return bindMount(source, target, readonly, flags)
}

// notMounted refuses a path that something other than a record of ours
// has mounted on: mounting over it would hide that mount, and unmounting
// later would take it away.
func notMounted(path string) error {
	mounted, err := isMountPoint(path)
	if err != nil {
		return err
	}
	if mounted {
		return fmt.Errorf("%s is already a mount point, not one this plugin made", path)
	}
	return nil
}

// forget drops a record after the work it announced failed. It is best
// effort: a record left behind is cleaned by the CO's retry or undo call.
func (d *driver) forget(fn func(*state)) {
	if err := d.store.update(func(st *state) error { fn(st); return nil }); err != nil {
		d.log.Warn("cannot drop the record of a failed operation", "error", err)
	}
}

// absPath checks a path argument: present and absolute. It returns the
// cleaned path, the key of the node records.
func absPath(field, p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("%s is missing", field)
	}
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("%s %q is not an absolute path", field, p)
	}
	return filepath.Clean(p), nil
}

func statErr(fi os.FileInfo, err error) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("mode %s", fi.Mode())
}

func describeUsage(u usage) string {
	s := fmt.Sprintf("access mode %s, readonly=%t", u.AccessMode, u.Readonly)
	if u.FsType != "" {
		s += ", fs_type " + u.FsType
	}
	if len(u.MountFlags) > 0 {
		s += fmt.Sprintf(", %d mount flags", len(u.MountFlags))
	}
	return s
}

// ensureStaged puts back what a recorded stage holds, if it went (a
// restart of the node, an unmount by hand): the bind mount of a
// directory, or a block volume's loop device.
func (s *nodeServer) ensureStaged(st *state, have *stageRecord, readonly bool) error {
	if have.Loop == "" {
		return ensureBind(s.volumeDir(have.VolumeID), have.Path, readonly, have.Usage.MountFlags)
	}
	if s.volumeLoop(st, have.VolumeID) != "" {
		return nil
	}
	dev, err := attachLoop(s.blockImage(have.VolumeID))
	if err != nil {
		return err
	}
	return s.store.update(func(st *state) error {
		st.Stages[have.Path].Loop = dev
		return nil
	})
}

// stageBlock attaches a block volume's image to a loop device (or finds
// the one a publish attached) and records the stage; nothing is mounted
// at the staging path.
func (s *nodeServer) stageBlock(st *state, want *stageRecord) (*csi.NodeStageVolumeResponse, error) {
	id := want.VolumeID
	existing := s.volumeLoop(st, id)
	dev, err := s.ensureLoop(st, id)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "NodeStageVolume %s: %v", id, err)
	}
	want.Loop = dev
	if err := s.store.update(func(st *state) error {
		st.Stages[want.Path] = want
		return nil
	}); err != nil {
		if existing == "" {
			_ = detachLoop(dev)
		}
		return nil, status.Errorf(codes.Internal, "NodeStageVolume %s: %v", id, err)
	}
	s.log.Info("block volume staged", "volume_id", id, "staging_path", want.Path, "loop_device", dev)
	return &csi.NodeStageVolumeResponse{}, nil
}
