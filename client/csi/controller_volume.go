package csi

import (
	"context"
	"fmt"
	"maps"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/berth-csi/berth/structs"
)

// CreateVolumeRequest is what CreateVolume sends. Name is the idempotency
// key: the same name with compatible arguments returns the same volume.
type CreateVolumeRequest struct {
	Name string
	// CapacityMin and CapacityMax are the capacity range
	// (required_bytes, limit_bytes); 0 leaves a bound unset, and both 0
	// sends no range.
	CapacityMin  int64
	CapacityMax  int64
	Capabilities []*structs.CSIVolumeCapability
	MountOptions *structs.CSIMountOptions // for the file-system capabilities
	Secrets      structs.CSISecrets
	Parameters   map[string]string
	// SnapshotID or CloneID (not both) is the volume's content source.
	SnapshotID string
	CloneID    string
	// RequiredTopologies and PreferredTopologies are the accessibility
	// requirements (requisite, preferred).
	RequiredTopologies  []*structs.CSITopology
	PreferredTopologies []*structs.CSITopology
}

// CreateVolumeResponse is the volume the plugin made (or had made for the
// same name).
type CreateVolumeResponse struct {
	ExternalVolumeID string
	CapacityBytes    int64 // 0: unknown
	VolumeContext    map[string]string
	Topologies       []*structs.CSITopology
}

// ValidateRequest is what ValidateVolumeCapabilities sends.
type ValidateRequest struct {
	ExternalVolumeID string
	Capabilities     []*structs.CSIVolumeCapability
	MountOptions     *structs.CSIMountOptions
	Secrets          structs.CSISecrets
	Parameters       map[string]string
	Context          map[string]string // the volume context CreateVolume returned
}

