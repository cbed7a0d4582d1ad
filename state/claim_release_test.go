package state_test

import (
	"testing"
	"time"

	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
	"github.com/shoenig/test/must"
)

const (
	taken        = structs.CSIVolumeClaimStateTaken
	unpublishing = structs.CSIVolumeClaimStateUnpublishing
	nodeDetached = structs.CSIVolumeClaimStateNodeDetached
	ctrlDetached = structs.CSIVolumeClaimStateControllerDetached
	freed        = structs.CSIVolumeClaimStateFreed
)

func TestStateStore_CSIVolumeClaimBatch_Release(t *testing.T) {
	failed := func(st structs.CSIVolumeClaimState, msg string) structs.CSIVolumeClaimRequest {
		r := releaseReq("mnsw", "a1", st)
		r.LastError = msg
		return r
	}
	cases := []struct {
		name     string
		steps    []structs.CSIVolumeClaimRequest // after a1 writes and b1 reads mnsw
		want     error                           // of the last step; the others must succeed
		wantGone bool                            // a1 has no claim left
		wantPast structs.CSIVolumeClaimState     // else a1's claim is past, in this state
		attempts int
		lastErr  string
	}{
		{name: "unpublishing", steps: []structs.CSIVolumeClaimRequest{releaseReq("mnsw", "a1", unpublishing)}, wantPast: unpublishing},
		{
			name: "every step in order",
			steps: []structs.CSIVolumeClaimRequest{
				releaseReq("mnsw", "a1", unpublishing),
				releaseReq("mnsw", "a1", nodeDetached),
				releaseReq("mnsw", "a1", ctrlDetached),
			},
			wantPast: ctrlDetached,
		},
		{
			name:     "freed deletes the claim",
			steps:    []structs.CSIVolumeClaimRequest{releaseReq("mnsw", "a1", unpublishing), releaseReq("mnsw", "a1", freed)},
			wantGone: true,
		},
		{
			name:     "a step may be skipped",
			steps:    []structs.CSIVolumeClaimRequest{releaseReq("mnsw", "a1", nodeDetached)},
			wantPast: nodeDetached,
		},
		{name: "straight to freed", steps: []structs.CSIVolumeClaimRequest{releaseReq("mnsw", "a1", freed)}, wantGone: true},
		{
			name:     "freed again is a no-op",
			steps:    []structs.CSIVolumeClaimRequest{releaseReq("mnsw", "a1", freed), releaseReq("mnsw", "a1", freed)},
			wantGone: true,
		},
		{
			name: "no going back",
			steps: []structs.CSIVolumeClaimRequest{
				releaseReq("mnsw", "a1", nodeDetached),
				releaseReq("mnsw", "a1", unpublishing),
			},
			want:     structs.ErrConflict,
			wantPast: nodeDetached,
		},
		{
			name:     "failed step counts an attempt",
			steps:    []structs.CSIVolumeClaimRequest{failed(unpublishing, "unpublish: timeout")},
			wantPast: unpublishing, attempts: 1, lastErr: "unpublish: timeout",
		},
		{
			name: "retries at the same state count up",
			steps: []structs.CSIVolumeClaimRequest{
				failed(unpublishing, "e1"), failed(unpublishing, "e2"), failed(unpublishing, "e3"),
			},
			wantPast: unpublishing, attempts: 3, lastErr: "e3",
		},
		{
			name: "a checkpoint without error keeps the count and clears the error",
			steps: []structs.CSIVolumeClaimRequest{
				failed(unpublishing, "e1"), failed(unpublishing, "e2"), releaseReq("mnsw", "a1", unpublishing),
			},
			wantPast: unpublishing, attempts: 2,
		},
		{
			name: "advancing resets the count",
			steps: []structs.CSIVolumeClaimRequest{
				failed(unpublishing, "e1"), failed(unpublishing, "e2"), releaseReq("mnsw", "a1", nodeDetached),
			},
			wantPast: nodeDetached,
		},
		{
			name: "advancing with an error counts one",
			steps: []structs.CSIVolumeClaimRequest{
				failed(unpublishing, "e1"), failed(unpublishing, "e2"), failed(nodeDetached, "controller: busy"),
			},
			wantPast: nodeDetached, attempts: 1, lastErr: "controller: busy",
		},
		{
			name:     "no claim to release",
			steps:    []structs.CSIVolumeClaimRequest{releaseReq("mnsw", "a2", unpublishing)},
			want:     structs.ErrNotFound,
			wantPast: taken,
		},
		{
			name:     "freeing a claim that never was is a no-op",
			steps:    []structs.CSIVolumeClaimRequest{releaseReq("mnsw", "a2", freed)},
			wantPast: taken,
		},
		{
			name:     "unknown volume",
			steps:    []structs.CSIVolumeClaimRequest{releaseReq("nope", "a1", unpublishing)},
			want:     structs.ErrNotFound,
			wantPast: taken,
		},
		{
			name:     "freeing on an unknown volume is a no-op",
			steps:    []structs.CSIVolumeClaimRequest{releaseReq("nope", "a1", freed)},
			wantPast: taken,
		},
		{
			name:     "state past freed",
			steps:    []structs.CSIVolumeClaimRequest{releaseReq("mnsw", "a1", freed+1)},
			want:     structs.ErrBadRequest,
			wantPast: taken,
		},
		{
			name:     "negative state",
			steps:    []structs.CSIVolumeClaimRequest{releaseReq("mnsw", "a1", -1)},
			want:     structs.ErrBadRequest,
			wantPast: taken,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := claimWorld(t)
			must.NoError(t, claimOne(s, 10, claimReq("mnsw", "a1", write)))
			must.NoError(t, claimOne(s, 11, claimReq("mnsw", "b1", read)))
			index := uint64(12)
			for i, step := range tc.steps {
				step.NextAttemptAt = time.Unix(int64(100+i), 0)
				step.Timestamp = time.Unix(int64(50+i), 0)
				err := claimOne(s, index, step)
				if i == len(tc.steps)-1 {
					mustCode(t, tc.want, err)
				} else {
					must.NoError(t, err)
				}
				index++
			}

			vol := mustVolume(t, s, "mnsw")
			must.MapContainsKey(t, vol.ReadClaims, "b1", must.Sprint("another alloc's claim is untouched"))
			switch {
			case tc.wantGone:
				must.MapNotContainsKey(t, vol.WriteClaims, "a1")
				must.MapNotContainsKey(t, vol.PastClaims, "a1")
			case tc.wantPast == taken:
				must.MapContainsKey(t, vol.WriteClaims, "a1")
				must.MapNotContainsKey(t, vol.PastClaims, "a1")
			default:
				must.MapNotContainsKey(t, vol.WriteClaims, "a1")
				c := vol.PastClaims["a1"]
				must.NotNil(t, c)
				must.Eq(t, tc.wantPast, c.State)
				must.Eq(t, tc.attempts, c.Attempts)
				must.Eq(t, tc.lastErr, c.LastError)
				if tc.want == nil {
					last := len(tc.steps) - 1
					must.Eq(t, time.Unix(int64(100+last), 0), c.NextAttemptAt)
					must.Eq(t, time.Unix(int64(50+last), 0), c.UpdatedAt)
				}
				must.Eq(t, write, c.Mode)
				must.Eq(t, "n1", c.NodeID)
				must.Eq(t, time.Unix(50, 0), c.ReleasedAt, must.Sprint("stamped by the step that left taken, kept by the later ones"))
			}
			// b1 still reads, so the modes stay in use.
			must.Eq(t, structs.CSIVolumeAccessModeMultiNodeSingleWriter, vol.AccessMode)
			must.Eq(t, structs.CSIVolumeAttachmentModeFilesystem, vol.AttachmentMode)
		})
	}
}

