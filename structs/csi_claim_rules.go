package structs

import (
	"errors"
	"fmt"
	"strings"
)

// The claim rules, in one place. DecideClaim is called by the scheduler
// (placing an allocation), by the state store (the FSM taking a claim the
// plan reserved, or one a tool asks for over the API) and, for what can
// be known before any volume is read, by Job.Validate (ClaimModeFor).

// ClaimRefusalReason says which rule refused a claim. The numbers are not
// persisted; they sort the reasons for tests and callers.
type ClaimRefusalReason int

const (
	// ClaimRefusedReadOnly: the access mode allows no writer and the
	// group did not set read_only.
	ClaimRefusedReadOnly ClaimRefusalReason = iota + 1
	// ClaimRefusedCapability: the volume was not registered with the
	// access and attachment mode asked.
	ClaimRefusedCapability
	// ClaimRefusedNodeNotReady: the node is not ready.
	ClaimRefusedNodeNotReady
	// ClaimRefusedNoPlugin: the node has no healthy node instance of the
	// volume's plugin.
	ClaimRefusedNoPlugin
	// ClaimRefusedTopology: the node is outside the volume's topology.
	ClaimRefusedTopology
	// ClaimRefusedReleasing: this allocation's claim is already being
	// released; it cannot be taken again.
	ClaimRefusedReleasing
	// ClaimRefusedModeInUse: the volume is claimed with other modes.
	ClaimRefusedModeInUse
	// ClaimRefusedWriterHeld: the one writer the mode allows is taken, or
	// an earlier writer's claim is not freed yet.
	ClaimRefusedWriterHeld
	// ClaimRefusedOtherNode: a single-node mode, and another node holds a
	// claim (taken or not freed yet).
	ClaimRefusedOtherNode
)

// ClaimRefusal is why a claim cannot be taken now. It is an error whose
// code (Code) says whether the caller may wait (Conflict, NotReady) or
// must change its request (BadRequest).
type ClaimRefusal struct {
	Reason   ClaimRefusalReason
	VolumeID string
	AllocID  string // empty for a placement being planned
	NodeID   string
	// Holder is the claim in the way, for the held and releasing reasons.
	Holder *CSIVolumeClaim
	// detail is the rest of the message, naming the modes or the state.
	detail string
}

// Code is the error code of the refusal.
func (r *ClaimRefusal) Code() ErrorCode {
	switch r.Reason {
	case ClaimRefusedReadOnly, ClaimRefusedCapability, ClaimRefusedTopology:
		return CodeBadRequest
	case ClaimRefusedNodeNotReady, ClaimRefusedNoPlugin:
		return CodeNotReady
	}
	return CodeConflict
}

// Error names the volume, the allocation and, for a held claim, who holds
// it and what to wait for.
func (r *ClaimRefusal) Error() string {
	who := "alloc " + r.AllocID
	if r.AllocID == "" {
		who = "a new alloc"
	}
	msg := fmt.Sprintf("volume %q: %s", r.VolumeID, strings.ReplaceAll(r.detail, "{who}", who))
	if r.Holder != nil && r.AllocID != "" && r.Reason != ClaimRefusedReleasing {
		msg += fmt.Sprintf("; %s must wait until it is freed", who)
	}
	return msg
}

// Is makes errors.Is(err, ErrConflict) and its siblings hold for the
// refusal's code.
func (r *ClaimRefusal) Is(target error) bool {
	var t *Error
	return errors.As(target, &t) && t.Code == r.Code()
}

// As lets errors.As find the refusal as a coded *Error, so that it crosses
// RPC and HTTP with its code.
func (r *ClaimRefusal) As(target any) bool {
	if p, ok := target.(**Error); ok {
		*p = &Error{Code: r.Code(), Message: r.Error()}
		return true
	}
	return false
}

