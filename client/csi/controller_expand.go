package csi

import (
	"context"
	"fmt"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/berth-csi/berth/structs"
)

// ExpandVolumeRequest is what ControllerExpandVolume sends.
type ExpandVolumeRequest struct {
	ExternalVolumeID string
	// CapacityMin and CapacityMax are the capacity range (required_bytes,
	// limit_bytes): CapacityMin is required, and CapacityMax 0 sets no
	// limit.
	CapacityMin int64
	CapacityMax int64
	// Capability is one the volume is registered with, nil if it has
	// none; MountOptions applies to it when it is a file-system one.
	Capability   *structs.CSIVolumeCapability
	MountOptions *structs.CSIMountOptions
	Secrets      structs.CSISecrets
}

// ExpandVolumeResponse is the volume's capacity after the expansion.
type ExpandVolumeResponse struct {
	CapacityBytes int64 // 0: unknown
	// NodeExpansionRequired says that each node where the volume is
	// staged or published must also expand it (NodeExpandVolume).
	NodeExpansionRequired bool
}

// NodeExpandVolumeRequest is what NodeExpandVolume sends.
type NodeExpandVolumeRequest struct {
	ExternalVolumeID string
	// VolumePath is where the volume is published or, for a volume that
	// is only staged, its staging path; StagingPath is the staging path
	// of a staged volume, "" if it is not staged.
	VolumePath  string
	StagingPath string
	// CapacityMin and CapacityMax are as in ExpandVolumeRequest: what
	// ControllerExpandVolume was asked for.
	CapacityMin  int64
	CapacityMax  int64
	Capability   *structs.CSIVolumeCapability // nil if the volume has none
	MountOptions *structs.CSIMountOptions
	Secrets      structs.CSISecrets
}

// ControllerExpandVolume asks the controller to grow a volume to at least
// CapacityMin bytes (ControllerExpandVolume). A request berth can tell is
// invalid (no volume ID, CapacityMin not positive, CapacityMax set and
// below CapacityMin, an unknown capability) fails with ErrInvalidRequest
// before any call.
func (c *Client) ControllerExpandVolume(ctx context.Context, req *ExpandVolumeRequest) (*ExpandVolumeResponse, error) {
	const call = "ControllerExpandVolume"
	if req == nil || req.ExternalVolumeID == "" {
		return nil, wrapError(c.plugin, call, fmt.Errorf("%w: a volume ID is required", ErrInvalidRequest))
	}
	capRange, err := expansionRange(req.ExternalVolumeID, req.CapacityMin, req.CapacityMax)
	if err != nil {
		return nil, wrapError(c.plugin, call, err)
	}
	vc, err := optionalCapability(req.Capability, req.MountOptions)
	if err != nil {
		return nil, wrapError(c.plugin, call, err)
	}
	var out *ExpandVolumeResponse
	err = c.call(ctx, call, func(ctx context.Context) error {
		resp, err := c.controller.ControllerExpandVolume(ctx, &csipb.ControllerExpandVolumeRequest{
			VolumeId:         req.ExternalVolumeID,
			CapacityRange:    capRange,
			Secrets:          req.Secrets,
			VolumeCapability: vc,
		})
		if err != nil {
			return err
		}
		out = &ExpandVolumeResponse{
			CapacityBytes:         resp.GetCapacityBytes(),
			NodeExpansionRequired: resp.GetNodeExpansionRequired(),
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	c.logger.Debug("volume expanded", "external_id", req.ExternalVolumeID, "capacity_bytes", out.CapacityBytes,
		"node_expansion_required", out.NodeExpansionRequired)
	return out, nil
}

// NodeExpandVolume asks the node to grow a volume staged or published on
// it to at least CapacityMin bytes (NodeExpandVolume), after
// ControllerExpandVolume said the node must. It returns the volume's
// capacity, 0 if the plugin did not say. A request berth can tell is
// invalid (no volume ID or volume path, a capacity range as
// ControllerExpandVolume refuses, an unknown capability) fails with
// ErrInvalidRequest before any call.
func (c *Client) NodeExpandVolume(ctx context.Context, req *NodeExpandVolumeRequest) (capacityBytes int64, err error) {
	const call = "NodeExpandVolume"
	if req == nil || req.ExternalVolumeID == "" || req.VolumePath == "" {
		return 0, wrapError(c.plugin, call, fmt.Errorf("%w: a volume ID and a volume path are required", ErrInvalidRequest))
	}
	capRange, err := expansionRange(req.ExternalVolumeID, req.CapacityMin, req.CapacityMax)
	if err != nil {
		return 0, wrapError(c.plugin, call, err)
	}
	vc, err := optionalCapability(req.Capability, req.MountOptions)
	if err != nil {
		return 0, wrapError(c.plugin, call, err)
	}
	err = c.call(ctx, call, func(ctx context.Context) error {
		resp, err := c.node.NodeExpandVolume(ctx, &csipb.NodeExpandVolumeRequest{
			VolumeId:          req.ExternalVolumeID,
			VolumePath:        req.VolumePath,
			CapacityRange:     capRange,
			StagingTargetPath: req.StagingPath,
			VolumeCapability:  vc,
			Secrets:           req.Secrets,
		})
		if err != nil {
			return err
		}
		capacityBytes = resp.GetCapacityBytes()
		return nil
	})
	if err != nil {
		return 0, err
	}
	c.logger.Debug("volume expanded on the node", "external_id", req.ExternalVolumeID, "capacity_bytes", capacityBytes)
	return capacityBytes, nil
}

// expansionRange is the capacity range of an expansion: a positive
// minimum and, unless max is 0, a maximum no smaller than it.
func expansionRange(volumeID string, lo, hi int64) (*csipb.CapacityRange, error) {
	switch {
	case lo <= 0:
		return nil, fmt.Errorf("%w: volume %q: an expansion needs a positive capacity min (got %d)", ErrInvalidRequest, volumeID, lo)
	case hi != 0 && hi < lo:
		return nil, fmt.Errorf("%w: volume %q: capacity max %d is below capacity min %d", ErrInvalidRequest, volumeID, hi, lo)
	}
	return &csipb.CapacityRange{RequiredBytes: lo, LimitBytes: hi}, nil
}

// optionalCapability converts c, which may be nil (then mo is unused).
func optionalCapability(c *structs.CSIVolumeCapability, mo *structs.CSIMountOptions) (*csipb.VolumeCapability, error) {
	if c == nil {
		return nil, nil
	}
	return volumeCapability(c, mo)
}
