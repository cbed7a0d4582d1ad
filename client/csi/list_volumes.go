package csi

import (
	"context"
	"fmt"
	"maps"
	"slices"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/berth-csi/berth/structs"
)

// ListVolumesResponse is one page of ListVolumes; NextToken is empty on
// the last. VolumeID is not set on the volumes: the plugin does not know
// berth's IDs.
type ListVolumesResponse struct {
	Volumes   []*structs.CSIExternalVolume
	NextToken string
}

// ListVolumes returns one page of the controller's volumes (ListVolumes):
// at most maxEntries of them (0 lets the plugin choose), starting where
// the previous page's NextToken says ("" for the first page). A negative
// maxEntries fails with ErrInvalidRequest before any call; a listed
// volume without a volume_id fails with ErrInvalidResponse. A token the
// plugin no longer accepts is ABORTED: start again without one.
func (c *Client) ListVolumes(ctx context.Context, maxEntries int32, startingToken string) (*ListVolumesResponse, error) {
	const call = "ListVolumes"
	if maxEntries < 0 {
		return nil, wrapError(c.plugin, call, fmt.Errorf("%w: max entries %d is negative", ErrInvalidRequest, maxEntries))
	}
	out := &ListVolumesResponse{}
	err := c.call(ctx, call, func(ctx context.Context) error {
		resp, err := c.controller.ListVolumes(ctx, &csipb.ListVolumesRequest{MaxEntries: maxEntries, StartingToken: startingToken})
		if err != nil {
			return err
		}
		for i, e := range resp.GetEntries() {
			if e.GetVolume().GetVolumeId() == "" {
				return fmt.Errorf("%w: entry %d of %d was listed without a volume_id", ErrInvalidResponse, i+1, len(resp.GetEntries()))
			}
			out.Volumes = append(out.Volumes, fromListedVolume(e))
		}
		out.NextToken = resp.GetNextToken()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// fromListedVolume turns one ListVolumes entry into berth's view of it.
// PublishedExternalNodeIDs is set only by a plugin that offers
// LIST_VOLUMES_PUBLISHED_NODES. IsAbnormal and Status are never set here: the
// spec (v1.13.0) removed the entry's volume_condition; the client's
// ClientCSI.ControllerListVolumes fills them from ControllerGetVolumeHealth
// where the controller offers GET_VOLUME_HEALTH.
func fromListedVolume(e *csipb.ListVolumesResponse_Entry) *structs.CSIExternalVolume {
	v := e.GetVolume()
	return &structs.CSIExternalVolume{
		ExternalID:               v.GetVolumeId(),
		CapacityBytes:            v.GetCapacityBytes(),
		Context:                  maps.Clone(v.GetVolumeContext()),
		Topologies:               fromTopologies(v.GetAccessibleTopology()),
		PublishedExternalNodeIDs: slices.Clone(e.GetStatus().GetPublishedNodeIds()),
	}
}