// ClaimAsk is what a claim asks of a volume.
type ClaimAsk struct {
	AllocID string // empty while the scheduler plans a placement
	NodeID  string
	// ReadOnly is the group's read_only; Mode, when set, is the claim
	// mode asked outright (the claim API); otherwise ClaimModeFor decides.
	ReadOnly bool
	Mode     CSIVolumeClaimMode
	// AccessMode and AttachmentMode as the group asks; both empty take the
	// volume's only capability.
	AccessMode     CSIVolumeAccessMode
	AttachmentMode CSIVolumeAttachmentMode
}

// ClaimModeFor is the claim a group's volume takes: read when read_only is
// set, write otherwise. A reader-only access mode without read_only is an
// error naming read_only, so that such a group is refused up front, never
// placed and then failed.
func ClaimModeFor(access CSIVolumeAccessMode, readOnly bool) (CSIVolumeClaimMode, error) {
	if readOnly {
		return CSIVolumeClaimRead, nil
	}
	if access != CSIVolumeAccessModeUnknown && !access.AllowsWrite() {
		return "", fmt.Errorf("access mode %s allows readers only; set read_only = true", access)
	}
	return CSIVolumeClaimWrite, nil
}

// DecideClaim applies every claim rule to ask against the volume (with
// every claim it holds, taken or not yet freed) and the node the claim is
// for (nil when it is not registered), and returns the claim to take, in
// state taken, or why it cannot be taken now.
func DecideClaim(vol *CSIVolume, node *Node, ask ClaimAsk) (*CSIVolumeClaim, *ClaimRefusal) {
	refuse := func(reason ClaimRefusalReason, holder *CSIVolumeClaim, format string, args ...any) *ClaimRefusal {
		return &ClaimRefusal{Reason: reason, VolumeID: vol.ID, AllocID: ask.AllocID, NodeID: ask.NodeID,
			Holder: holder, detail: fmt.Sprintf(format, args...)}
	}
	access, attach := ask.AccessMode, ask.AttachmentMode
	if access == "" && attach == "" && len(vol.RequestedCapabilities) == 1 && vol.RequestedCapabilities[0] != nil {
		access, attach = vol.RequestedCapabilities[0].AccessMode, vol.RequestedCapabilities[0].AttachmentMode
	}
	// The modes first: with no mode to go by (several capabilities and
	// none asked) there is nothing to say about read_only yet.
	if !vol.HasCapability(access, attach) {
		return nil, refuse(ClaimRefusedCapability, nil,
			"access mode %s with attachment mode %s is not among its capabilities (%s); claim with one of them",
			access, attach, vol.CapabilityList())
	}
	mode := ask.Mode
	if mode == "" {
		m, err := ClaimModeFor(access, ask.ReadOnly)
		if err != nil {
			return nil, refuse(ClaimRefusedReadOnly, nil, "%v", err)
		}
		mode = m
	}
	if mode == CSIVolumeClaimWrite && !access.AllowsWrite() {
		return nil, refuse(ClaimRefusedReadOnly, nil, "access mode %s allows readers only; {who} cannot claim it for write (set read_only = true)", access)
	}

	if node == nil {
		return nil, refuse(ClaimRefusedNodeNotReady, nil, "node %s is not registered; {who} cannot claim it there", ask.NodeID)
	}
	if !node.Ready() {
		return nil, refuse(ClaimRefusedNodeNotReady, nil, "node %s is %s, not ready; {who} cannot claim it there until it is", node.ID, node.Status)
	}
	info := node.CSINodePlugins[vol.PluginID]
	if info == nil || !info.Healthy {
		return nil, refuse(ClaimRefusedNoPlugin, nil, "node %s has no healthy node instance of plugin %q (yet)", node.ID, vol.PluginID)
	}
	var topo *CSITopology
	if info.NodeInfo != nil {
		topo = info.NodeInfo.AccessibleTopology
	}
	if !vol.AccessibleFrom(topo) {
		return nil, refuse(ClaimRefusedTopology, nil, "node %s is outside its topology", node.ID)
	}

	if ask.AllocID != "" {
		if past := vol.PastClaims[ask.AllocID]; past != nil {
			return nil, refuse(ClaimRefusedReleasing, past, "the claim of {who} is already being released (%s) and cannot be taken again", past.State)
		}
	}
	if vol.InUse() {
		if access != vol.AccessMode && vol.AccessMode != CSIVolumeAccessModeUnknown {
			return nil, refuse(ClaimRefusedModeInUse, nil, "access mode cannot change from %s to %s while claimed by %s",
				vol.AccessMode, access, DescribeClaims(vol.SortedClaims()))
		}
		if attach != vol.AttachmentMode && vol.AttachmentMode != CSIVolumeAttachmentModeUnknown {
			return nil, refuse(ClaimRefusedModeInUse, nil, "attachment mode cannot change from %s to %s while claimed by %s",
				vol.AttachmentMode, attach, DescribeClaims(vol.SortedClaims()))
		}
	}
	// A writer waits for every earlier writer's claim to be freed, not
	// only released: until then the old writer's node may still have the
	// volume published (and, for network storage, its task may still be
	// writing).
	if mode == CSIVolumeClaimWrite && access.MaxWriters() == 1 {
		for _, c := range vol.SortedClaims() {
			if c.AllocID == ask.AllocID || c.Mode != CSIVolumeClaimWrite {
				continue
			}
			if c.State == CSIVolumeClaimStateTaken {
				return nil, refuse(ClaimRefusedWriterHeld, c, "%s allows one writer and %s holds it", access, c.Describe())
			}
			return nil, refuse(ClaimRefusedWriterHeld, c, "%s allows one writer and the claim of %s is not freed yet", access, c.Describe())
		}
	}
	if access.SingleNode() {
		for _, c := range vol.SortedClaims() {
			if c.AllocID != ask.AllocID && c.NodeID != ask.NodeID {
				return nil, refuse(ClaimRefusedOtherNode, c, "%s allows one node and %s holds it", access, c.Describe())
			}
		}
	}

	claim := &CSIVolumeClaim{AllocID: ask.AllocID, NodeID: ask.NodeID, Mode: mode,
		AccessMode: access, AttachmentMode: attach, State: CSIVolumeClaimStateTaken}
	if info.NodeInfo != nil {
		claim.ExternalNodeID = info.NodeInfo.ID
	}
	return claim, nil
}

