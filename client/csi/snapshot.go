package csi

import (
	"context"
	"fmt"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/berth-csi/berth/structs"
)

// Snapshot is a snapshot as the plugin reports it.
type Snapshot struct {
	ID             string
	SourceVolumeID string
	SizeBytes      int64     // 0: unknown
	CreateTime     time.Time // zero if the plugin did not say
	ReadyToUse     bool
}

// CreateSnapshotRequest is what CreateSnapshot sends. Name is the
// idempotency key.
type CreateSnapshotRequest struct {
	SourceVolumeID string
	Name           string
	Secrets        structs.CSISecrets
	Parameters     map[string]string
}

// ListSnapshotsRequest filters and pages ListSnapshots; every field is
// optional.
type ListSnapshotsRequest struct {
	SnapshotID     string
	SourceVolumeID string
	MaxEntries     int32
	StartingToken  string
	Secrets        structs.CSISecrets
}

// ListSnapshotsResponse is one page; NextToken is empty on the last.
type ListSnapshotsResponse struct {
	Snapshots []*Snapshot
	NextToken string
}

// CreateSnapshot asks the controller to snapshot a volume
// (CreateSnapshot).
func (c *Client) CreateSnapshot(ctx context.Context, req *CreateSnapshotRequest) (*Snapshot, error) {
	const call = "CreateSnapshot"
	if req == nil || req.Name == "" || req.SourceVolumeID == "" {
		return nil, wrapError(c.plugin, call, fmt.Errorf("%w: a snapshot name and a source volume ID are required", ErrInvalidRequest))
	}
	var out *Snapshot
	err := c.call(ctx, call, func(ctx context.Context) error {
		resp, err := c.controller.CreateSnapshot(ctx, &csipb.CreateSnapshotRequest{
			SourceVolumeId: req.SourceVolumeID,
			Name:           req.Name,
			Secrets:        req.Secrets,
			Parameters:     req.Parameters,
		})
		if err != nil {
			return err
		}
		if resp.GetSnapshot().GetSnapshotId() == "" {
			return fmt.Errorf("%w: snapshot %q was created without a snapshot_id", ErrInvalidResponse, req.Name)
		}
		out = fromSnapshot(resp.GetSnapshot())
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteSnapshot asks the controller to delete a snapshot
// (DeleteSnapshot). One already gone is deleted: NOT_FOUND is success.
func (c *Client) DeleteSnapshot(ctx context.Context, snapshotID string, secrets structs.CSISecrets) error {
	const call = "DeleteSnapshot"
	if snapshotID == "" {
		return wrapError(c.plugin, call, fmt.Errorf("%w: a snapshot ID is required", ErrInvalidRequest))
	}
	err := c.call(ctx, call, func(ctx context.Context) error {
		_, err := c.controller.DeleteSnapshot(ctx, &csipb.DeleteSnapshotRequest{SnapshotId: snapshotID, Secrets: secrets})
		return err
	})
	if CodeOf(err) == CodeNotFound {
		return nil
	}
	return err
}

// ListSnapshots returns one page of snapshots (ListSnapshots).
func (c *Client) ListSnapshots(ctx context.Context, req *ListSnapshotsRequest) (*ListSnapshotsResponse, error) {
	if req == nil {
		req = &ListSnapshotsRequest{}
	}
	out := &ListSnapshotsResponse{}
	err := c.call(ctx, "ListSnapshots", func(ctx context.Context) error {
		resp, err := c.controller.ListSnapshots(ctx, &csipb.ListSnapshotsRequest{
			SnapshotId:     req.SnapshotID,
			SourceVolumeId: req.SourceVolumeID,
			MaxEntries:     req.MaxEntries,
			StartingToken:  req.StartingToken,
			Secrets:        req.Secrets,
		})
		if err != nil {
			return err
		}
		for _, e := range resp.GetEntries() {
			if sn := e.GetSnapshot(); sn != nil {
				out.Snapshots = append(out.Snapshots, fromSnapshot(sn))
			}
		}
		out.NextToken = resp.GetNextToken()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func fromSnapshot(sn *csipb.Snapshot) *Snapshot {
	out := &Snapshot{
		ID:             sn.GetSnapshotId(),
		SourceVolumeID: sn.GetSourceVolumeId(),
		SizeBytes:      sn.GetSizeBytes(),
		ReadyToUse:     sn.GetReadyToUse(),
	}
	if ts := sn.GetCreationTime(); ts != nil {
		out.CreateTime = ts.AsTime()
	}
	return out
}
