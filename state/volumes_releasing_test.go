package state_test

import (
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"
	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// TestStateStore_CSIVolumesReleasing: only the volumes with a claim being
// released are listed, and the watch fires when another starts releasing
// one, not on other volume writes (a register, a claim taken).
func TestStateStore_CSIVolumesReleasing(t *testing.T) {
	s := claimWorld(t)
	must.NoError(t, claimOne(s, 10, claimReq("mnsw", "a1", write)))
	must.NoError(t, claimOne(s, 11, claimReq("mnmw", "a2", write)))
	must.NoError(t, claimOne(s, 12, releaseReq("mnsw", "a1", unpublishing)))

	releasing := func(ws memdb.WatchSet) []string {
		iter, err := s.CSIVolumesReleasing(ws)
		must.NoError(t, err)
		var ids []string
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			ids = append(ids, raw.(*structs.CSIVolume).ID)
		}
		return ids
	}
	ws := memdb.NewWatchSet()
	must.Eq(t, []string{"mnsw"}, releasing(ws))

	upsertVolumes(t, s, 13, statetest.Volume("new", plugID))
	must.NoError(t, claimOne(s, 14, claimReq("mnmw", "b1", write)))
	must.True(t, ws.Watch(time.After(50*time.Millisecond)), must.Sprint("writes that release nothing do not wake the watcher"))

	must.NoError(t, claimOne(s, 15, releaseReq("mnmw", "a2", unpublishing)))
	must.False(t, ws.Watch(time.After(10*time.Second)), must.Sprint("a volume that starts releasing a claim wakes it"))
	must.Eq(t, []string{"mnmw", "mnsw"}, releasing(nil))
}
