package state_test

import (
	"testing"

	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
	"github.com/shoenig/test/must"
)

// claimWorld is a store with:
//
//	n1, n2: healthy node instance of hostpath; allocs a1, a2 on n1, b1 on n2
//	n3: unhealthy instance, alloc c1
//	n4: healthy instance but node down, alloc d1
//	n5: no plugin, alloc e1
//	s1 on n1: stopped
//
// and one volume per access mode (each with the file-system attachment),
// plus "two-caps" (single-node-writer with file-system or block-device) and
// "mixed" (multi-node-multi-writer or multi-node-reader-only).
func claimWorld(t testing.TB) *state.StateStore {
	t.Helper()
	s := statetest.New(t)
	upsertNodes(t, s, 1,
		statetest.NodeWithPlugin("n1", plugID, false, true, true),
		statetest.NodeWithPlugin("n2", plugID, false, true, true),
		statetest.NodeWithPlugin("n3", plugID, false, true, false),
		statetest.NodeWithPlugin("n4", plugID, false, true, true),
		statetest.Node("n5"),
	)
	must.NoError(t, s.UpdateNodeStatus(2, "n4", structs.NodeStatusDown, 1, nil))
	stopped := statetest.Alloc("s1", "n1")
	stopped.DesiredStatus = structs.AllocDesiredStatusStop
	upsertAllocs(t, s, 3,
		statetest.Alloc("a1", "n1"), statetest.Alloc("a2", "n1"), statetest.Alloc("b1", "n2"),
		statetest.Alloc("c1", "n3"), statetest.Alloc("d1", "n4"), statetest.Alloc("e1", "n5"),
		stopped,
	)
	vol := func(id string, caps ...structs.CSIVolumeCapability) *structs.CSIVolume {
		v := statetest.Volume(id, plugID)
		v.RequestedCapabilities = nil
		for i := range caps {
			v.RequestedCapabilities = append(v.RequestedCapabilities, &caps[i])
		}
		return v
	}
	fs := func(m structs.CSIVolumeAccessMode) structs.CSIVolumeCapability {
		return structs.CSIVolumeCapability{AccessMode: m, AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem}
	}
	block := structs.CSIVolumeCapability{
		AccessMode:     structs.CSIVolumeAccessModeSingleNodeWriter,
		AttachmentMode: structs.CSIVolumeAttachmentModeBlockDevice,
	}
	upsertVolumes(t, s, 4,
		vol("snr", fs(structs.CSIVolumeAccessModeSingleNodeReader)),
		vol("snw", fs(structs.CSIVolumeAccessModeSingleNodeWriter)),
		vol("mnr", fs(structs.CSIVolumeAccessModeMultiNodeReader)),
		vol("mnsw", fs(structs.CSIVolumeAccessModeMultiNodeSingleWriter)),
		vol("mnmw", fs(structs.CSIVolumeAccessModeMultiNodeMultiWriter)),
		vol("two-caps", fs(structs.CSIVolumeAccessModeSingleNodeWriter), block),
		vol("mixed", fs(structs.CSIVolumeAccessModeMultiNodeMultiWriter), fs(structs.CSIVolumeAccessModeMultiNodeReader)),
	)
	return s
}

const (
	read  = structs.CSIVolumeClaimRead
	write = structs.CSIVolumeClaimWrite
)

func withModes(req structs.CSIVolumeClaimRequest, a structs.CSIVolumeAccessMode, m structs.CSIVolumeAttachmentMode) structs.CSIVolumeClaimRequest {
	req.AccessMode, req.AttachmentMode = a, m
	return req
}

