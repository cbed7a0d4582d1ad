package server

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/berth-csi/berth/acl"
	"github.com/berth-csi/berth/structs"
)

// The volumewatcher runs on the leader and drives every claim being
// released to freed:
//
//	unpublishing        -> NodeDetachVolume on the claiming client (skipped
//	                       when the node is down or gone)
//	node-detached       -> ControllerDetachVolume through a healthy
//	                       controller instance, when the plugin publishes
//	controller-detached -> freed
//
// Each step is checkpointed through raft, so a new leader resumes where
// the old one stopped. A failed step records the error, the attempts and
// the next attempt time, and waits out an exponential backoff of its own.

const (
	claimRetryMax     = time.Minute
	claimStepTimeout  = 30 * time.Second
	volumeWatcherIdle = 5 * time.Second
)

// claimKey names one claim being released.
type claimKey struct{ ns, volume, alloc string }

// watchVolumes runs until ctx ends (leadership is lost).
func (s *Server) watchVolumes(ctx context.Context) {
	var (
		mu       sync.Mutex
		inFlight = map[claimKey]bool{}
		wg       sync.WaitGroup
	)
	defer wg.Wait()
	for ctx.Err() == nil {
		ws := memdb.NewWatchSet()
		iter, err := s.State().CSIVolumesReleasing(ws)
		if err != nil {
			s.logger.Error("volumewatcher: read volumes; retrying", "error", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		now := time.Now()
		wake := now.Add(volumeWatcherIdle)
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			vol := raw.(*structs.CSIVolume)
			for allocID, claim := range vol.PastClaims {
				key := claimKey{vol.Namespace, vol.ID, allocID}
				if claim.NextAttemptAt.After(now) {
					if claim.NextAttemptAt.Before(wake) {
						wake = claim.NextAttemptAt
					}
					continue
				}
				mu.Lock()
				busy := inFlight[key]
				inFlight[key] = true
				mu.Unlock()
				if busy {
					continue
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					s.releaseStep(ctx, key, claim.Copy())
					mu.Lock()
					delete(inFlight, key)
					mu.Unlock()
					s.volumeWatcherKick()
				}()
			}
		}
		// Look again on a change, a kick (a step finished: its claim is
		// no longer in flight; a kick sent while looking stays buffered),
		// or the next attempt due.
		wctx, cancel := context.WithDeadline(ctx, wake)
		select {
		case <-ws.WatchCh(wctx):
		case <-s.volumeKick:
		}
		cancel()
	}
}

// volumeWatcherKick wakes the watcher to look again (a step finished).
func (s *Server) volumeWatcherKick() {
	select {
	case s.volumeKick <- struct{}{}:
	default:
	}
}

// releaseStep makes the next step of one claim's release and checkpoints
// its outcome.
func (s *Server) releaseStep(ctx context.Context, key claimKey, claim *structs.CSIVolumeClaim) {
	vol, err := s.State().CSIVolumeByID(nil, key.ns, key.volume)
	if err != nil || vol == nil {
		return
	}
	next := claim.State + 1
	var stepErr error
	switch claim.State {
	case structs.CSIVolumeClaimStateUnpublishing:
		stepErr = s.nodeDetach(ctx, vol, claim)
	case structs.CSIVolumeClaimStateNodeDetached:
		stepErr = s.controllerDetach(ctx, vol, claim)
	case structs.CSIVolumeClaimStateControllerDetached:
	default:
		return
	}
	req := structs.CSIVolumeClaimRequest{VolumeID: vol.ID, AllocationID: key.alloc, State: next,
		Timestamp: time.Now(), WriteRequest: structs.WriteRequest{Namespace: key.ns}}
	if stepErr != nil {
		req.State = claim.State
		req.LastError = stepErr.Error()
		req.NextAttemptAt = time.Now().Add(claimBackoff(claim.Attempts))
		s.logger.Warn("volumewatcher: claim release step failed; will retry", "volume", vol.ID, "alloc_id", key.alloc,
			"state", claim.State.String(), "attempt", claim.Attempts+1, "retry_at", req.NextAttemptAt, "error", stepErr)
	}
	if ctx.Err() != nil {
		return // leadership lost mid-step: the next leader tries again
	}
	errs, _, err := raftApply[[]error](s, structs.CSIVolumeClaimRequestType, &structs.CSIVolumeClaimBatchRequest{
		Claims: []structs.CSIVolumeClaimRequest{req}})
	if err == nil && len(errs) == 1 {
		err = errs[0]
	}
	if err != nil && ctx.Err() == nil {
		s.logger.Error("volumewatcher: checkpoint claim", "volume", vol.ID, "alloc_id", key.alloc, "error", err)
	}
}

// claimBackoff is the wait after the attempts-th failure of a step: 1s,
// 2s, 4s ... up to a minute.
func claimBackoff(attempts int) time.Duration {
	d := time.Second
	for i := 0; i < attempts && d < claimRetryMax; i++ {
		d *= 2
	}
	if d > claimRetryMax {
		d = claimRetryMax
	}
	return d
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
// a controller instance, when the plugin publishes volumes.
func (s *Server) controllerDetach(ctx context.Context, vol *structs.CSIVolume, claim *structs.CSIVolumeClaim) error {
	if publishes, err := s.publishes(vol); err != nil || !publishes {
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

// Detach releases every claim a node holds on a volume, for an operator
// whose node or alloc cannot finish it (`berth volume detach`). The
// volumewatcher drives each from there.
func (v *CSIVolume) Detach(args *structs.CSIVolumeDetachRequest, reply *structs.CSIVolumeDetachResponse) error {
	if done, err := v.srv.forward("CSIVolume.Detach", args, args, reply); done {
		return err
	}
	if err := v.srv.allowNamespace(args.AuthToken, args.RequestNamespace(), acl.CapCSIWriteVolume); err != nil {
		return err
	}
	if args.VolumeID == "" || args.NodeID == "" {
		return structs.NewError(structs.CodeBadRequest, "volume detach: give the volume and the node (got volume %q, node %q)",
			args.VolumeID, args.NodeID)
	}
	vol, err := v.srv.State().CSIVolumeByID(nil, args.RequestNamespace(), args.VolumeID)
	if err != nil {
		return err
	}
	if vol == nil {
		return structs.NewError(structs.CodeNotFound, "volume %q not found; run `berth volume status` to list volumes", args.VolumeID)
	}
	batch := &structs.CSIVolumeClaimBatchRequest{}
	for _, m := range []map[string]*structs.CSIVolumeClaim{vol.ReadClaims, vol.WriteClaims} {
		for allocID, c := range m {
			if c.NodeID == args.NodeID {
				batch.Claims = append(batch.Claims, structs.CSIVolumeClaimRequest{VolumeID: vol.ID, AllocationID: allocID,
					State: structs.CSIVolumeClaimStateUnpublishing, Timestamp: time.Now(), WriteRequest: args.WriteRequest})
				reply.Released = append(reply.Released, allocID)
			}
		}
	}
	if len(batch.Claims) == 0 {
		for allocID, c := range vol.PastClaims {
			if c.NodeID == args.NodeID {
				reply.Released = append(reply.Released, allocID) // already being released
			}
		}
		if len(reply.Released) == 0 {
			return structs.NewError(structs.CodeNotFound, "volume %q has no claim on node %s; `berth volume status %s` shows its claims",
				vol.ID, args.NodeID, vol.ID)
		}
		return nil
	}
	errs, index, err := raftApply[[]error](v.srv, structs.CSIVolumeClaimRequestType, batch)
	if err != nil {
		return err
	}
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	v.srv.volumeWatcherKick()
	reply.Index = index
	return nil
}
