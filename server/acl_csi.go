package server

import (
	"github.com/berth-csi/berth/acl"
	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
)

// allowClaim checks a claim: csi-mount-volume in the volume's namespace.
// A node's secret counts for more only to move along the release of a
// claim of a volume that an allocation on the node asks for
// (allowNodeVolume): a client never takes a claim (the servers reserve an
// allocation's claims when they place it, and its client confirms them
// with CSIVolume.Publish). A claim never answers a volume's secrets.
func (v *CSIVolume) allowClaim(args *structs.CSIVolumeClaimRequest) error {
	err := v.srv.allowNamespace(args.AuthToken, args.RequestNamespace(), acl.CapCSIMountVolume)
	if err == nil {
		return nil
	}
	st := v.srv.State()
	alloc, lerr := st.AllocByID(nil, args.AllocationID)
	if lerr != nil {
		return lerr
	}
	if alloc == nil {
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
	return allowNodeVolume(alloc, node.ID, args.RequestNamespace(), args.VolumeID)
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
	switch {
	case alloc.NodeID != nodeID:
		return errPermission("volume %q: alloc %s runs on node %s, not on node %s", volID, alloc.ID, alloc.NodeID, nodeID)
	case alloc.Namespace != ns:
		return errPermission("volume %q in namespace %q: alloc %s on node %s is in namespace %q", volID, ns, alloc.ID, nodeID, alloc.Namespace)
	case !groupAsksVolume(alloc, volID):
		return errPermission("volume %q: the group of alloc %s on node %s asks for no such volume", volID, alloc.ID, nodeID)
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

// allowGet checks a volume read: csi-read-volume in its namespace, or a
// registered node's secret (a client reads the volumes its allocations
// mount; the answer is sanitized either way).
func (v *CSIVolume) allowGet(args *structs.CSIVolumeGetRequest) error {
	err := v.srv.allowNamespace(args.AuthToken, args.RequestNamespace(), acl.CapCSIReadVolume)
	if err == nil {
		return nil
	}
	if node, nerr := v.srv.nodeOfSecret(v.srv.State(), args.AuthToken); nerr != nil || node == nil {
		return err
	}
	return nil
}
