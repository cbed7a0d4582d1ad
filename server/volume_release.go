package server

import (
	"context"
	"fmt"
	"time"

	"github.com/berth-csi/berth/server/volumewatcher"
	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
)

// claimStepTimeout bounds one detach call of the volumewatcher.
const claimStepTimeout = 30 * time.Second

// volumeReleaser is what the leader's volumewatcher does through this
// server: raft writes, and detach calls to clients and controllers.
type volumeReleaser struct{ s *Server }

var _ volumewatcher.Deps = (*volumeReleaser)(nil)

// newVolumeWatcher builds the volumewatcher; leaderLoop runs it.
func (s *Server) newVolumeWatcher() (*volumewatcher.Watcher, error) {
	cfg := volumewatcher.DefaultConfig()
	cfg.Deps = &volumeReleaser{s: s}
	cfg.Logger = s.logger.Named("volumewatcher")
	return volumewatcher.New(cfg)
}

func (r *volumeReleaser) State() *state.StateStore { return r.s.State() }

func (r *volumeReleaser) ApplyClaims(ctx context.Context, req *structs.CSIVolumeClaimBatchRequest) ([]error, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	errs, _, err := raftApply[[]error](r.s, structs.CSIVolumeClaimRequestType, req)
	return errs, err
}

func (r *volumeReleaser) NodeDetach(ctx context.Context, vol *structs.CSIVolume, claim *structs.CSIVolumeClaim) error {
	return r.s.nodeDetach(ctx, vol, claim)
}

func (r *volumeReleaser) ControllerDetach(ctx context.Context, vol *structs.CSIVolume, claim *structs.CSIVolumeClaim) error {
	return r.s.controllerDetach(ctx, vol, claim)
}

// nodeDetach has the claiming client unpublish (and, for its last user,
// unstage) the volume. A node that is down or gone cannot answer, and its
// mounts went with it or will be cleaned by its client on return: the step
// is skipped so the controller can detach.
func (s *Server) nodeDetach(ctx context.Context, vol *structs.CSIVolume, claim *structs.CSIVolumeClaim) error {
	node, err := s.State().NodeByID(nil, claim.NodeID)
	if err != nil {
		return err
	}
	if node == nil || !node.Ready() {
		return nil
	}
	req := &structs.ClientCSINodeDetachVolumeRequest{PluginID: vol.PluginID, NodeID: claim.NodeID, AllocID: claim.AllocID,
		VolumeID: vol.ID, ExternalVolumeID: vol.ExternalID, AccessMode: claim.AccessMode, AttachmentMode: claim.AttachmentMode}
	ctx, cancel := context.WithTimeout(ctx, claimStepTimeout)
	defer cancel()
	err = s.callClient(ctx, claim.NodeID, "ClientCSI.NodeDetachVolume", "ClientCSI.NodeDetachVolume", req, req,
		&structs.ClientCSINodeDetachVolumeResponse{})
	if err != nil {
		return fmt.Errorf("node detach on node %s: %w", claim.NodeID, err)
	}
	return nil
}

// controllerDetach unpublishes the volume from the claiming node through
// a controller instance, when the plugin publishes volumes, or did when
// the claim was taken: a plugin stopped since (or its controllers gone)
// does not skip the step, which waits for an instance (an error, retried
// with backoff): a volume left published to the node would be attached
// twice, or be refused deletion.
func (s *Server) controllerDetach(ctx context.Context, vol *structs.CSIVolume, claim *structs.CSIVolumeClaim) error {
	if publishes, err := s.publishes(vol); err != nil || !publishes && !claim.ControllerPublish {
		return err
	}
	secrets, err := s.volumeSecrets(vol)
	if err != nil {
		return err
	}
	req := &structs.ClientCSIControllerDetachVolumeRequest{PluginID: vol.PluginID, ExternalVolumeID: vol.ExternalID,
		ExternalNodeID: claim.ExternalNodeID, Secrets: secrets}
	ctx, cancel := context.WithTimeout(ctx, claimStepTimeout)
	defer cancel()
	err = s.callController(ctx, controllerCall{plugin: vol.PluginID, need: capAttach, method: "ClientCSI.ControllerDetachVolume",
		node: &req.NodeID, opts: &req.QueryOptions, args: req, reply: &structs.ClientCSIControllerDetachVolumeResponse{},
		volume: vol, near: claim.NodeID})
	if err != nil {
		return fmt.Errorf("controller detach from node %s: %w", claim.NodeID, err)
	}
	return nil
}
