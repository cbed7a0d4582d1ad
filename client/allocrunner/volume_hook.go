package allocrunner

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/berth-csi/berth/client/csi"
	"github.com/berth-csi/berth/client/drivers/exec"
	"github.com/berth-csi/berth/client/volumemanager"
	"github.com/berth-csi/berth/internal/backoff"
	"github.com/berth-csi/berth/structs"
)

// mountedVolume is a group volume mounted for the alloc.
type mountedVolume struct {
	alias      string // the group's name for it
	volumeID   string
	pluginID   string
	externalID string
	readOnly   bool
	block      bool // a block device: hostPath is a device node
	hostPath   string
}

// volumeID is the volume a group volume names for this alloc: its source,
// or source[index] when per_alloc.
func volumeID(alloc *structs.Allocation, req *structs.VolumeRequest) (string, error) {
	if !req.PerAlloc {
		return req.Source, nil
	}
	idx, ok := structs.AllocIndex(alloc.Name)
	if !ok {
		return "", fmt.Errorf("per_alloc volume %q: alloc name %q carries no index", req.Source, alloc.Name)
	}
	return req.SourceFor(idx), nil
}

// checkVolumeMounts refuses what no claim could fix: a mount of a volume
// the group does not have, a volume type other than csi, bidirectional
// propagation on a read-only volume. Errors name the task.
func checkVolumeMounts(tg *structs.TaskGroup) (task string, err error) {
	for alias, req := range tg.Volumes {
		if req.Type != "csi" {
			return "", fmt.Errorf("group volume %q: type %q is not supported (only csi)", alias, req.Type)
		}
	}
	for _, t := range tg.Tasks {
		for _, vm := range t.VolumeMounts {
			req, ok := tg.Volumes[vm.Volume]
			if !ok {
				return t.Name, fmt.Errorf("volume_mount at %q: the group has no volume %q", vm.Destination, vm.Volume)
			}
			if vm.PropagationMode == structs.PropagationBidirectional && (vm.ReadOnly || req.ReadOnly) {
				return t.Name, fmt.Errorf("volume_mount of %q at %q: bidirectional propagation needs a read-write volume", vm.Volume, vm.Destination)
			}
		}
	}
	return "", nil
}

// setupVolumes claims and mounts the group's volumes, in alias order. On
// error, what it mounted is returned with the error, for unmounting.
func (r *Runner) setupVolumes(ctx context.Context, tg *structs.TaskGroup) ([]*mountedVolume, error) {
	aliases := make([]string, 0, len(tg.Volumes))
	for a := range tg.Volumes {
		aliases = append(aliases, a)
	}
	sort.Strings(aliases)
	var mounted []*mountedVolume
	for _, alias := range aliases {
		mv, err := r.setupVolume(ctx, alias, tg.Volumes[alias])
		if mv != nil {
			mounted = append(mounted, mv)
		}
		if err != nil {
			return mounted, err
		}
	}
	return mounted, nil
}

// volumeRetry paces the tries of a group's volume setup: a plugin
// restarting, or a claim still being released elsewhere, is waited out
// (about 1, 2, 4, 8 s) instead of failing the alloc for good.
var volumeRetry = backoff.Policy{Initial: time.Second, Max: 8 * time.Second, Multiplier: 2, Jitter: 0.2, MaxAttempts: 5}

// setupVolumesRetrying is setupVolumes tried again, after undoing what a
// failed try mounted, while the error may pass: not for a volume that
// does not exist, a request no retry can fix, or a final CSI error
// (csi.IsFinal). Each retry is a task event.
func (r *Runner) setupVolumesRetrying(ctx context.Context, runners []*taskRunner) ([]*mountedVolume, error) {
	for attempt := 1; ; attempt++ {
		vols, err := r.setupVolumes(ctx, r.tg)
		if err == nil || ctx.Err() != nil || attempt >= volumeRetry.MaxAttempts || csi.IsFinal(err) ||
			errors.Is(err, structs.ErrNotFound) || errors.Is(err, structs.ErrBadRequest) {
			return vols, err
		}
		if uerr := r.unmountVolumes(ctx, vols); uerr != nil {
			return vols, errors.Join(err, uerr)
		}
		wait := volumeRetry.Delay(attempt)
		r.logger.Warn("volume setup failed; retrying", "error", err, "in", wait)
		for _, tr := range runners {
			r.updateTask(tr.task.Name, nil, event(EventRetryingVolumes,
				fmt.Sprintf("try %d of %d failed: %v; trying again in %s", attempt, volumeRetry.MaxAttempts, err, wait.Round(time.Millisecond))))
		}
		if !backoff.Sleep(ctx, wait) {
			return nil, err
		}
	}
}

