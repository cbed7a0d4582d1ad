package server_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/berth-csi/berth/server/servertest"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// BenchmarkCluster_VolumeRegister measures volume registrations through a
// three-server cluster on loopback: each op is one raft write, fsynced on
// a majority. It asserts nothing about speed.
func BenchmarkCluster_VolumeRegister(b *testing.B) {
	for _, callers := range []int{1, 16} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			c := servertest.Cluster(b, 3)
			leader := c.Leader()
			var nresp structs.NodeUpdateResponse
			if err := leader.RPC(context.Background(), "Node.Register", &structs.NodeRegisterRequest{
				Node:         statetest.NodeWithPlugin("node-1", "hostpath", false, true, true),
				WriteRequest: structs.WriteRequest{AuthToken: testNodeSecret}}, &nresp); err != nil {
				b.Fatal(err)
			}
			var seq atomic.Int64
			register := func() error {
				id := fmt.Sprintf("vol-%d", seq.Add(1))
				var resp structs.CSIVolumeRegisterResponse
				return leader.RPC(context.Background(), "CSIVolume.Register", &structs.CSIVolumeRegisterRequest{
					Volumes: []*structs.CSIVolume{statetest.Volume(id, "hostpath")}}, &resp)
			}
			b.ResetTimer()
			if callers == 1 {
				for i := 0; i < b.N; i++ {
					if err := register(); err != nil {
						b.Fatal(err)
					}
				}
				return
			}
			// RunParallel starts parallelism x GOMAXPROCS goroutines.
			b.SetParallelism(max(1, callers/runtime.GOMAXPROCS(0)))
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := register(); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
