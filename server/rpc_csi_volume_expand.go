package server

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/berth-csi/berth/structs"
)

// Node expansion. When a plugin's ControllerExpandVolume answers
// node_expansion_required, each node that has the volume in use (the
// nodes of its taken claims) is asked to expand it there
// (ClientCSI.NodeExpandVolume, which the client answers with
// NodeExpandVolume at the paths it staged and published the volume at).
// The outcome decides the volume row:
//
//   - a node expanded it, and none failed: the capacity is the nodes'
//     answer (else the controller's), and nothing is pending;
//   - no node has it staged or published: the capacity is the
//     controller's at once, and the row keeps a NodeExpansion, which the
//     next publish finishes on its node (CSIVolume.NodeExpand, sent by the
//     client once it has mounted the volume, before the tasks start);
//   - a node failed: the capacity stays what it was, the row keeps the
//     NodeExpansion with the failure, and the caller gets an error naming
//     the volume, the node and what to do. Running the create or register
//     again retries it (the controller's expand is idempotent), as does
//     the next publish.
//
// Every record goes through the volume register write, as the capacity
// of a controller expand does.

// nodeExpandOutcome is what the calls to the nodes did.
type nodeExpandOutcome struct {
	expanded int     // nodes that had the volume in use and expanded it
	capacity int64   // the largest capacity a node answered; 0: none said
	failed   []error // one per node that failed, naming it, in node order
}

// capacityOr is the capacity the nodes answered, else fallback.
func (o *nodeExpandOutcome) capacityOr(fallback int64) int64 {
	if o.capacity > 0 {
		return o.capacity
	}
	return fallback
}

// message joins the failures into one line, for NodeExpansion.LastError.
func (o *nodeExpandOutcome) message() string {
	parts := make([]string, len(o.failed))
	for i, err := range o.failed {
		parts[i] = err.Error()
	}
	return strings.Join(parts, "; ")
}

// rest is the failures after the first, as "; and ..." to append to it.
func (o *nodeExpandOutcome) rest() string {
	if len(o.failed) < 2 {
		return ""
	}
	rest := &nodeExpandOutcome{failed: o.failed[1:]}
	return "; and " + rest.message()
}

// claimNodes lists the nodes of vol's taken claims, once each, sorted:
// where the volume is (or is about to be) staged and published. Claims
// being released are not asked: their nodes are unmounting it.
func claimNodes(vol *structs.CSIVolume) []string {
	seen := map[string]bool{}
	var nodes []string
	for _, claims := range []map[string]*structs.CSIVolumeClaim{vol.WriteClaims, vol.ReadClaims} {
		for _, c := range claims {
			if c != nil && c.NodeID != "" && !seen[c.NodeID] {
				seen[c.NodeID] = true
				nodes = append(nodes, c.NodeID)
			}
		}
	}
	sort.Strings(nodes)
	return nodes
}

// nodeLabel names a node in messages: `node NAME`, or its ID when it has
// no name (or is gone).
func (s *Server) nodeLabel(nodeID string) string {
	if n, err := s.State().NodeByID(nil, nodeID); err == nil && n != nil && n.Name != "" {
		return "node " + n.Name
	}
	return "node " + nodeID
}

// nodesExpand asks each node to expand vol, one after the other, each
// call bounded by claimStepTimeout.
func (s *Server) nodesExpand(ctx context.Context, vol *structs.CSIVolume, exp *structs.CSIVolumeNodeExpansion,
	secrets structs.CSISecrets, nodes []string) nodeExpandOutcome {
	var out nodeExpandOutcome
	for _, nodeID := range nodes {
		req := &structs.ClientCSINodeExpandVolumeRequest{
			PluginID:         vol.PluginID,
			NodeID:           nodeID,
			VolumeID:         vol.ID,
			ExternalVolumeID: vol.ExternalID,
			CapacityMin:      exp.CapacityMin,
			CapacityMax:      exp.CapacityMax,
			MountOptions:     vol.MountOptions,
			Secrets:          secrets,
		}
		var resp structs.ClientCSINodeExpandVolumeResponse
		callCtx, cancel := context.WithTimeout(ctx, claimStepTimeout)
		err := s.callClient(callCtx, nodeID, "ClientCSI.NodeExpandVolume", "ClientCSI.NodeExpandVolume", req, req, &resp)
		cancel()
		if err != nil {
			out.failed = append(out.failed, fmt.Errorf("%s: %w", s.nodeLabel(nodeID), err))
			continue
		}
		if resp.InUse {
			out.expanded++
			out.capacity = max(out.capacity, resp.CapacityBytes)
		}
	}
	return out
}