// setupVolume returns the volume, once known, even with an error from its
// mount: a failed mount is undone by UnmountVolume.
func (r *Runner) setupVolume(ctx context.Context, alias string, req *structs.VolumeRequest) (*mountedVolume, error) {
	alloc := r.cfg.Alloc
	id, err := volumeID(alloc, req)
	if err != nil {
		return nil, err
	}
	var get structs.CSIVolumeGetResponse
	if err := r.callServers(ctx, "CSIVolume.Get", &structs.CSIVolumeGetRequest{ID: id,
		QueryOptions: structs.QueryOptions{Namespace: alloc.Namespace}}, &get); err != nil {
		return nil, fmt.Errorf("volume %q: read: %w", id, err)
	}
	if get.Volume == nil {
		return nil, structs.NewError(structs.CodeNotFound, "volume %q (group volume %q) does not exist", id, alias)
	}
	// The plugin must run here before anything is published to this node.
	if _, err := r.externalNodeID(ctx, get.Volume.PluginID); err != nil {
		return nil, fmt.Errorf("volume %q: %w", id, err)
	}
	// Confirm the claim the servers reserved with the placement; the
	// client never takes one of its own.
	var claimed structs.CSIVolumeClaimResponse
	if err := r.callServers(ctx, "CSIVolume.Publish", &structs.CSIVolumePublishRequest{VolumeID: id, AllocationID: alloc.ID,
		NodeID: r.cfg.NodeID, WriteRequest: structs.WriteRequest{Namespace: alloc.Namespace}}, &claimed); err != nil {
		return nil, fmt.Errorf("volume %q: confirm the claim of alloc %s on node %s: %w", id, alloc.ID, r.cfg.NodeID, err)
	}
	vol, claim := claimed.Volume, claimed.Claim
	if vol == nil || claim == nil {
		return nil, fmt.Errorf("volume %q: the servers confirmed no claim for alloc %s", id, alloc.ID)
	}
	if r.cfg.Volumes == nil {
		return nil, fmt.Errorf("volume %q: this client has no volume manager", id)
	}
	readOnly := req.ReadOnly || claim.Mode == structs.CSIVolumeClaimRead
	mv := &mountedVolume{alias: alias, volumeID: id, pluginID: vol.PluginID, externalID: vol.ExternalID, readOnly: readOnly,
		block: claim.AttachmentMode == structs.CSIVolumeAttachmentModeBlockDevice}
	res, err := r.cfg.Volumes.MountVolume(ctx, &volumemanager.MountRequest{
		AllocID:          alloc.ID,
		VolumeID:         id,
		ExternalVolumeID: vol.ExternalID,
		PluginID:         vol.PluginID,
		AccessMode:       claim.AccessMode,
		AttachmentMode:   claim.AttachmentMode,
		ReadOnly:         readOnly,
		MountOptions:     mountOptions(vol.MountOptions, req.MountOptions),
		Secrets:          claimed.NodeSecrets,
		VolumeContext:    vol.Context,
		PublishContext:   claimed.PublishContext,
		Group:            r.volumeGroup(alias, req),
	})
	if err != nil {
		return mv, fmt.Errorf("volume %q: mount: %w", id, err)
	}
	mv.hostPath = res.HostPath
	r.expandPending(ctx, vol, id)
	return mv, nil
}

// mountOptions merges the volume's mount options with the group's (which
// win). The servers redact the volume's mount flags, so only its fs type
// reaches here.
func mountOptions(vol, req *structs.CSIMountOptions) *structs.CSIMountOptions {
	if vol == nil && req == nil {
		return nil
	}
	out := &structs.CSIMountOptions{}
	if vol != nil {
		out.FSType = vol.FSType
		for _, f := range vol.MountFlags {
			if f != structs.Redacted {
				out.MountFlags = append(out.MountFlags, f)
			}
		}
	}
	if vol != nil {
		out.GroupPolicy = vol.GroupPolicy
	}
	if req != nil {
		if req.FSType != "" {
			out.FSType = req.FSType
		}
		if req.GroupPolicy != "" {
			out.GroupPolicy = req.GroupPolicy
		}
		if len(req.MountFlags) > 0 {
			out.MountFlags = append([]string(nil), req.MountFlags...)
		}
	}
	return out
}

// serversRetry paces callServers: 100ms doubling up to 5s, until the
// claim timeout.
var serversRetry = backoff.Policy{Initial: 100 * time.Millisecond, Max: 5 * time.Second, Multiplier: 2, Jitter: 0.2}