func TestStateStore_CSIVolumeClaimBatch_Take(t *testing.T) {
	fsMode := structs.CSIVolumeAttachmentModeFilesystem
	blockMode := structs.CSIVolumeAttachmentModeBlockDevice
	onNode := func(req structs.CSIVolumeClaimRequest, node string) structs.CSIVolumeClaimRequest {
		req.NodeID = node
		return req
	}
	cases := []struct {
		name   string
		before []structs.CSIVolumeClaimRequest // applied first, must succeed
		req    structs.CSIVolumeClaimRequest
		want   error
	}{
		// what a claim must name
		{name: "write on single-node-writer", req: claimReq("snw", "a1", write)},
		{name: "read on single-node-writer", req: claimReq("snw", "a1", read)},
		{name: "unknown volume", req: claimReq("nope", "a1", write), want: structs.ErrNotFound},
		{name: "bad mode", req: claimReq("snw", "a1", "readwrite"), want: structs.ErrBadRequest},
		{name: "empty mode", req: claimReq("snw", "a1", ""), want: structs.ErrBadRequest},
		{name: "unknown alloc", req: claimReq("snw", "ghost", write), want: structs.ErrNotFound},
		{name: "stopped alloc", req: claimReq("snw", "s1", write), want: structs.ErrConflict},
		{name: "node named is the alloc's", req: onNode(claimReq("snw", "a1", write), "n1")},
		{name: "node named is not the alloc's", req: onNode(claimReq("snw", "a1", write), "n2"), want: structs.ErrBadRequest},

		// the node and its plugin instance
		{name: "node down", req: claimReq("snw", "d1", write), want: structs.ErrNotReady},
		{name: "node without the plugin", req: claimReq("snw", "e1", write), want: structs.ErrNotReady},
		{name: "unhealthy plugin instance", req: claimReq("snw", "c1", write), want: structs.ErrNotReady},

		// capabilities
		{name: "modes default to the only capability", req: claimReq("mnmw", "a1", write)},
		{name: "modes needed with two capabilities", req: claimReq("two-caps", "a1", write), want: structs.ErrBadRequest},
		{
			name: "modes among the capabilities",
			req:  withModes(claimReq("two-caps", "a1", write), structs.CSIVolumeAccessModeSingleNodeWriter, blockMode),
		},
		{
			name: "modes not among the capabilities",
			req:  withModes(claimReq("snw", "a1", write), structs.CSIVolumeAccessModeMultiNodeMultiWriter, fsMode),
			want: structs.ErrBadRequest,
		},
		{
			name: "only the access mode given",
			req:  withModes(claimReq("snw", "a1", write), structs.CSIVolumeAccessModeSingleNodeWriter, ""),
			want: structs.ErrBadRequest,
		},
		{
			name:   "attachment mode cannot change while claimed",
			before: []structs.CSIVolumeClaimRequest{withModes(claimReq("two-caps", "a1", read), structs.CSIVolumeAccessModeSingleNodeWriter, fsMode)},
			req:    withModes(claimReq("two-caps", "a2", read), structs.CSIVolumeAccessModeSingleNodeWriter, blockMode),
			want:   structs.ErrConflict,
		},
		{
			name:   "access mode cannot change while claimed",
			before: []structs.CSIVolumeClaimRequest{withModes(claimReq("mixed", "b1", read), structs.CSIVolumeAccessModeMultiNodeReader, fsMode)},
			req:    withModes(claimReq("mixed", "a1", write), structs.CSIVolumeAccessModeMultiNodeMultiWriter, fsMode),
			want:   structs.ErrConflict,
		},
		{
			name: "access mode cannot change while a claim is being released",
			before: []structs.CSIVolumeClaimRequest{
				withModes(claimReq("mixed", "b1", read), structs.CSIVolumeAccessModeMultiNodeReader, fsMode),
				releaseReq("mixed", "b1", structs.CSIVolumeClaimStateUnpublishing),
			},
			req:  withModes(claimReq("mixed", "a1", write), structs.CSIVolumeAccessModeMultiNodeMultiWriter, fsMode),
			want: structs.ErrConflict,
		},
		{
			name: "access mode may change once every claim is freed",
			before: []structs.CSIVolumeClaimRequest{
				withModes(claimReq("mixed", "b1", read), structs.CSIVolumeAccessModeMultiNodeReader, fsMode),
				releaseReq("mixed", "b1", structs.CSIVolumeClaimStateFreed),
			},
			req: withModes(claimReq("mixed", "a1", write), structs.CSIVolumeAccessModeMultiNodeMultiWriter, fsMode),
		},

		// access modes
		{name: "write on single-node-reader-only", req: claimReq("snr", "a1", write), want: structs.ErrBadRequest},
		{name: "write on multi-node-reader-only", req: claimReq("mnr", "a1", write), want: structs.ErrBadRequest},
		{
			name:   "readers on single-node-reader-only, same node",
			before: []structs.CSIVolumeClaimRequest{claimReq("snr", "a1", read)},
			req:    claimReq("snr", "a2", read),
		},
		{
			name:   "reader on single-node-reader-only, other node",
			before: []structs.CSIVolumeClaimRequest{claimReq("snr", "a1", read)},
			req:    claimReq("snr", "b1", read),
			want:   structs.ErrConflict,
		},
		{
			name:   "second writer on single-node-writer, same node",
			before: []structs.CSIVolumeClaimRequest{claimReq("snw", "a1", write)},
			req:    claimReq("snw", "a2", write),
			want:   structs.ErrConflict,
		},
		{
			name:   "reader beside the writer on single-node-writer, same node",
			before: []structs.CSIVolumeClaimRequest{claimReq("snw", "a1", write)},
			req:    claimReq("snw", "a2", read),
		},
		{
			name:   "reader on single-node-writer, other node",
			before: []structs.CSIVolumeClaimRequest{claimReq("snw", "a1", write)},
			req:    claimReq("snw", "b1", read),
			want:   structs.ErrConflict,
		},
		{
			name: "single node: a claim being released on another node still holds the node",
			before: []structs.CSIVolumeClaimRequest{
				claimReq("snw", "a1", write),
				releaseReq("snw", "a1", structs.CSIVolumeClaimStateNodeDetached),
			},
			req:  claimReq("snw", "b1", write),
			want: structs.ErrConflict,
		},
		{
			name: "single writer: a writer being released on the same node still holds it",
			before: []structs.CSIVolumeClaimRequest{
				claimReq("snw", "a1", write),
				releaseReq("snw", "a1", structs.CSIVolumeClaimStateUnpublishing),
			},
			req:  claimReq("snw", "a2", write),
			want: structs.ErrConflict,
		},
		{
			name: "single node: a reader being released on the same node",
			before: []structs.CSIVolumeClaimRequest{
				claimReq("snw", "a1", read),
				releaseReq("snw", "a1", structs.CSIVolumeClaimStateUnpublishing),
			},
			req: claimReq("snw", "a2", write),
		},
		{
			name: "single node: another node once the claim is freed",
			before: []structs.CSIVolumeClaimRequest{
				claimReq("snw", "a1", write),
				releaseReq("snw", "a1", structs.CSIVolumeClaimStateFreed),
			},
			req: claimReq("snw", "b1", write),
		},
		{
			name:   "second writer on multi-node-single-writer",
			before: []structs.CSIVolumeClaimRequest{claimReq("mnsw", "a1", write)},
			req:    claimReq("mnsw", "b1", write),
			want:   structs.ErrConflict,
		},
		{
			name:   "readers on other nodes beside the writer on multi-node-single-writer",
			before: []structs.CSIVolumeClaimRequest{claimReq("mnsw", "a1", write), claimReq("mnsw", "a2", read)},
			req:    claimReq("mnsw", "b1", read),
		},
		{
			name: "multi-node-single-writer: a writer not yet freed still holds it",
			before: []structs.CSIVolumeClaimRequest{
				claimReq("mnsw", "a1", write),
				releaseReq("mnsw", "a1", structs.CSIVolumeClaimStateControllerDetached),
			},
			req:  claimReq("mnsw", "b1", write),
			want: structs.ErrConflict,
		},
		{
			name: "multi-node-single-writer: a freed writer does not count",
			before: []structs.CSIVolumeClaimRequest{
				claimReq("mnsw", "a1", write),
				releaseReq("mnsw", "a1", structs.CSIVolumeClaimStateFreed),
			},
			req: claimReq("mnsw", "b1", write),
		},
		{
			name: "multi-node-single-writer: a reader beside a writer being released",
			before: []structs.CSIVolumeClaimRequest{
				claimReq("mnsw", "a1", write),
				releaseReq("mnsw", "a1", structs.CSIVolumeClaimStateUnpublishing),
			},
			req: claimReq("mnsw", "b1", read),
		},
		{
			name:   "readers on other nodes on multi-node-reader-only",
			before: []structs.CSIVolumeClaimRequest{claimReq("mnr", "a1", read)},
			req:    claimReq("mnr", "b1", read),
		},
		{
			name:   "writers on other nodes on multi-node-multi-writer",
			before: []structs.CSIVolumeClaimRequest{claimReq("mnmw", "a1", write), claimReq("mnmw", "a2", write)},
			req:    claimReq("mnmw", "b1", write),
		},

		// the same alloc again
		{
			name:   "re-claim is idempotent",
			before: []structs.CSIVolumeClaimRequest{claimReq("snw", "a1", write)},
			req:    claimReq("snw", "a1", write),
		},
		{
			name:   "reader becomes the writer",
			before: []structs.CSIVolumeClaimRequest{claimReq("snw", "a1", read)},
			req:    claimReq("snw", "a1", write),
		},
		{
			name:   "writer becomes a reader",
			before: []structs.CSIVolumeClaimRequest{claimReq("snw", "a1", write)},
			req:    claimReq("snw", "a1", read),
		},
		{
			name:   "reader cannot become a second writer",
			before: []structs.CSIVolumeClaimRequest{claimReq("snw", "a1", write), claimReq("snw", "a2", read)},
			req:    claimReq("snw", "a2", write),
			want:   structs.ErrConflict,
		},
		{
			name: "a claim being released cannot be taken again",
			before: []structs.CSIVolumeClaimRequest{
				claimReq("snw", "a1", write),
				releaseReq("snw", "a1", structs.CSIVolumeClaimStateUnpublishing),
			},
			req:  claimReq("snw", "a1", write),
			want: structs.ErrConflict,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := claimWorld(t)
			index := uint64(10)
			for _, req := range tc.before {
				must.NoError(t, claimOne(s, index, req))
				index++
			}
			var before *structs.CSIVolume
			if tc.want != nil && tc.req.VolumeID != "nope" {
				before = mustVolume(t, s, tc.req.VolumeID)
			}

			mustCode(t, tc.want, claimOne(s, index, tc.req))

			if tc.want != nil {
				if before != nil {
					must.Eq(t, before, mustVolume(t, s, tc.req.VolumeID), must.Sprint("a failed claim must leave the volume untouched"))
				}
				return
			}
			vol := mustVolume(t, s, tc.req.VolumeID)
			must.Eq(t, index, vol.ModifyIndex)
			mine, other := vol.WriteClaims, vol.ReadClaims
			if tc.req.Mode == read {
				mine, other = vol.ReadClaims, vol.WriteClaims
			}
			must.MapContainsKey(t, mine, tc.req.AllocationID)
			must.MapNotContainsKey(t, other, tc.req.AllocationID)
			must.MapNotContainsKey(t, vol.PastClaims, tc.req.AllocationID)

			claim := mine[tc.req.AllocationID]
			alloc, err := s.AllocByID(nil, tc.req.AllocationID)
			must.NoError(t, err)
			must.Eq(t, alloc.NodeID, claim.NodeID)
			must.Eq(t, "ext-"+alloc.NodeID, claim.ExternalNodeID)
			must.Eq(t, structs.CSIVolumeClaimStateTaken, claim.State)
			must.Eq(t, tc.req.Mode, claim.Mode)
			must.True(t, vol.HasCapability(claim.AccessMode, claim.AttachmentMode))
			must.Eq(t, vol.AccessMode, claim.AccessMode)
			must.Eq(t, vol.AttachmentMode, claim.AttachmentMode)
		})
	}
}

func TestStateStore_CSIVolumeClaimBatch_TakeKeepsRequestFields(t *testing.T) {
	s := claimWorld(t)
	req := claimReq("snw", "a1", write)
	req.ExternalNodeID = "plugin-node-7"
	req.Timestamp = req.Timestamp.AddDate(2030, 0, 0)
	must.NoError(t, claimOne(s, 10, req))

	claim := mustVolume(t, s, "snw").WriteClaims["a1"]
	must.Eq(t, "plugin-node-7", claim.ExternalNodeID)
	must.Eq(t, req.Timestamp, claim.UpdatedAt)
	must.Eq(t, uint64(10), mustIndex(t, s, state.TableCSIVolumes))
}
