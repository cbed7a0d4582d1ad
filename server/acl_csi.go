package server

import (
	"github.com/berth-csi/berth/acl"
	"github.com/berth-csi/berth/structs"
)

// allowClaim checks a claim. A client may claim (or release) only for an
// allocation on its own node, with its node's secret: claimNode is then
// that node, the only one the volume's secrets are answered to. Anyone
// else needs csi-mount-volume in the volume's namespace, and gets no
// secrets.
func (v *CSIVolume) allowClaim(args *structs.CSIVolumeClaimRequest) (claimNode string, err error) {
	st := v.srv.State()
	alloc, err := st.AllocByID(nil, args.AllocationID)
	if err != nil {
		return "", err
	}
	if alloc != nil && (args.NodeID == "" || args.NodeID == alloc.NodeID) {
		node, err := st.NodeByID(nil, alloc.NodeID)
		if err != nil {
			return "", err
		}
		if actsForNode(node, args.AuthToken) {
			return alloc.NodeID, nil
		}
	}
	return "", v.srv.allowNamespace(args.AuthToken, args.RequestNamespace(), acl.CapCSIMountVolume)
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