// callServers calls the servers, retrying while they are unavailable or
// what the call needs is not ready yet, up to the claim timeout.
func (r *Runner) callServers(ctx context.Context, method string, args, reply any) error {
	ctx, cancel := context.WithTimeout(ctx, r.claimTimeout())
	defer cancel()
	attempt := 0
	return backoff.Retry(ctx, serversRetry, finalServerError, func(ctx context.Context) error {
		attempt++
		err := r.cfg.Servers.RPC(ctx, method, args, reply)
		if err != nil && !finalServerError(err) && ctx.Err() == nil {
			r.logger.Warn("servers unavailable or not ready; retrying", "method", method, "attempt", attempt, "error", err)
		}
		return err
	})
}

// finalServerError is every error but the servers' Unavailable and
// NotReady, which pass (a leader elected, a state caught up).
func finalServerError(err error) bool {
	return !errors.Is(err, structs.ErrUnavailable) && !errors.Is(err, structs.ErrNotReady)
}

// externalNodeID is the plugin's ID for this node. A plugin that has not
// been fingerprinted yet (a client that just started, a plugin task still
// starting) is waited for, up to the claim timeout.
func (r *Runner) externalNodeID(ctx context.Context, pluginID string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, r.claimTimeout())
	defer cancel()
	for {
		if id, ok := r.cfg.ExternalNodeID(pluginID); ok {
			return id, nil
		}
		select {
		case <-ctx.Done():
			return "", structs.NewError(structs.CodeConflict, "plugin %q has no node instance on node %s", pluginID, r.cfg.NodeID)
		case <-time.After(pluginPoll):
		}
	}
}

// pluginPoll is how often a plugin not yet fingerprinted is looked for.
var pluginPoll = 100 * time.Millisecond

func (r *Runner) claimTimeout() time.Duration {
	if r.cfg.ClaimTimeout > 0 {
		return r.cfg.ClaimTimeout
	}
	return time.Minute
}

// unmountRetry tries an unmount three times, 200ms and 400ms apart.
var unmountRetry = backoff.Policy{Initial: 200 * time.Millisecond, Max: 400 * time.Millisecond, Multiplier: 2, MaxAttempts: 3}

// unmountVolumes unmounts the alloc's volumes, each tried a few times.
// What cannot be unmounted is logged; the servers' volumewatcher asks
// this node again to detach it.
func (r *Runner) unmountVolumes(ctx context.Context, vols []*mountedVolume) error {
	var errs []error
	for _, v := range vols {
		// What a task left under a bidirectional bind was detached when
		// it exited; a reattached task's leftovers are swept here.
		if v.hostPath != "" && r.bidirectional(v.alias) {
			if _, err := exec.DetachMountsUnder(v.hostPath, nil); err != nil {
				r.logger.Warn("cannot detach what tasks mounted in the volume", "volume_id", v.volumeID, "error", err)
			}
		}
		err := backoff.Retry(ctx, unmountRetry, nil, func(ctx context.Context) error {
			return r.cfg.Volumes.UnmountVolume(ctx, r.cfg.Alloc.ID, v.volumeID, v.pluginID, v.externalID)
		})
		if err != nil {
			r.logger.Error("cannot unmount volume; the servers will ask again", "volume_id", v.volumeID, "error", err)
			errs = append(errs, fmt.Errorf("volume %q: unmount: %w", v.volumeID, err))
		}
	}
	return errors.Join(errs...)
}

// bidirectional reports whether a task mounts the group volume with
// bidirectional propagation.
func (r *Runner) bidirectional(alias string) bool {
	for _, t := range r.tg.Tasks {
		for _, vm := range t.VolumeMounts {
			if vm.Volume == alias && vm.PropagationMode == structs.PropagationBidirectional {
				return true
			}
		}
	}
	return false
}

// taskMounts are the binds of a task's volume_mounts.
func taskMounts(t *structs.Task, vols []*mountedVolume) []exec.Mount {
	byAlias := make(map[string]*mountedVolume, len(vols))
	for _, v := range vols {
		byAlias[v.alias] = v
	}
	var mounts []exec.Mount
	for _, vm := range t.VolumeMounts {
		v := byAlias[vm.Volume]
		if v == nil {
			continue // refused before any claim
		}
		mounts = append(mounts, exec.Mount{
			Source:       v.hostPath,
			Destination:  vm.Destination,
			ReadOnly:     vm.ReadOnly || v.readOnly,
			Propagation:  vm.PropagationMode,
			DetachOnExit: true,
			Device:       v.block,
		})
	}
	return mounts
}
