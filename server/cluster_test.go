package server_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"

	"github.com/berth-csi/berth/server"
	"github.com/berth-csi/berth/server/servertest"
	"github.com/berth-csi/berth/structs"
)

func TestCluster_WriteThroughFollower_ReadOnAll(t *testing.T) {
	c := servertest.Cluster(t, 3)
	follower := c.Followers()[0]

	registerPluginNode(t, follower, "node-1", "hostpath")
	index := registerVolume(t, follower, "data", "hostpath")

	for _, s := range c.Running() {
		vol := staleGet(t, s, "data", index)
		must.NotNil(t, vol, must.Sprintf("server %s has no volume", s.Name()))
		must.Eq(t, "hostpath", vol.PluginID)
		must.True(t, vol.Schedulable, must.Sprintf("server %s: plugin health not joined", s.Name()))
		must.Eq(t, "berth-hostpath", vol.Provider)
	}

	var peers []string
	must.NoError(t, call(t, follower, "Status.Peers", &structs.GenericRequest{}, &peers))
	must.SliceLen(t, 3, peers)
	var members structs.ServerMembersResponse
	must.NoError(t, call(t, follower, "Status.Members", &structs.GenericRequest{}, &members))
	must.SliceLen(t, 3, members.Members)
}

func TestCluster_LeaderKilled_NothingLost(t *testing.T) {
	c := servertest.Cluster(t, 3)
	leader := c.Leader()
	must.NotNil(t, leader)

	registerPluginNode(t, leader, "node-1", "hostpath")
	var last uint64
	for i := 0; i < 20; i++ {
		last = registerVolume(t, leader, fmt.Sprintf("vol-%02d", i), "hostpath")
	}

	start := time.Now()
	c.Kill(leader.Index)
	next := c.WaitForLeader(t, 20*time.Second)
	t.Logf("new leader %s after %s", next.Name(), time.Since(start))
	must.NotEq(t, leader.Index, next.Index)

	var list structs.CSIVolumeListResponse
	must.NoError(t, call(t, next, "CSIVolume.List", &structs.CSIVolumeListRequest{}, &list))
	must.SliceLen(t, 20, list.Volumes, must.Sprint("every committed volume survives the leader"))
	must.GreaterEq(t, last, list.Index)

	// The two survivors still form a quorum and take writes.
	index := registerVolume(t, c.Followers()[0], "after-failover", "hostpath")
	for _, s := range c.Running() {
		must.NotNil(t, staleGet(t, s, "after-failover", index))
	}
}

func TestCluster_RestartedServerCatchesUp(t *testing.T) {
	c := servertest.Cluster(t, 3)
	registerPluginNode(t, c.Leader(), "node-1", "hostpath")
	registerVolume(t, c.Leader(), "before", "hostpath")

	victim := c.Followers()[0].Index
	c.Kill(victim)
	var index uint64
	for i := 0; i < 10; i++ {
		index = registerVolume(t, c.Leader(), fmt.Sprintf("while-down-%d", i), "hostpath")
	}

	restarted := c.Restart(victim)
	must.NotNil(t, staleGet(t, restarted, "before", index), must.Sprint("data from before the restart comes back from the data dir"))
	must.NotNil(t, staleGet(t, restarted, "while-down-9", index), must.Sprint("entries written while down are replicated"))

	// It serves reads forwarded to the leader too, and it is a voter again.
	var cfg structs.RaftConfigurationResponse
	must.NoError(t, call(t, restarted, "Operator.RaftGetConfiguration", &structs.GenericRequest{}, &cfg))
	must.SliceLen(t, 3, cfg.Servers)
	leaders := 0
	for _, s := range cfg.Servers {
		must.True(t, s.Voter)
		if s.Leader {
			leaders++
		}
	}
	must.EqOp(t, 1, leaders)
}

// TestCluster_DeadServerKeptUntilReplaced: a dead server of a cluster of
// bootstrap_expect servers stays a voter (removing it would leave two
// voters, and a cut-off server would come back as a stranger: the chaos
// suite's seed 42 found one answering "no cluster leader" for 28 s after
// a 1.5 s partition); once a new server joins, autopilot removes the dead
// one and the cluster is three voters again.
func TestCluster_DeadServerKeptUntilReplaced(t *testing.T) {
	c := servertest.Cluster(t, 3)
	victim := c.Followers()[0]
	victimID := victim.ID()
	c.Kill(victim.Index)

	voters := func() []string {
		var cfg structs.RaftConfigurationResponse
		must.NoError(t, call(t, c.Leader(), "Operator.RaftGetConfiguration", &structs.GenericRequest{}, &cfg))
		var ids []string
		for _, s := range cfg.Servers {
			if s.Voter {
				ids = append(ids, s.ID)
			}
		}
		return ids
	}
	// The two left still take writes, and the dead one is still a voter
	// after those writes committed.
	registerPluginNode(t, c.Leader(), "node-1", "hostpath")
	must.SliceContains(t, voters(), victimID)

	cfg := servertest.TestConfig(t, "server-3", 3)
	for _, o := range c.Running() {
		cfg.Join = append(cfg.Join, o.SerfAddr())
	}
	replacement, err := server.New(cfg)
	must.NoError(t, err)
	t.Cleanup(func() { _ = replacement.Shutdown() })
	waitFor(t, 60*time.Second, "the replacement a voter and the dead server removed", func() bool {
		ids := voters()
		return len(ids) == 3 && slices.Contains(ids, replacement.ID()) && !slices.Contains(ids, victimID)
	})
}

