package csi

import (
	"context"
	"fmt"
	"strings"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/berth-csi/berth/structs"
)

// NodeGetVolumeStats asks the node for the usage of a volume published at
// volumePath (stagingPath, where it was staged, may be empty): bytes and
// inodes, each nil when the plugin did not report it. Figures a plugin
// cannot mean (negative) are an ErrInvalidResponse.
func (c *Client) NodeGetVolumeStats(ctx context.Context, externalID, volumePath, stagingPath string) (bytes, inodes *structs.CSIUsageAmount, err error) {
	const call = "NodeGetVolumeStats"
	if externalID == "" {
		return nil, nil, wrapError(c.plugin, call, fmt.Errorf("%w: a volume ID is required", ErrInvalidRequest))
	}
	if err := checkPath(externalID, "volume path", volumePath); err != nil {
		return nil, nil, wrapError(c.plugin, call, err)
	}
	err = c.call(ctx, call, func(ctx context.Context) error {
		resp, err := c.node.NodeGetVolumeStats(ctx, &csipb.NodeGetVolumeStatsRequest{VolumeId: externalID,
			VolumePath: volumePath, StagingTargetPath: stagingPath})
		if err != nil {
			return err
		}
		for _, u := range resp.GetUsage() {
			amt := &structs.CSIUsageAmount{Used: u.GetUsed(), Available: u.GetAvailable(), Total: u.GetTotal()}
			if amt.Used < 0 || amt.Available < 0 || amt.Total < 0 {
				return fmt.Errorf("%w: volume %q: negative %s figures (used %d, available %d, total %d)",
					ErrInvalidResponse, externalID, u.GetUnit(), amt.Used, amt.Available, amt.Total)
			}
			switch u.GetUnit() {
			case csipb.VolumeUsage_BYTES:
				bytes = amt
			case csipb.VolumeUsage_INODES:
				inodes = amt
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return bytes, inodes, nil
}

// NodeGetVolumeHealth asks the node for the condition of a volume
// published at volumePath (alpha in the spec: plugins with
// GET_VOLUME_HEALTH). The volume is abnormal when the plugin reports any
// health entry; the message lists them ("INACCESSIBLE VolumeDirMissing:
// ...").
func (c *Client) NodeGetVolumeHealth(ctx context.Context, externalID, volumePath, stagingPath string) (*structs.CSIVolumeCondition, error) {
	return c.health(ctx, "NodeGetVolumeHealth", externalID, func(ctx context.Context) (*csipb.VolumeHealth, error) {
		resp, err := c.node.NodeGetVolumeHealth(ctx, &csipb.NodeGetVolumeHealthRequest{VolumeId: externalID,
			VolumePublishPath: volumePath, StagingTargetPath: stagingPath})
		return resp.GetVolumeHealth(), err
	})
}

// health makes one health call (named call) about externalID and reads
// its answer (conditionOf).
func (c *Client) health(ctx context.Context, call, externalID string, fn func(context.Context) (*csipb.VolumeHealth, error)) (*structs.CSIVolumeCondition, error) {
	if externalID == "" {
		return nil, wrapError(c.plugin, call, fmt.Errorf("%w: a volume ID is required", ErrInvalidRequest))
	}
	var cond *structs.CSIVolumeCondition
	err := c.call(ctx, call, func(ctx context.Context) error {
		h, err := fn(ctx)
		if err != nil {
			return err
		}
		cond = conditionOf(h)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return cond, nil
}

// conditionOf reads a VolumeHealth: abnormal with any entry. An entry's
// status unknown to this spec version still counts, as the spec asks.
func conditionOf(h *csipb.VolumeHealth) *structs.CSIVolumeCondition {
	entries := h.GetHealthStatuses()
	if len(entries) == 0 {
		return &structs.CSIVolumeCondition{}
	}
	parts := make([]string, 0, len(entries))
	for _, e := range entries {
		p := e.GetStatus().String()
		if e.GetReason() != "" {
			p += " " + e.GetReason()
		}
		if e.GetMessage() != "" {
			p += ": " + e.GetMessage()
		}
		parts = append(parts, p)
	}
	return &structs.CSIVolumeCondition{Abnormal: true, Message: structs.Truncate(strings.Join(parts, "; "), structs.MaxUsageMessage)}
}

// ControllerGetVolumeHealth asks the controller for a volume's condition
// (alpha in the spec: plugins with the controller's GET_VOLUME_HEALTH).
func (c *Client) ControllerGetVolumeHealth(ctx context.Context, externalID string) (*structs.CSIVolumeCondition, error) {
	return c.health(ctx, "ControllerGetVolumeHealth", externalID, func(ctx context.Context) (*csipb.VolumeHealth, error) {
		resp, err := c.controller.ControllerGetVolumeHealth(ctx, &csipb.ControllerGetVolumeHealthRequest{VolumeId: externalID})
		return resp.GetVolumeHealth(), err
	})
}
