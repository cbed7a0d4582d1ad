package state_test

import (
	"fmt"
	"testing"

	"github.com/hashicorp/go-memdb"
	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// TestStateStore_UpsertCSIVolumeBatch: each request is all or nothing on
// its own, answered with its own error, and a reader woken by the batch
// sees every applied request of its index at once (one transaction), never
// part of it.
func TestStateStore_UpsertCSIVolumeBatch(t *testing.T) {
	for round := range 50 {
		s := claimWorld(t)
		ws := memdb.NewWatchSet()
		_, err := s.CSIVolumes(ws)
		must.NoError(t, err)

		var reqs [][]*structs.CSIVolume
		for i := range 8 {
			reqs = append(reqs, []*structs.CSIVolume{statetest.Volume(fmt.Sprintf("b%d", i), plugID)})
		}
		dup := statetest.Volume("dup-2", plugID)
		dup.ExternalID = "ext-dup-1" // the request's first volume holds it
		reqs[3] = []*structs.CSIVolume{statetest.Volume("dup-1", plugID), dup}
		reqs[5] = []*structs.CSIVolume{statetest.Volume("x1", plugID), statetest.Volume("x2", "no-such-plugin")}

		seen := make(chan int, 1)
		go func() {
			ws.Watch(nil)
			iter, _ := s.CSIVolumes(nil)
			n := 0
			for raw := iter.Next(); raw != nil; raw = iter.Next() {
				if id := raw.(*structs.CSIVolume).ID; len(id) == 2 && id[0] == 'b' {
					n++
				}
			}
			seen <- n
		}()
		errs := s.UpsertCSIVolumeBatch(20, reqs)
		must.EqOp(t, 6, <-seen, must.Sprintf("round %d: a woken reader sees the whole index", round))

		for i, err := range errs {
			switch i {
			case 3:
				must.ErrorIs(t, err, structs.ErrConflict)
			case 5:
				must.ErrorIs(t, err, structs.ErrBadRequest)
			default:
				must.NoError(t, err)
			}
		}
		for _, id := range []string{"dup-1", "dup-2", "x1", "x2"} {
			vol, err := s.CSIVolumeByID(nil, structs.DefaultNamespace, id)
			must.NoError(t, err)
			must.Nil(t, vol, must.Sprintf("volume %s of a refused request", id))
		}
		must.EqOp(t, uint64(20), mustIndex(t, s, "csi_volumes"))
	}
}
