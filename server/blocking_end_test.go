package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/server/servertest"
	"github.com/berth-csi/berth/structs"
)

// TestEndBlockingQueries: a blocking query waiting for a change that never
// comes answers at once, with the current index, when its server's agent
// ends blocking queries (as it does when it shuts down), and a query that
// comes later does not wait at all.
func TestEndBlockingQueries(t *testing.T) {
	c := servertest.Cluster(t, 1)
	srv := c.Leader()
	registerPluginNode(t, srv, "node-1", "hostpath")
	index := registerVolume(t, srv, "data", "hostpath")

	list := func() (uint64, error) {
		var resp structs.CSIVolumeListResponse
		req := &structs.CSIVolumeListRequest{QueryOptions: structs.QueryOptions{MinQueryIndex: index, MaxQueryTime: 10 * time.Minute}}
		req.AuthToken = testNodeSecret
		err := srv.RPC(context.Background(), "CSIVolume.List", req, &resp)
		return resp.Index, err
	}
	type answer struct {
		index uint64
		err   error
	}
	waiting := make(chan answer, 1)
	go func() {
		i, err := list()
		waiting <- answer{i, err}
	}()
	select {
	case a := <-waiting:
		t.Fatalf("the query answered (index %d, %v) before anything changed or ended it", a.index, a.err)
	case <-time.After(100 * time.Millisecond):
	}

	srv.EndBlockingQueries()
	a := <-waiting // the test's own timeout bounds this; the query's wait is 10 min
	must.NoError(t, a.err)
	must.Eq(t, index, a.index)

	later, err := list()
	must.NoError(t, err)
	must.Eq(t, index, later)
}
