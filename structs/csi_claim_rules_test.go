package structs

import (
	"errors"
	"testing"

	"github.com/shoenig/test/must"
)

func claimRulesWorld() (*CSIVolume, *Node) {
	vol := &CSIVolume{ID: "data", PluginID: "hp", RequestedCapabilities: []*CSIVolumeCapability{{
		AccessMode: CSIVolumeAccessModeSingleNodeWriter, AttachmentMode: CSIVolumeAttachmentModeFilesystem}}}
	node := &Node{ID: "n1", Status: NodeStatusReady, CSINodePlugins: map[string]*CSIInfo{
		"hp": {PluginID: "hp", Healthy: true, NodeInfo: &CSINodeInfo{ID: "ext-n1"}}}}
	return vol, node
}

func TestDecideClaim_Reasons(t *testing.T) {
	held := func(state CSIVolumeClaimState, mode CSIVolumeClaimMode, nodeID string) func(v *CSIVolume) {
		return func(v *CSIVolume) {
			c := &CSIVolumeClaim{AllocID: "old", NodeID: nodeID, Mode: mode, State: state,
				AccessMode: CSIVolumeAccessModeSingleNodeWriter, AttachmentMode: CSIVolumeAttachmentModeFilesystem}
			v.AccessMode, v.AttachmentMode = c.AccessMode, c.AttachmentMode
			switch {
			case state != CSIVolumeClaimStateTaken:
				v.PastClaims = map[string]*CSIVolumeClaim{"old": c}
			case mode == CSIVolumeClaimWrite:
				v.WriteClaims = map[string]*CSIVolumeClaim{"old": c}
			default:
				v.ReadClaims = map[string]*CSIVolumeClaim{"old": c}
			}
		}
	}
	cases := []struct {
		name   string
		setup  func(v *CSIVolume)
		node   func(n *Node)
		noNode bool
		ask    ClaimAsk
		reason ClaimRefusalReason
		code   error
	}{
		{name: "free", ask: ClaimAsk{AllocID: "a", NodeID: "n1"}},
		{name: "reader-only without read_only", setup: func(v *CSIVolume) {
			v.RequestedCapabilities[0].AccessMode = CSIVolumeAccessModeMultiNodeReader
		}, ask: ClaimAsk{AllocID: "a", NodeID: "n1"}, reason: ClaimRefusedReadOnly, code: ErrBadRequest},
		{name: "no mode to go by: several capabilities, none asked", setup: func(v *CSIVolume) {
			v.RequestedCapabilities = append(v.RequestedCapabilities, &CSIVolumeCapability{
				AccessMode: CSIVolumeAccessModeMultiNodeReader, AttachmentMode: CSIVolumeAttachmentModeFilesystem})
		}, ask: ClaimAsk{AllocID: "a", NodeID: "n1"}, reason: ClaimRefusedCapability, code: ErrBadRequest},
		{name: "node not registered", noNode: true,
			ask: ClaimAsk{AllocID: "a", NodeID: "n1"}, reason: ClaimRefusedNodeNotReady, code: ErrNotReady},
		{name: "mode not a capability", ask: ClaimAsk{AllocID: "a", NodeID: "n1", AccessMode: CSIVolumeAccessModeMultiNodeMultiWriter,
			AttachmentMode: CSIVolumeAttachmentModeFilesystem}, reason: ClaimRefusedCapability, code: ErrBadRequest},
		{name: "node down", node: func(n *Node) { n.Status = NodeStatusDown },
			ask: ClaimAsk{AllocID: "a", NodeID: "n1"}, reason: ClaimRefusedNodeNotReady, code: ErrNotReady},
		{name: "plugin unhealthy", node: func(n *Node) { n.CSINodePlugins["hp"].Healthy = false },
			ask: ClaimAsk{AllocID: "a", NodeID: "n1"}, reason: ClaimRefusedNoPlugin, code: ErrNotReady},
		{name: "outside the topology", setup: func(v *CSIVolume) {
			v.Topologies = []*CSITopology{{Segments: map[string]string{"zone": "b"}}}
		}, ask: ClaimAsk{AllocID: "a", NodeID: "n1"}, reason: ClaimRefusedTopology, code: ErrBadRequest},
		{name: "writer held", setup: held(CSIVolumeClaimStateTaken, CSIVolumeClaimWrite, "n1"),
			ask: ClaimAsk{AllocID: "a", NodeID: "n1"}, reason: ClaimRefusedWriterHeld, code: ErrConflict},
		{name: "writer being released", setup: held(CSIVolumeClaimStateControllerDetached, CSIVolumeClaimWrite, "n1"),
			ask: ClaimAsk{AllocID: "a", NodeID: "n1"}, reason: ClaimRefusedWriterHeld, code: ErrConflict},
		{name: "reader being released on another node", setup: held(CSIVolumeClaimStateUnpublishing, CSIVolumeClaimRead, "n2"),
			ask: ClaimAsk{AllocID: "a", NodeID: "n1"}, reason: ClaimRefusedOtherNode, code: ErrConflict},
		{name: "reader being released on the same node", setup: held(CSIVolumeClaimStateUnpublishing, CSIVolumeClaimRead, "n1"),
			ask: ClaimAsk{AllocID: "a", NodeID: "n1"}},
		{name: "own claim being released", setup: held(CSIVolumeClaimStateUnpublishing, CSIVolumeClaimWrite, "n1"),
			ask: ClaimAsk{AllocID: "old", NodeID: "n1"}, reason: ClaimRefusedReleasing, code: ErrConflict},
		{name: "own claim renewed", setup: held(CSIVolumeClaimStateTaken, CSIVolumeClaimWrite, "n1"),
			ask: ClaimAsk{AllocID: "old", NodeID: "n1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			vol, node := claimRulesWorld()
			if tc.setup != nil {
				tc.setup(vol)
			}
			if tc.node != nil {
				tc.node(node)
			}
			if tc.noNode {
				node = nil
			}
			claim, refusal := DecideClaim(vol, node, tc.ask)
			if tc.reason == 0 {
				must.Nil(t, refusal)
				must.EqOp(t, CSIVolumeClaimWrite, claim.Mode)
				must.EqOp(t, "ext-n1", claim.ExternalNodeID)
				must.EqOp(t, CSIVolumeAccessModeSingleNodeWriter, claim.AccessMode)
				return
			}
			must.NotNil(t, refusal)
			must.EqOp(t, tc.reason, refusal.Reason)
			must.ErrorIs(t, refusal, tc.code)
			must.StrContains(t, refusal.Error(), `volume "data"`)
			// Across a wire, the code stays.
			must.ErrorIs(t, ToError(fmtWrap(refusal)), tc.code)
			if refusal.Holder != nil && tc.reason != ClaimRefusedReleasing {
				must.StrContains(t, refusal.Error(), "alloc old on node")
				must.StrContains(t, refusal.Error(), "alloc a must wait until it is freed")
				placing := tc.ask
				placing.AllocID = ""
				_, r := DecideClaim(vol, node, placing)
				must.StrNotContains(t, r.Error(), "must wait", must.Sprint("a placement reason says who holds it, not what to do"))
			}
		})
	}
}

func fmtWrap(err error) error { return errors.Join(errors.New("wrapped"), err) }

func TestClaimModeFor(t *testing.T) {
	m, err := ClaimModeFor(CSIVolumeAccessModeSingleNodeReader, true)
	must.NoError(t, err)
	must.EqOp(t, CSIVolumeClaimRead, m)
	m, err = ClaimModeFor("", false)
	must.NoError(t, err)
	must.EqOp(t, CSIVolumeClaimWrite, m, must.Sprint("no access mode yet: the volume's decides later"))
	_, err = ClaimModeFor(CSIVolumeAccessModeMultiNodeReader, false)
	must.ErrorContains(t, err, "read_only")
}
