package keyreplicate_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/server/keyreplicate"
	"github.com/berth-csi/berth/structs"
)

func TestNew_RefusesAnIncompleteConfig(t *testing.T) {
	_, err := keyreplicate.New(keyreplicate.DefaultConfig())
	must.ErrorContains(t, err, "Ring, Peers, Put, Get, State, Logger and Clock are required")
}

// TestSpread_ReturnsOnAMajority: with three voters, the key is spread once
// one other server holds it; the push to the third goes on, and lands.
func TestSpread_ReturnsOnAMajority(t *testing.T) {
	c := newCluster(t, true, true)
	slow := c.peers[1]
	release := make(chan struct{})
	slow.set(func(p *peer) { p.block = release })

	k := key("k1")
	must.NoError(t, c.r.Spread(context.Background(), k))
	must.True(t, c.peers[0].ring.Has("k1"))
	must.False(t, slow.ring.Has("k1"), must.Sprint("Spread did not wait for the third server"))
	close(release)
	waitFor(t, "the push still under way to land", func() bool { return slow.ring.Has("k1") })
}

// TestSpread_AloneIsAMajority: a single voter holds the key already.
func TestSpread_AloneIsAMajority(t *testing.T) {
	c := newCluster(t, false)
	c.peers[0].set(func(p *peer) { p.down = true })
	must.NoError(t, c.r.Spread(context.Background(), key("k1")))
}

// TestSpread_ShortOfAMajority: when the voters that answer are too few,
// Spread is Unavailable, says how far the key got and why, and logs each
// failed push; a non-voter that took the key does not count, and is
// named as holding a key that was never committed.
func TestSpread_ShortOfAMajority(t *testing.T) {
	c := newCluster(t, true, true, false)
	c.peers[0].set(func(p *peer) { p.down = true })
	c.peers[1].set(func(p *peer) { p.down = true })

	err := c.r.Spread(context.Background(), key("k1"))
	must.ErrorIs(t, err, structs.ErrUnavailable)
	must.StrContains(t, err.Error(), "keyring: the new root key reached 1 of 3 servers, short of the 2 needed; no key was made")
	must.StrContains(t, err.Error(), "10.0.0.2:4747: ")
	must.StrContains(t, err.Error(), "10.0.0.3:4747: ")
	logs := c.logs.String()
	must.StrContains(t, logs, "[WARN]  solo: keyring: could not push a new root key to a server: key_id=k1 peer=10.0.0.2:4747 error=")
	must.StrContains(t, logs, "[WARN]  solo: keyring: a root key that was never committed stays in the keystore of other servers; it is harmless, and its file may be deleted: key_id=k1 peers=[\"10.0.0.4:4747\"]")
	must.True(t, c.peers[2].ring.Has("k1"))
}

// TestSpread_PushesEndAtTheTimeout: a push that hangs is abandoned at
// PushTimeout, and counts as failed.
func TestSpread_PushesEndAtTheTimeout(t *testing.T) {
	c := newClusterWith(t, func(cfg *keyreplicate.Config) { cfg.PushTimeout = 50 * time.Millisecond }, true, true)
	c.peers[0].set(func(p *peer) { p.down = true })
	c.peers[1].set(func(p *peer) { p.block = make(chan struct{}) })
	start := time.Now()
	err := c.r.Spread(context.Background(), key("k1"))
	must.ErrorIs(t, err, structs.ErrUnavailable)
	must.StrContains(t, err.Error(), "context deadline exceeded")
	t.Logf("abandoned after %s", time.Since(start))
}

