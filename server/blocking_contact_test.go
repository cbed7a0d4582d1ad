package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"

	"github.com/berth-csi/berth/server/servertest"
	"github.com/berth-csi/berth/structs"
)

// TestBlockingQuery_FollowerCutOffAnswersUnavailable: a blocking read that
// must not be stale, waiting on a follower, is woken by a write while the
// follower hears from its leader, and answered Unavailable (retry
// elsewhere) once the follower has lost the leader, instead of serving a
// frozen state until its wait ends.
func TestBlockingQuery_FollowerCutOffAnswersUnavailable(t *testing.T) {
	c := servertest.Cluster(t, 3)
	leader := c.Leader()
	registerPluginNode(t, leader, "node-1", "hostpath")
	index := registerVolume(t, leader, "data", "hostpath")
	follower := c.Followers()[0]

	blockingGet := func(min uint64) <-chan error {
		done := make(chan error, 1)
		go func() {
			var resp structs.CSIVolumeListResponse
			req := &structs.CSIVolumeListRequest{QueryOptions: structs.QueryOptions{MinQueryIndex: min, MaxQueryTime: 5 * time.Minute}}
			req.AuthToken = testNodeSecret
			err := follower.RPC(context.Background(), "CSIVolume.List", req, &resp)
			if err == nil && resp.Index <= min {
				err = structs.NewError(structs.CodeInternal, "answered index %d, not past %d", resp.Index, min)
			}
			done <- err
		}()
		return done
	}

	// In contact: a write wakes the waiter with the new index.
	woken := blockingGet(index)
	registerVolume(t, leader, "data-2", "hostpath")
	must.NoError(t, <-woken)

	// Cut off: both other servers gone, nothing will change here. The
	// follower has caught up first: a query for past what the leader has
	// is one it serves itself, and waits on (one for less, it would
	// forward rather than wait to catch up).
	var latest uint64
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(func() bool {
		mine, err1 := follower.State().LatestIndex()
		theirs, err2 := leader.State().LatestIndex()
		latest = mine
		return err1 == nil && err2 == nil && mine >= theirs
	}), wait.Timeout(10*time.Second), wait.Gap(5*time.Millisecond)))
	var err error
	served := follower.FollowerReads()
	cut := blockingGet(latest)
	// Once the follower serves it itself (it asked the leader for its
	// read index), the query waits here.
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(func() bool { return follower.FollowerReads() > served }),
		wait.Timeout(10*time.Second), wait.Gap(5*time.Millisecond)))
	for i, s := range c.Servers {
		if s != follower {
			c.Kill(i)
		}
	}
	err = <-cut
	must.ErrorIs(t, err, structs.ErrUnavailable)
	must.ErrorContains(t, err, "lost contact with the cluster leader")
}