// expandOnNodes finishes an expansion whose controller call asked for the
// nodes' (exp): the nodes where old is claimed expand it, and vol (what
// is to be written) gets the capacity and the NodeExpansion the outcome
// calls for (see the top of this file). A failure is recorded in the
// registered volume before the error is returned.
func (v *CSIVolume) expandOnNodes(ctx context.Context, old, vol *structs.CSIVolume, exp *structs.CSIVolumeNodeExpansion) error {
	nodes := claimNodes(old)
	out := v.srv.nodesExpand(ctx, vol, exp, vol.Secrets, nodes)
	switch {
	case len(out.failed) > 0:
		exp.LastError = out.message()
		err := fmt.Errorf("volume %q: plugin %q grew it to %d bytes, but NodeExpandVolume failed on %d of %d nodes: %w%s; "+
			"berth keeps its capacity at %d bytes with the node expansion pending, and retries it when the volume is next published: "+
			"fix the node's plugin, then run the create or register again to retry now",
			vol.ID, vol.PluginID, exp.Capacity, len(out.failed), len(nodes), out.failed[0], out.rest(), old.Capacity)
		if _, werr := v.srv.recordNodeExpansion(vol.Namespace, vol.ID, func(cur *structs.CSIVolume) bool {
			cur.RequestedCapacityMin, cur.RequestedCapacityMax = vol.RequestedCapacityMin, vol.RequestedCapacityMax
			cur.NodeExpansion = exp
			return true
		}); werr != nil {
			return errors.Join(err, fmt.Errorf("volume %q: the pending node expansion could not be recorded either: %w", vol.ID, werr))
		}
		return err
	case out.expanded > 0:
		vol.Capacity = out.capacityOr(exp.Capacity)
		vol.NodeExpansion = nil
		v.srv.logger.Info("volume expanded on its nodes", "volume_id", vol.ID, "plugin_id", vol.PluginID,
			"nodes", out.expanded, "capacity", vol.Capacity)
	default:
		vol.Capacity = exp.Capacity
		vol.NodeExpansion = exp
		v.srv.logger.Info("volume expanded by the controller; no node has it staged or published, so its next publish expands it on the node",
			"volume_id", vol.ID, "plugin_id", vol.PluginID, "capacity", exp.Capacity)
	}
	return nil
}

// recordNodeExpansion writes the registered volume namespace/id as change
// leaves a copy of it, through the volume register write; change returns
// false when there is nothing to write. Clear secrets of a volume stored
// before encryption are sealed on the way, as every volume write does.
func (s *Server) recordNodeExpansion(namespace, id string, change func(*structs.CSIVolume) bool) (index uint64, err error) {
	cur, err := s.State().CSIVolumeByID(nil, namespace, id)
	if err != nil {
		return 0, err
	}
	if cur == nil {
		return 0, structs.NewError(structs.CodeNotFound, "volume %q was deregistered meanwhile", id)
	}
	upd := cur.Copy()
	upd.ReadAllocs, upd.WriteAllocs = nil, nil
	if !change(upd) {
		return 0, nil
	}
	if len(upd.Secrets) > 0 {
		if err := s.sealVolumeSecrets(upd); err != nil {
			return 0, err
		}
	}
	_, index, err = raftApply[any](s, structs.CSIVolumeRegisterRequestType,
		&structs.CSIVolumeRegisterRequest{Volumes: []*structs.CSIVolume{upd}})
	return index, err
}