func TestStateStore_CSIVolumeClaimBatch_LastFreedClearsModes(t *testing.T) {
	cases := []struct {
		name      string
		release   []structs.CSIVolumeClaimRequest
		wantModes bool
	}{
		{name: "claim being released keeps modes", release: []structs.CSIVolumeClaimRequest{releaseReq("snw", "a1", ctrlDetached)}, wantModes: true},
		{name: "freed clears modes", release: []structs.CSIVolumeClaimRequest{releaseReq("snw", "a1", freed)}},
		{
			name: "freed in steps clears modes",
			release: []structs.CSIVolumeClaimRequest{
				releaseReq("snw", "a1", unpublishing), releaseReq("snw", "a1", nodeDetached), releaseReq("snw", "a1", freed),
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := claimWorld(t)
			must.NoError(t, claimOne(s, 10, claimReq("snw", "a1", write)))
			for i, r := range tc.release {
				must.NoError(t, claimOne(s, uint64(11+i), r))
			}
			vol := mustVolume(t, s, "snw")
			must.Eq(t, tc.wantModes, vol.InUse())
			if tc.wantModes {
				must.Eq(t, structs.CSIVolumeAccessModeSingleNodeWriter, vol.AccessMode)
				return
			}
			must.Eq(t, structs.CSIVolumeAccessModeUnknown, vol.AccessMode)
			must.Eq(t, structs.CSIVolumeAttachmentModeUnknown, vol.AttachmentMode)
			iter, err := s.CSIVolumes(nil) // the rows as stored, not denormalized copies
			must.NoError(t, err)
			found := false
			for raw := iter.Next(); raw != nil; raw = iter.Next() {
				if row := raw.(*structs.CSIVolume); row.ID == "snw" {
					found = true
					must.True(t, row.ReadClaims == nil && row.WriteClaims == nil && row.PastClaims == nil,
						must.Sprint("a freed volume's row is lean again: no claim maps stored"))
				}
			}
			must.True(t, found)
		})
	}
}

func TestStateStore_CSIVolumeClaimBatch_NoOpWritesNothing(t *testing.T) {
	s := claimWorld(t)
	before := mustIndex(t, s, state.TableCSIVolumes)
	errs := s.CSIVolumeClaimBatch(10, []structs.CSIVolumeClaimRequest{
		releaseReq("snw", "a1", freed),
		releaseReq("nope", "a1", freed),
	})
	must.Eq(t, []error{nil, nil}, errs)
	must.Eq(t, before, mustIndex(t, s, state.TableCSIVolumes))
	must.Eq(t, uint64(4), mustVolume(t, s, "snw").ModifyIndex)
}