// TestCluster_LeaderHandsOffBeforeStopping: a leader that stops hands the
// leadership to another voter first (Shutdown does so), so the others do
// not wait out an election timeout; it stays running as a follower.
func TestCluster_LeaderHandsOffBeforeStopping(t *testing.T) {
	c := servertest.Cluster(t, 3)
	old := c.Leader()
	old.HandOffLeadership()
	must.False(t, old.IsLeader(), must.Sprint("the old leader stepped down"))
	next := c.WaitForLeader(t, 10*time.Second)
	must.NotEqOp(t, old.Index, next.Index)
	registerPluginNode(t, next, "node-1", "hostpath")
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestCluster_FollowerReadsSeeAcknowledgedWrites: the leader's read index
// covers every write it acknowledged, a follower refuses to give one, and
// a read through a follower (served from its own state once it has applied
// that index) sees a write acknowledged just before, every time.
func TestCluster_FollowerReadsSeeAcknowledgedWrites(t *testing.T) {
	c := servertest.Cluster(t, 3)
	leader, follower := c.Leader(), c.Followers()[0]
	registerPluginNode(t, leader, "node-1", "hostpath")

	for i := range 20 {
		id := fmt.Sprintf("read-%d", i)
		index := registerVolume(t, leader, id, "hostpath")
		var readIndex uint64
		must.NoError(t, call(t, leader, "Status.ReadIndex", &structs.GenericRequest{}, &readIndex))
		must.GreaterEq(t, index, readIndex, must.Sprint("the read index covers the acknowledged write"))

		var resp structs.CSIVolumeGetResponse
		must.NoError(t, call(t, follower, "CSIVolume.Get", &structs.CSIVolumeGetRequest{ID: id}, &resp))
		must.NotNil(t, resp.Volume, must.Sprintf("volume %s, written at index %d, read through a follower", id, index))
	}
	// Just after a write the follower forwards a read it has not caught
	// up for within followerCatchUp. Once it has applied every write,
	// it serves each read itself: 20 reads, 20 follower reads.
	last := leader.AppliedIndex()
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(func() bool { return follower.AppliedIndex() >= last }),
		wait.Timeout(10*time.Second), wait.Gap(5*time.Millisecond)), must.Sprint("the follower applies every write"))
	served := follower.FollowerReads()
	for i := range 20 {
		var resp structs.CSIVolumeGetResponse
		must.NoError(t, call(t, follower, "CSIVolume.Get", &structs.CSIVolumeGetRequest{ID: fmt.Sprintf("read-%d", i)}, &resp))
		must.NotNil(t, resp.Volume)
	}
	must.EqOp(t, served+20, follower.FollowerReads(), must.Sprint("the caught-up follower served every read itself, none forwarded"))
	err := call(t, follower, "Status.ReadIndex", &structs.GenericRequest{}, new(uint64))
	must.ErrorIs(t, err, structs.ErrUnavailable)
}

// TestCluster_EventNext_IndexAheadOfTheCluster: an index no server has
// reached (from another cluster, or from this one before it was rebuilt)
// is Gone, on the leader and on a follower (which asks the leader), not a
// silent wait for other events at those indexes; an index the cluster has
// reached is served everywhere.
func TestCluster_EventNext_IndexAheadOfTheCluster(t *testing.T) {
	c := servertest.Cluster(t, 3)
	registerPluginNode(t, c.Leader(), "node-1", "hostpath")
	index := registerVolume(t, c.Leader(), "data", "hostpath")

	for _, s := range []*servertest.TestServer{c.Leader(), c.Followers()[0]} {
		err := call(t, s, "Event.Next", &structs.EventNextRequest{Index: index + 1000}, &structs.EventNextResponse{})
		must.ErrorIs(t, err, structs.ErrGone, must.Sprintf("server %s", s.Name()))
		must.ErrorContains(t, err, fmt.Sprintf("index %d is ahead of the cluster's last index", index+1000))

		var reply structs.EventNextResponse
		must.NoError(t, call(t, s, "Event.Next", &structs.EventNextRequest{Index: index - 1, MaxWait: 10 * time.Second,
			Topics: map[structs.EventTopic][]string{structs.TopicCSIVolume: {"data"}}}, &reply))
		must.SliceNotEmpty(t, reply.Events, must.Sprintf("server %s", s.Name()))
		must.EqOp(t, index, reply.Events[0].Index)
	}
}

// TestCluster_FollowerServesBlockingReadsWhileBehind: a blocking read
// (MinQueryIndex > 0) that reaches a follower just after a write, before
// the follower has applied it, waits there to catch up and is served
// there, never forwarded: a fleet's allocation watches, forwarded, would
// hold every stream the follower has to the leader.
func TestCluster_FollowerServesBlockingReadsWhileBehind(t *testing.T) {
	c := servertest.Cluster(t, 3)
	leader, follower := c.Leader(), c.Followers()[0]
	registerPluginNode(t, leader, "node-1", "hostpath")
	served := follower.FollowerReads()
	for i := range 20 {
		id := fmt.Sprintf("behind-%d", i)
		index := registerVolume(t, leader, id, "hostpath")
		var resp structs.CSIVolumeGetResponse
		must.NoError(t, call(t, follower, "CSIVolume.Get", &structs.CSIVolumeGetRequest{ID: id,
			QueryOptions: structs.QueryOptions{MinQueryIndex: 1, MaxQueryTime: 5 * time.Second}}, &resp))
		must.NotNil(t, resp.Volume, must.Sprintf("volume %s, written at index %d", id, index))
	}
	must.EqOp(t, served+20, follower.FollowerReads(), must.Sprint("every blocking read served by the follower, none forwarded"))
}