// Describe renders a claim as `alloc a1 on node n1 (write)`, with its
// state when it is being released.
func (c *CSIVolumeClaim) Describe() string {
	kind := string(c.Mode)
	if c.State != CSIVolumeClaimStateTaken {
		kind += ", " + c.State.String()
	}
	return fmt.Sprintf("alloc %s on node %s (%s)", c.AllocID, c.NodeID, kind)
}

// DescribeClaims renders claims as `alloc a1 on node n1 (write), alloc a2
// on node n2 (read, unpublishing)`.
func DescribeClaims(claims []*CSIVolumeClaim) string {
	parts := make([]string, len(claims))
	for i, c := range claims {
		parts[i] = c.Describe()
	}
	return strings.Join(parts, ", ")
}

// TakenClaim is the alloc's claim while it is taken (read or write), or
// nil.
func (v *CSIVolume) TakenClaim(allocID string) *CSIVolumeClaim {
	if c := v.WriteClaims[allocID]; c != nil {
		return c
	}
	return v.ReadClaims[allocID]
}

// SortedClaims lists every claim of the volume, taken or being released,
// in allocation ID order.
func (v *CSIVolume) SortedClaims() []*CSIVolumeClaim {
	var out []*CSIVolumeClaim
	for _, id := range v.ClaimingAllocs() {
		for _, m := range []map[string]*CSIVolumeClaim{v.WriteClaims, v.ReadClaims, v.PastClaims} {
			if c := m[id]; c != nil {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// CapabilityList renders the volume's requested capabilities.
func (v *CSIVolume) CapabilityList() string {
	caps := make([]string, 0, len(v.RequestedCapabilities))
	for _, c := range v.RequestedCapabilities {
		if c != nil {
			caps = append(caps, c.String())
		}
	}
	return strings.Join(caps, ", ")
}