// CreateVolume asks the controller to create a volume (CreateVolume). A
// request berth can tell is invalid (no name, no capabilities, an unknown
// mode, a bad capacity range, two content sources) fails with
// ErrInvalidRequest before any call.
func (c *Client) CreateVolume(ctx context.Context, req *CreateVolumeRequest) (*CreateVolumeResponse, error) {
	const call = "CreateVolume"
	pb, err := createVolumeRequest(req)
	if err != nil {
		return nil, wrapError(c.plugin, call, err)
	}
	var out *CreateVolumeResponse
	err = c.call(ctx, call, func(ctx context.Context) error {
		resp, err := c.controller.CreateVolume(ctx, pb)
		if err != nil {
			return err
		}
		v := resp.GetVolume()
		if v.GetVolumeId() == "" {
			return fmt.Errorf("%w: volume %q was created without a volume_id", ErrInvalidResponse, req.Name)
		}
		out = &CreateVolumeResponse{
			ExternalVolumeID: v.GetVolumeId(),
			CapacityBytes:    v.GetCapacityBytes(),
			VolumeContext:    maps.Clone(v.GetVolumeContext()),
			Topologies:       fromTopologies(v.GetAccessibleTopology()),
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	c.logger.Debug("volume created", "name", req.Name, "external_id", out.ExternalVolumeID)
	return out, nil
}

func createVolumeRequest(req *CreateVolumeRequest) (*csipb.CreateVolumeRequest, error) {
	if req == nil || req.Name == "" {
		return nil, fmt.Errorf("%w: a volume name is required", ErrInvalidRequest)
	}
	caps, err := volumeCapabilities(req.Capabilities, req.MountOptions)
	if err != nil {
		return nil, err
	}
	pb := &csipb.CreateVolumeRequest{
		Name:               req.Name,
		VolumeCapabilities: caps,
		Parameters:         req.Parameters,
		Secrets:            req.Secrets,
	}
	switch lo, hi := req.CapacityMin, req.CapacityMax; {
	case lo < 0 || hi < 0:
		return nil, fmt.Errorf("%w: capacity range %d..%d has a negative bound", ErrInvalidRequest, lo, hi)
	case hi > 0 && lo > hi:
		return nil, fmt.Errorf("%w: capacity min %d exceeds capacity max %d", ErrInvalidRequest, lo, hi)
	case lo > 0 || hi > 0:
		pb.CapacityRange = &csipb.CapacityRange{RequiredBytes: lo, LimitBytes: hi}
	}
	switch {
	case req.SnapshotID != "" && req.CloneID != "":
		return nil, fmt.Errorf("%w: a volume has one content source, not snapshot %q and clone of %q",
			ErrInvalidRequest, req.SnapshotID, req.CloneID)
	case req.SnapshotID != "":
		pb.VolumeContentSource = &csipb.VolumeContentSource{Type: &csipb.VolumeContentSource_Snapshot{
			Snapshot: &csipb.VolumeContentSource_SnapshotSource{SnapshotId: req.SnapshotID}}}
	case req.CloneID != "":
		pb.VolumeContentSource = &csipb.VolumeContentSource{Type: &csipb.VolumeContentSource_Volume{
			Volume: &csipb.VolumeContentSource_VolumeSource{VolumeId: req.CloneID}}}
	}
	if len(req.RequiredTopologies) > 0 || len(req.PreferredTopologies) > 0 {
		pb.AccessibilityRequirements = &csipb.TopologyRequirement{
			Requisite: toTopologies(req.RequiredTopologies),
			Preferred: toTopologies(req.PreferredTopologies),
		}
	}
	return pb, nil
}

// DeleteVolume asks the controller to delete a volume (DeleteVolume). A
// volume that is already gone is deleted: NOT_FOUND is success, as is the
// OK the spec requires plugins to answer.
func (c *Client) DeleteVolume(ctx context.Context, externalID string, secrets structs.CSISecrets) error {
	const call = "DeleteVolume"
	if externalID == "" {
		return wrapError(c.plugin, call, fmt.Errorf("%w: a volume ID is required", ErrInvalidRequest))
	}
	err := c.call(ctx, call, func(ctx context.Context) error {
		_, err := c.controller.DeleteVolume(ctx, &csipb.DeleteVolumeRequest{VolumeId: externalID, Secrets: secrets})
		return err
	})
	if CodeOf(err) == CodeNotFound {
		c.logger.Debug("volume already gone", "external_id", externalID)
		return nil
	}
	return err
}

// ValidateResponse is what ValidateVolumeCapabilities answered.
type ValidateResponse struct {
	// Confirmed is true when the plugin confirmed every capability asked
	// for, as asked; false when it did not confirm them.
	Confirmed bool
	// Message is the plugin's message, if any: why it did not confirm.
	Message string
}

// ValidateVolumeCapabilities asks the controller whether a volume supports
// the capabilities asked for. An answer without confirmed is Confirmed
// false with the plugin's message, and no error: the plugin did not
// confirm them, which is not a failure of the call. A confirmed answer is
// compared with what was asked, field by field, as the spec requires, and
// a difference fails with ErrCapabilityMismatch naming the first field
// that differs (never a mount flag's value); the plugin's message, if
// any, ends the error.
func (c *Client) ValidateVolumeCapabilities(ctx context.Context, req *ValidateRequest) (*ValidateResponse, error) {
	const call = "ValidateVolumeCapabilities"
	if req == nil || req.ExternalVolumeID == "" {
		return nil, wrapError(c.plugin, call, fmt.Errorf("%w: a volume ID is required", ErrInvalidRequest))
	}
	caps, err := volumeCapabilities(req.Capabilities, req.MountOptions)
	if err != nil {
		return nil, wrapError(c.plugin, call, err)
	}
	var out *ValidateResponse
	err = c.call(ctx, call, func(ctx context.Context) error {
		resp, err := c.controller.ValidateVolumeCapabilities(ctx, &csipb.ValidateVolumeCapabilitiesRequest{
			VolumeId:           req.ExternalVolumeID,
			VolumeContext:      req.Context,
			VolumeCapabilities: caps,
			Parameters:         req.Parameters,
			Secrets:            req.Secrets,
		})
		if err != nil {
			return err
		}
		if resp.GetConfirmed() == nil {
			c.logger.Debug("volume capabilities not confirmed", "external_id", req.ExternalVolumeID, "message", resp.GetMessage())
			out = &ValidateResponse{Message: resp.GetMessage()}
			return nil
		}
		if err := compareConfirmed(caps, resp.GetConfirmed().GetVolumeCapabilities()); err != nil {
			if msg := resp.GetMessage(); msg != "" {
				return fmt.Errorf("%w (plugin message: %s)", err, msg)
			}
			return err
		}
		out = &ValidateResponse{Confirmed: true, Message: resp.GetMessage()}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func toTopologies(ts []*structs.CSITopology) []*csipb.Topology {
	var out []*csipb.Topology
	for _, t := range ts {
		if t != nil {
			out = append(out, &csipb.Topology{Segments: maps.Clone(t.Segments)})
		}
	}
	return out
}

func fromTopologies(ts []*csipb.Topology) []*structs.CSITopology {
	var out []*structs.CSITopology
	for _, t := range ts {
		if t != nil {
			out = append(out, &structs.CSITopology{Segments: maps.Clone(t.GetSegments())})
		}
	}
	return out
}
