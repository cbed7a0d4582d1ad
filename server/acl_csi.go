package server

import (
	"github.com/berth-csi/berth/acl"
	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
)

// allowClaim checks a claim an RPC caller asks for. The caller is a token
// with csi-mount-volume in the volume's namespace, or, to release a claim
// only, the secret of the node the claim's alloc runs on: a client never
// takes a claim (the servers reserve an allocation's claims when they
// place it, and its client confirms them with CSIVolume.Publish). For
// every caller the alloc exists, is in the volume's namespace and its
// group asks for the volume (allocAsksVolume), or a token of one
// namespace could attach its volumes to another's allocs and nodes. A
// claim never answers a volume's secrets.
func (v *CSIVolume) allowClaim(args *structs.CSIVolumeClaimRequest) error {
	st := v.srv.State()
	alloc, err := st.AllocByID(nil, args.AllocationID)
	if err != nil {
		return err
	}
	if err := v.allowClaimCaller(st, args, alloc); err != nil {
		return err
	}
	if alloc == nil {
		return structs.NewError(structs.CodeNotFound, "volume %q: alloc %s not found; a claim must name an existing allocation",
			args.VolumeID, args.AllocationID)
	}
	return allocAsksVolume(alloc, args.RequestNamespace(), args.VolumeID)
}

// allowClaimCaller checks who asks for a claim: csi-mount-volume in the
// request's namespace, or the secret of alloc's node to release the claim.
func (v *CSIVolume) allowClaimCaller(st *state.StateStore, args *structs.CSIVolumeClaimRequest, alloc *structs.Allocation) error {
	err := v.srv.allowNamespace(args.AuthToken, args.RequestNamespace(), acl.CapCSIMountVolume)
	if err == nil || alloc == nil {
		return err
	}
	node, lerr := st.NodeByID(nil, alloc.NodeID)
	if lerr != nil {
		return lerr
	}
	if !actsForNode(node, args.AuthToken) {
		return err
	}
	if args.State == structs.CSIVolumeClaimStateTaken {
		return errPermission("node %s takes no claim of its own (volume %q, alloc %s): the servers reserve an alloc's claims when they place it, "+
			"and its client confirms them with CSIVolume.Publish", node.ID, args.VolumeID, alloc.ID)
	}
	if args.NodeID != "" && args.NodeID != alloc.NodeID {
		return errPermission("volume %q: alloc %s runs on node %s, not on node %s", args.VolumeID, alloc.ID, alloc.NodeID, args.NodeID)
	}
	return nil
}

// allowPublish checks a publish: the node's secret (asNode: the answer
// carries the volume's secrets) for an allocation on the node whose group
// asks for the volume, or a token with node write (an operator: no
// secrets).
func (v *CSIVolume) allowPublish(st *state.StateStore, args *structs.CSIVolumePublishRequest) (asNode bool, err error) {
	asNode, err = v.srv.allowNodeClient(st, args.NodeID, args.AuthToken)
	if err != nil || !asNode {
		return asNode, err
	}
	alloc, err := st.AllocByID(nil, args.AllocationID)
	if err != nil {
		return false, err
	}
	if alloc == nil {
		return false, structs.NewError(structs.CodeNotFound, "volume %q: alloc %s not found; it was stopped and garbage collected", args.VolumeID, args.AllocationID)
	}
	return true, allowNodeVolume(alloc, args.NodeID, args.RequestNamespace(), args.VolumeID)
}

// allowNodeVolume checks a node's call about volume volID in namespace ns
// for alloc: the alloc runs on the node, in that namespace, and its group
// asks for the volume. Otherwise the node could reach (and get the secrets
// of) any volume of any namespace through any alloc it runs.
func allowNodeVolume(alloc *structs.Allocation, nodeID, ns, volID string) error {
	if alloc.NodeID != nodeID {
		return errPermission("volume %q: alloc %s runs on node %s, not on node %s", volID, alloc.ID, alloc.NodeID, nodeID)
	}
	return allocAsksVolume(alloc, ns, volID)
}

// allocAsksVolume checks that alloc is in namespace ns, the volume's, and
// that its group asks for volume volID.
func allocAsksVolume(alloc *structs.Allocation, ns, volID string) error {
	switch {
	case alloc.Namespace != ns:
		return errPermission("volume %q in namespace %q: alloc %s on node %s is in namespace %q", volID, ns, alloc.ID, alloc.NodeID, alloc.Namespace)
	case !groupAsksVolume(alloc, volID):
		return errPermission("volume %q: the group of alloc %s on node %s asks for no such volume", volID, alloc.ID, alloc.NodeID)
	}
	return nil
}

// groupAsksVolume reports whether alloc's task group has a csi volume
// whose source is volID, per_alloc volumes named for the alloc's index as
// the scheduler and the client name them (VolumeRequest.SourceFor).
func groupAsksVolume(alloc *structs.Allocation, volID string) bool {
	tg := alloc.LookupTaskGroup()
	if tg == nil {
		return false
	}
	for _, req := range tg.Volumes {
		if req == nil || req.Type != "csi" {
			continue
		}
		if !req.PerAlloc {
			if req.Source == volID {
				return true
			}
			continue
		}
		if idx, ok := structs.AllocIndex(alloc.Name); ok && req.SourceFor(idx) == volID {
			return true
		}
	}
	return false
}

// allowGet checks a volume read: a registered node's secret for a volume
// that an alloc on the node asks for (a client reads the volumes of its
// allocations, to mount them or, once stopped, to unmount them), or else
// csi-read-volume in its namespace. The answer is sanitized either way.
func (v *CSIVolume) allowGet(args *structs.CSIVolumeGetRequest) error {
	st := v.srv.State()
	node, err := v.srv.nodeOfSecret(st, args.AuthToken)
	if err != nil {
		return err
	}
	if node != nil {
		asks, err := nodeAllocAsksVolume(st, node.ID, args.RequestNamespace(), args.ID)
		if err != nil || asks {
			return err
		}
	}
	return v.srv.allowNamespace(args.AuthToken, args.RequestNamespace(), acl.CapCSIReadVolume)
}

// nodeAllocAsksVolume reports whether an alloc on the node, stopped or
// not, is in namespace ns and its group asks for volume volID.
func nodeAllocAsksVolume(st *state.StateStore, nodeID, ns, volID string) (bool, error) {
	iter, err := st.AllocsByNode(nil, nodeID)
	if err != nil {
		return false, err
	}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if alloc := raw.(*structs.Allocation); alloc.Namespace == ns && groupAsksVolume(alloc, volID) {
			return true, nil
		}
	}
	return false, nil
}
