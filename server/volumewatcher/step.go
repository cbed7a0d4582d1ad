package volumewatcher

import (
	"context"
	"time"

	"github.com/berth-csi/berth/internal/telemetry"
	"github.com/berth-csi/berth/structs"
)

// step makes the next step of one claim's release and checkpoints its
// outcome, unless ctx ended first (the next leader makes it again). It
// returns the checkpoint's error, nil when there was none to write.
//
// It reads the claim afresh: the look that started it may have read the
// store before the previous step's checkpoint (that step cleared its
// in-flight mark once its checkpoint was applied, so this read sees it).
func (w *Watcher) step(ctx context.Context, key claimKey) error {
	vol, err := w.deps.State().CSIVolumeByID(nil, key.ns, key.volume)
	if err != nil || vol == nil {
		return nil // unreadable (the next look finds the claim again) or gone with its claims
	}
	claim := vol.PastClaims[key.alloc]
	if claim == nil || claim.NextAttemptAt.After(w.clock.Now()) {
		return nil // freed, or failed since that look and not due yet
	}
	var stepErr error
	switch claim.State {
	case structs.CSIVolumeClaimStateUnpublishing:
		stepErr = w.deps.NodeDetach(ctx, vol, claim)
	case structs.CSIVolumeClaimStateNodeDetached:
		stepErr = w.deps.ControllerDetach(ctx, vol, claim)
	case structs.CSIVolumeClaimStateControllerDetached:
	default:
		return nil
	}
	if ctx.Err() != nil {
		return nil
	}
	log := w.logger.With("namespace", key.ns, "volume_id", key.volume, "alloc_id", key.alloc)
	req := w.outcome(key, claim, stepErr)
	if stepErr != nil {
		log.Warn("claim release step failed; will retry", "state", claim.State.String(),
			"attempt", claim.Attempts+1, "retry_at", req.NextAttemptAt, "error", stepErr)
		telemetry.ClaimReleaseRetries.WithLabelValues(claim.State.String()).Inc()
	}
	errs, err := w.deps.ApplyClaims(ctx, &structs.CSIVolumeClaimBatchRequest{Claims: []structs.CSIVolumeClaimRequest{req}})
	if err == nil && len(errs) == 1 {
		err = errs[0]
	}
	if err != nil && ctx.Err() == nil {
		log.Error("checkpoint claim; the step waits its backoff before it is made again", "state", req.State.String(), "error", err)
		return err
	}
	return nil
}

// outcome is a step's checkpoint: the claim's next state or, when the step
// failed, its error and when to try again.
func (w *Watcher) outcome(key claimKey, claim *structs.CSIVolumeClaim, stepErr error) structs.CSIVolumeClaimRequest {
	now := w.clock.Now()
	req := structs.CSIVolumeClaimRequest{VolumeID: key.volume, AllocationID: key.alloc, State: claim.State + 1,
		Timestamp: now, WriteRequest: structs.WriteRequest{Namespace: key.ns}}
	if stepErr != nil {
		req.State = claim.State
		req.LastError = stepErr.Error()
		req.NextAttemptAt = now.Add(w.retryDelay(claim.Attempts))
	}
	return req
}

// retryDelay is the wait after a step fails with attempts earlier failures
// of it recorded: this failure is the (attempts+1)-th.
func (w *Watcher) retryDelay(attempts int) time.Duration {
	return w.backoff.Delay(attempts + 1)
}