// TestFetch asks the other servers in turn and keeps the first answer;
// the key is lost only when every other server answered that it lacks it.
func TestFetch(t *testing.T) {
	ctx := context.Background()
	t.Run("from the first that has it", func(t *testing.T) {
		c := newCluster(t, true, true)
		must.NoError(t, c.peers[1].ring.Add(key("k1")))
		lost, err := c.r.Fetch(ctx, "k1")
		must.NoError(t, err)
		must.False(t, lost)
		must.True(t, c.ring.Has("k1"))
	})
	t.Run("every other lacks it", func(t *testing.T) {
		c := newCluster(t, true, true)
		lost, err := c.r.Fetch(ctx, "k1")
		must.True(t, lost)
		must.ErrorIs(t, err, structs.ErrNotFound)
		must.StrContains(t, err.Error(), "10.0.0.2:4747: ")
		must.StrContains(t, err.Error(), "10.0.0.3:4747: ")
	})
	t.Run("one lacks it, one does not answer", func(t *testing.T) {
		c := newCluster(t, true, true)
		c.peers[1].set(func(p *peer) { p.down = true })
		lost, err := c.r.Fetch(ctx, "k1")
		must.False(t, lost, must.Sprint("the server that does not answer may have it"))
		must.ErrorIs(t, err, structs.ErrUnavailable)
	})
	t.Run("no other server", func(t *testing.T) {
		c := newCluster(t)
		lost, err := c.r.Fetch(ctx, "k1")
		must.True(t, lost)
		must.EqError(t, err, "root key k1: no other server to ask")
	})
	t.Run("another key in answer", func(t *testing.T) {
		c := newCluster(t, true)
		c.peers[0].set(func(p *peer) { p.wrong = true })
		lost, err := c.r.Fetch(ctx, "k1")
		must.False(t, lost)
		must.EqError(t, err, "10.0.0.2:4747: answered with another key than k1")
		must.False(t, c.ring.Has("k1"))
	})
}

// TestRun_FetchesEveryKeyItLacks: a round at once fetches the keys the
// state lists and the keystore lacks; a key committed later is fetched
// when the state changes.
func TestRun_FetchesEveryKeyItLacks(t *testing.T) {
	c := newCluster(t, true, true)
	for _, id := range []string{"k1", "k2"} {
		must.NoError(t, c.peers[0].ring.Add(key(id)))
		c.commit(key(id))
	}
	must.NoError(t, c.ring.Add(key("k1")))
	c.run()
	waitFor(t, "k2 fetched", func() bool { return c.ring.Has("k2") })
	must.StrContains(t, c.logs.String(), "[INFO]  solo: keyring: fetched root key: key_id=k2\n")
	must.StrNotContains(t, c.logs.String(), "key_id=k1")

	must.NoError(t, c.peers[1].ring.Add(key("k3")))
	c.commit(key("k3"))
	waitFor(t, "k3 fetched on the state's change", func() bool { return c.ring.Has("k3") })
}

// TestRun_RetriesWithBackoff: a round that cannot fetch a key is tried
// again after FetchRetry's wait, doubling, on the clock; a key lost is
// said so once, and no longer when a server has it again. Kick starts a
// round at once.
func TestRun_RetriesWithBackoff(t *testing.T) {
	c := newCluster(t, true, true)
	c.peers[0].set(func(p *peer) { p.down = true })
	c.commit(key("k1"))
	start := c.clk.Now()
	c.run()

	c.clk.AwaitTimer(t, start.Add(time.Second))
	must.False(t, c.r.Lost("k1"), must.Sprint("a server did not answer"))
	must.StrContains(t, c.logs.String(), "[WARN]  solo: keyring: fetch root key from the other servers; will retry: key_id=k1 retry_in=1s")
	c.clk.Advance(time.Second)
	c.clk.AwaitTimer(t, c.clk.Now().Add(2*time.Second))

	c.peers[0].set(func(p *peer) { p.down = false }) // back, and lacking it too
	c.clk.Advance(2 * time.Second)
	c.clk.AwaitTimer(t, c.clk.Now().Add(4*time.Second))
	must.True(t, c.r.Lost("k1"))
	lostLine := "[ERROR] solo: keyring: root key lost: no server has its material; volumes sealed under it must be registered again with their secrets: key_id=k1"
	must.EqOp(t, 1, strings.Count(c.logs.String(), lostLine))

	c.clk.Advance(4 * time.Second)
	c.clk.AwaitTimer(t, c.clk.Now().Add(4*time.Second)) // the wait's Max
	must.True(t, c.r.Lost("k1"))
	must.EqOp(t, 1, strings.Count(c.logs.String(), lostLine), must.Sprint("said once"))

	// A server has it again: a kick fetches it with no time passing.
	must.NoError(t, c.peers[1].ring.Add(key("k1")))
	c.r.Kick()
	waitFor(t, "k1 fetched", func() bool { return c.ring.Has("k1") })
	waitFor(t, "k1 no longer lost", func() bool { return !c.r.Lost("k1") })
}
