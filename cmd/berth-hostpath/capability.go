package main

import (
	"fmt"
	"slices"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

type accessMode = csi.VolumeCapability_AccessMode_Mode

// checkCapability says why a volume capability cannot be served, or nil.
// Volumes are directories (the mount access type) or images served as
// loop devices (block), with any access mode; checkAccessType matches
// one to a volume. fs_type is ignored (a bind mount keeps the
// filesystem of the root directory); mount flags must be ones a bind
// mount can apply (see mountFlagBits).
func checkCapability(c *csi.VolumeCapability) error {
	if c == nil {
		return fmt.Errorf("volume capability is missing")
	}
	mode := c.GetAccessMode().GetMode()
	if mode == csi.VolumeCapability_AccessMode_UNKNOWN {
		return fmt.Errorf("volume capability has no access mode")
	}
	if _, ok := csi.VolumeCapability_AccessMode_Mode_name[int32(mode)]; !ok {
		return fmt.Errorf("access mode %d is unknown", mode)
	}
	switch t := c.GetAccessType().(type) {
	case *csi.VolumeCapability_Mount:
		flags := t.Mount.GetMountFlags()
		for i, f := range flags {
			if _, ok := mountFlagBits[f]; !ok {
				// mount flags may hold secrets: name the position, not the value
				return fmt.Errorf("mount flag %d of %d is not supported for a bind mount (supported: %s)", i+1, len(flags), supportedMountFlags())
			}
		}
		_, err := parseMountGroup(t.Mount.GetVolumeMountGroup())
		return err
	case *csi.VolumeCapability_Block:
		return nil
	default:
		return fmt.Errorf("volume capability has no access type (mount or block)")
	}
}

// checkCapabilities checks a list that must not be empty.
func checkCapabilities(caps []*csi.VolumeCapability) error {
	if len(caps) == 0 {
		return fmt.Errorf("volume_capabilities is missing")
	}
	for _, c := range caps {
		if err := checkCapability(c); err != nil {
			return err
		}
	}
	return nil
}

// usageOf is the part of a capability that a repeated call must match.
func usageOf(c *csi.VolumeCapability, readonly bool) usage {
	m := c.GetMount()
	return usage{
		AccessMode: c.GetAccessMode().GetMode().String(),
		FsType:     m.GetFsType(),
		MountFlags: slices.Clone(m.GetMountFlags()),
		Readonly:   readonly,
		Block:      isBlock(c),
	}
}

// exclusiveOnNode reports whether a mode allows one target path per node:
// every mode but SINGLE_NODE_MULTI_WRITER and the MULTI_NODE ones (the
// tables under NodePublishVolume in the spec).
func exclusiveOnNode(mode string) bool {
	switch mode {
	case csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER.String(),
		csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY.String(),
		csi.VolumeCapability_AccessMode_MULTI_NODE_SINGLE_WRITER.String(),
		csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER.String():
		return false
	}
	return true
}

// readerOnly reports whether a mode forbids writes.
func readerOnly(m accessMode) bool {
	return m == csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY ||
		m == csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
}

// pluginCapabilities is what GetPluginCapabilities advertises.
func (d *driver) pluginCapabilities() []*csi.PluginCapability {
	service := func(t csi.PluginCapability_Service_Type) *csi.PluginCapability {
		return &csi.PluginCapability{Type: &csi.PluginCapability_Service_{
			Service: &csi.PluginCapability_Service{Type: t}}}
	}
	caps := []*csi.PluginCapability{
		service(csi.PluginCapability_Service_CONTROLLER_SERVICE),
		{Type: &csi.PluginCapability_VolumeExpansion_{VolumeExpansion: &csi.PluginCapability_VolumeExpansion{
			Type: csi.PluginCapability_VolumeExpansion_ONLINE}}},
	}
	// SNAPSHOT_ACCESSIBILITY_CONSTRAINTS (alpha) is not offered: snapshots
	// carry no topology, and volumes made from them carry the node's.
	if len(d.cfg.Topology) > 0 {
		caps = append(caps, service(csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS))
	}
	return caps
}

// controllerCapabilities is what ControllerGetCapabilities advertises.
func (d *driver) controllerCapabilities() []csi.ControllerServiceCapability_RPC_Type {
	caps := []csi.ControllerServiceCapability_RPC_Type{
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
		csi.ControllerServiceCapability_RPC_LIST_VOLUMES,
		csi.ControllerServiceCapability_RPC_GET_CAPACITY,
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT,
		csi.ControllerServiceCapability_RPC_LIST_SNAPSHOTS,
		csi.ControllerServiceCapability_RPC_CLONE_VOLUME,
		csi.ControllerServiceCapability_RPC_EXPAND_VOLUME,
		csi.ControllerServiceCapability_RPC_GET_VOLUME,
		csi.ControllerServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER,
		csi.ControllerServiceCapability_RPC_GET_SNAPSHOT,
		csi.ControllerServiceCapability_RPC_GET_VOLUME_HEALTH,
	}
	if d.attachEnabled() {
		caps = append(caps,
			csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME,
			csi.ControllerServiceCapability_RPC_PUBLISH_READONLY,
			csi.ControllerServiceCapability_RPC_LIST_VOLUMES_PUBLISHED_NODES)
	}
	return caps
}

// nodeCapabilities is what NodeGetCapabilities advertises.
func (d *driver) nodeCapabilities() []csi.NodeServiceCapability_RPC_Type {
	caps := []csi.NodeServiceCapability_RPC_Type{
		csi.NodeServiceCapability_RPC_GET_VOLUME_STATS,
		csi.NodeServiceCapability_RPC_EXPAND_VOLUME,
		csi.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER,
		csi.NodeServiceCapability_RPC_GET_VOLUME_HEALTH,
		csi.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP,
	}
	if d.stageEnabled() {
		caps = append(caps, csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
	}
	return caps
}

// nodeExpands reports whether the node offers EXPAND_VOLUME, and so
// whether a controller expansion asks for NodeExpandVolume.
func (d *driver) nodeExpands() bool {
	return slices.Contains(d.nodeCapabilities(), csi.NodeServiceCapability_RPC_EXPAND_VOLUME)
}
