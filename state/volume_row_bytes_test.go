package state_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// BenchmarkStateStore_VolumeRowBytes reports the live heap a stored volume
// costs (its row and its index entries), registered in batches of 64 as
// the leader's group commit does. The target is a server RSS of at most
// 2 KB per volume (issue 14), of which this is the part the state store
// holds.
func BenchmarkStateStore_VolumeRowBytes(b *testing.B) {
	const n, batch = 20000, 64
	for range b.N {
		s := volumeWorld(b)
		before := liveHeap()
		for i := 0; i < n; i += batch {
			var req []*structs.CSIVolume
			for j := i; j < min(i+batch, n); j++ {
				req = append(req, statetest.Volume(fmt.Sprintf("lt-v%07d", j), plugID))
			}
			if errs := s.UpsertCSIVolumeBatch(uint64(10+i), [][]*structs.CSIVolume{req}); errs[0] != nil {
				b.Fatal(errs[0])
			}
		}
		after := liveHeap()
		runtime.KeepAlive(s)
		b.ReportMetric(float64(after-before)/n, "B/volume")
	}
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