// sameNodeExpansion reports whether two pending node expansions are the
// same (both nil included).
func sameNodeExpansion(a, b *structs.CSIVolumeNodeExpansion) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// NodeExpand finishes a volume's pending node expansion on the node of an
// allocation that has just published it: a client sends it once the
// volume is mounted, when the volume its publish returned carries a
// NodeExpansion. The node is asked to expand the volume (as a node with it
// in use is at a controller expand), and the new capacity is recorded and
// the expansion cleared; a failure is recorded in NodeExpansion.LastError
// and returned, and the next publish (or the create or register run
// again) retries it. Nothing pending (another node did it) is no error.
// Only the node's client (its secret, the allocation on it asking for the
// volume) or an operator with node write may ask.
func (v *CSIVolume) NodeExpand(ctx context.Context, args *structs.CSIVolumeNodeExpandRequest, reply *structs.CSIVolumeNodeExpandResponse) error {
	if args.VolumeID == "" || args.AllocationID == "" || args.NodeID == "" {
		return structs.NewError(structs.CodeBadRequest, "volume node expand: give the volume, the alloc and the node (got volume %q, alloc %q, node %q)",
			args.VolumeID, args.AllocationID, args.NodeID)
	}
	st := v.srv.State()
	if _, err := v.allowPublish(st, &structs.CSIVolumePublishRequest{VolumeID: args.VolumeID, AllocationID: args.AllocationID,
		NodeID: args.NodeID, WriteRequest: args.WriteRequest}); err != nil {
		return err
	}
	vol, err := st.CSIVolumeByID(nil, args.RequestNamespace(), args.VolumeID)
	if err != nil {
		return err
	}
	if vol == nil {
		return structs.NewError(structs.CodeNotFound, "volume %q not found in namespace %q", args.VolumeID, args.RequestNamespace())
	}
	reply.Capacity = vol.Capacity
	exp := vol.NodeExpansion.Copy()
	if exp == nil {
		return nil
	}
	if claim := vol.TakenClaim(args.AllocationID); claim == nil || claim.NodeID != args.NodeID {
		return structs.NewError(structs.CodeConflict, "volume %q: alloc %s holds no claim on it on node %s: only a node that has it published expands it",
			vol.ID, args.AllocationID, args.NodeID)
	}
	secrets, err := v.srv.volumeSecrets(vol)
	if err != nil {
		return err
	}
	out := v.srv.nodesExpand(ctx, vol, exp, secrets, []string{args.NodeID})
	if len(out.failed) > 0 {
		err := fmt.Errorf("volume %q: NodeExpandVolume to %d bytes: %w; its capacity stays %d bytes with the node expansion pending, "+
			"retried at its next publish; fix the node's plugin, or run `berth volume create` (or register) again to retry now",
			vol.ID, exp.CapacityMin, out.failed[0], vol.Capacity)
		if _, werr := v.srv.recordNodeExpansion(vol.Namespace, vol.ID, func(cur *structs.CSIVolume) bool {
			if cur.NodeExpansion == nil || cur.NodeExpansion.CapacityMin != exp.CapacityMin {
				return false // done meanwhile, or another expansion now pending
			}
			cur.NodeExpansion.LastError = out.message()
			return true
		}); werr != nil {
			return errors.Join(err, fmt.Errorf("volume %q: the failure could not be recorded: %w", vol.ID, werr))
		}
		return err
	}
	if out.expanded == 0 {
		return nil // not in use on the node (unmounted meanwhile): still pending
	}
	capacity := out.capacityOr(exp.Capacity)
	index, err := v.srv.recordNodeExpansion(vol.Namespace, vol.ID, func(cur *structs.CSIVolume) bool {
		if cur.NodeExpansion == nil || cur.NodeExpansion.CapacityMin > exp.CapacityMin {
			return false // done meanwhile, or a larger expansion now pending
		}
		cur.Capacity, cur.NodeExpansion = capacity, nil
		return true
	})
	if err != nil {
		return fmt.Errorf("volume %q was expanded on node %s to %d bytes but that could not be recorded: %w; the next publish expands it again",
			vol.ID, args.NodeID, capacity, err)
	}
	v.srv.logger.Info("volume expanded on the node that published it", "volume_id", vol.ID, "node_id", args.NodeID, "capacity", capacity)
	reply.Expanded, reply.Capacity, reply.Index = true, capacity, index
	return nil
}
