package stream

import (
	"context"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

// entry makes the events of one raft entry: one per key.
func entry(index uint64, keys ...string) []structs.Event {
	out := make([]structs.Event, len(keys))
	for i, k := range keys {
		out[i] = structs.Event{Topic: structs.TopicCSIVolume, Type: structs.EventVolumeUpdated, Key: k, Index: index}
	}
	return out
}

// seen is each event's "index/key".
func seen(evs []structs.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = strconv.FormatUint(e.Index, 10) + "/" + e.Key
	}
	return out
}

// now asks without waiting.
func now(t *testing.T, b *Broker, index uint64, limit int, match func(*structs.Event) bool) ([]structs.Event, uint64, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return b.Next(ctx, index, limit, match)
}

func TestBroker_Next_ResumesAfterAnIndexInWholeEntries(t *testing.T) {
	b := New(16)
	b.Publish(10, entry(10, "a", "b"))
	b.Publish(11, nil) // a write with no events moves the head only
	b.Publish(12, entry(12, "c", "d", "e"))
	b.Publish(13, entry(13, "f"))

	cases := []struct {
		name  string
		after uint64
		limit int
		want  []string
		next  uint64
	}{
		{"all", 9, 100, []string{"10/a", "10/b", "12/c", "12/d", "12/e", "13/f"}, 13},
		{"after an entry", 10, 100, []string{"12/c", "12/d", "12/e", "13/f"}, 13},
		{"after an entry without events", 11, 100, []string{"12/c", "12/d", "12/e", "13/f"}, 13},
		{"a limit never splits an entry", 9, 3, []string{"10/a", "10/b", "12/c", "12/d", "12/e"}, 12},
		{"a limit of one is still a whole entry", 11, 1, []string{"12/c", "12/d", "12/e"}, 12},
		{"caught up", 13, 100, []string{}, 13},
		{"ahead of this broker", 20, 100, []string{}, 20},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			evs, next, err := now(t, b, tc.after, tc.limit, nil)
			must.NoError(t, err)
			must.Eq(t, tc.want, append([]string{}, seen(evs)...))
			must.EqOp(t, tc.next, next)
		})
	}
}

func TestBroker_Next_FilterSkipsAndStillAdvances(t *testing.T) {
	b := New(16)
	b.Publish(10, entry(10, "a", "b"))
	b.Publish(11, entry(11, "a"))
	onlyB := func(e *structs.Event) bool { return e.Key == "b" }

	evs, next, err := now(t, b, 9, 100, onlyB)
	must.NoError(t, err)
	must.Eq(t, []string{"10/b"}, seen(evs))
	must.EqOp(t, 11, next, must.Sprint("the filtered-out entry 11 was read: ask after it"))

	evs, next, err = now(t, b, 10, 100, onlyB)
	must.NoError(t, err)
	must.SliceEmpty(t, evs)
	must.EqOp(t, 11, next)
}

func TestBroker_Publish_RingDropsTheOldestEntriesWhole(t *testing.T) {
	b := New(4)
	b.Publish(10, entry(10, "a", "b"))
	b.Publish(11, entry(11, "c", "d"))
	b.Publish(12, entry(12, "e")) // 10 goes, both its events

	evs, next, err := now(t, b, 10, 100, nil)
	must.NoError(t, err)
	must.Eq(t, []string{"11/c", "11/d", "12/e"}, seen(evs))
	must.EqOp(t, 12, next)

	_, _, err = now(t, b, 9, 100, nil)
	must.ErrorIs(t, err, structs.ErrGone)
	must.ErrorContains(t, err, "after index 9 are gone")
	must.ErrorContains(t, err, "the oldest index to resume from is 10")
	// A list's index is its tables' last change, often below the oldest
	// index held: the refusal must not send the subscriber there alone.
	must.ErrorContains(t, err, "then resume the stream after index 10, or after the lists' X-Berth-Index if higher")

	b.Publish(13, entry(13, "f", "g", "h", "i", "j")) // more than the ring holds
	_, _, err = now(t, b, 12, 100, nil)
	must.ErrorIs(t, err, structs.ErrGone)
	must.ErrorContains(t, err, "more events than the server's event buffer holds")
	must.ErrorContains(t, err, "resume from is 13")
	evs, next, err = now(t, b, 13, 100, nil)
	must.NoError(t, err)
	must.SliceEmpty(t, evs)
	must.EqOp(t, 13, next)
}

// A subscriber that falls behind while it streams is told so at its next
// ask, not given a stream with a hole.
func TestBroker_Next_FallingBehindMidStreamIsGone(t *testing.T) {
	b := New(3)
	b.Publish(10, entry(10, "a"))
	evs, next, err := now(t, b, 0, 100, nil)
	must.NoError(t, err)
	must.SliceEmpty(t, evs, must.Sprint("index 0 starts from now"))
	must.EqOp(t, 10, next)

	b.Publish(11, entry(11, "b"))
	evs, next, err = now(t, b, next, 1, nil)
	must.NoError(t, err)
	must.Eq(t, []string{"11/b"}, seen(evs))
	for i := uint64(12); i < 16; i++ {
		b.Publish(i, entry(i, "x"))
	}
	_, _, err = now(t, b, next, 1, nil)
	must.ErrorIs(t, err, structs.ErrGone)
	must.ErrorContains(t, err, "dropped them")
}

func TestBroker_Next_WaitsAndWakesOnPublish(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(16)
		b.Publish(10, entry(10, "a"))
		type answer struct {
			evs  []structs.Event
			next uint64
			err  error
		}
		waiters := make([]chan answer, 3)
		for i := range waiters {
			waiters[i] = make(chan answer, 1)
			go func() {
				evs, next, err := b.Next(t.Context(), 10, 100, nil)
				waiters[i] <- answer{evs, next, err}
			}()
		}
		synctest.Wait() // every waiter is blocked in Next
		for _, w := range waiters {
			select {
			case <-w:
				t.Fatal("a waiter answered before anything was published")
			default:
			}
		}
		b.Publish(11, entry(11, "b"))
		for _, w := range waiters {
			a := <-w
			must.NoError(t, a.err)
			must.Eq(t, []string{"11/b"}, seen(a.evs))
			must.EqOp(t, 11, a.next)
		}
	})
}

// A wait that ends with nothing answers no events and the index to ask
// after, the latest when it asked from now.
func TestBroker_Next_WaitEndsEmpty(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(16)
		b.Publish(10, entry(10, "a"))
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		evs, next, err := b.Next(ctx, 0, 100, nil)
		must.NoError(t, err)
		must.SliceEmpty(t, evs)
		must.EqOp(t, 10, next)
	})
}

// A restore cannot be told as events: every subscriber up to the last
// index published is gone at once; one ahead of it (from another server)
// waits for the first index after the snapshot's; a subscriber from now
// gets the events after the restore.
func TestBroker_Restore_SubscribersBeforeItAreGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(16)
		b.Publish(10, entry(10, "a"))
		b.Publish(11, entry(11, "b"))

		type answer struct {
			evs  []structs.Event
			next uint64
			err  error
		}
		ask := func(index uint64) chan answer {
			ch := make(chan answer, 1)
			go func() {
				evs, next, err := b.Next(t.Context(), index, 100, nil)
				ch <- answer{evs, next, err}
			}()
			return ch
		}
		caughtUp, ahead := ask(11), ask(13)
		synctest.Wait()
		b.Restore(8) // an older snapshot: its tables end at 8

		a := <-caughtUp
		must.ErrorIs(t, a.err, structs.ErrGone, must.Sprint("caught up before the restore, which it cannot see"))
		must.ErrorContains(t, a.err, "snapshot restore")
		must.ErrorContains(t, a.err, "will be known at the next change")
		fromNow := ask(0)
		synctest.Wait()
		select {
		case a := <-ahead:
			t.Fatalf("a subscriber ahead answered before the snapshot's end is known: %+v", a)
		default:
		}

		b.Publish(20, entry(20, "c")) // the snapshot was installed at 19
		a = <-ahead
		must.ErrorIs(t, a.err, structs.ErrGone)
		must.ErrorContains(t, a.err, "resume from is 19")
		a = <-fromNow
		must.NoError(t, a.err)
		must.Eq(t, []string{"20/c"}, seen(a.evs))

		evs, next, err := now(t, b, 19, 100, nil)
		must.NoError(t, err)
		must.Eq(t, []string{"20/c"}, seen(evs))
		must.EqOp(t, 20, next)
	})
}

// At a server's start, raft restores its last snapshot before it replays
// the log after it: a subscriber at the snapshot's index resumes exactly.
func TestBroker_Restore_AtStartKeepsTheSnapshotIndex(t *testing.T) {
	b := New(16)
	b.Restore(30)
	b.Publish(31, entry(31, "a"))
	evs, next, err := now(t, b, 30, 100, nil)
	must.NoError(t, err)
	must.Eq(t, []string{"31/a"}, seen(evs))
	must.EqOp(t, 31, next)
	_, _, err = now(t, b, 29, 100, nil)
	must.ErrorIs(t, err, structs.ErrGone)
}

func TestBroker_Publish_IndexNeverGoesBack(t *testing.T) {
	b := New(16)
	b.Publish(10, entry(10, "a"))
	b.Publish(9, entry(9, "late"))
	evs, next, err := now(t, b, 1, 100, nil)
	must.NoError(t, err)
	must.Eq(t, []string{"10/a"}, seen(evs))
	must.EqOp(t, 10, next)
}

// pluginEntry is one entry's event about a plugin with instances node
// instances: a payload that grows with the cluster.
func pluginEntry(index uint64, instances int) []structs.Event {
	p := &structs.CSIPlugin{ID: "p", Nodes: map[string]*structs.CSIInfo{}}
	for i := range instances {
		p.Nodes[strconv.Itoa(i)] = &structs.CSIInfo{PluginID: "p", Healthy: true}
	}
	return []structs.Event{{Topic: structs.TopicCSIPlugin, Type: structs.EventPluginUpdated, Key: "p", Index: index,
		Payload: structs.EventPayload{Plugin: p}}}
}

// The ring is bounded by what its payloads hold too, not only by how many
// events: a large cluster's plugin events keep fewer entries, and whoever
// is behind them is told so. An answer carries a quarter of the bound at
// most, so that it fits in one RPC message; a heavier entry is not kept.
func TestBroker_Publish_LargePayloadsDropTheOldestEntries(t *testing.T) {
	b := New(8)
	quarter := 8 * objectsPerEvent / answerShare
	for i := uint64(10); i < 15; i++ {
		b.Publish(i, pluginEntry(i, quarter-1)) // each weighs a quarter
	}
	_, _, err := now(t, b, 9, 100, nil)
	must.ErrorIs(t, err, structs.ErrGone, must.Sprint("five quarters do not fit: the first went"))
	must.ErrorContains(t, err, "resume from is 10")
	evs, next, err := now(t, b, 10, 100, nil)
	must.NoError(t, err)
	must.Eq(t, []string{"11/p"}, seen(evs), must.Sprint("an answer weighs a quarter at most"))
	must.EqOp(t, 11, next)
	evs, next, err = now(t, b, next, 100, nil)
	must.NoError(t, err)
	must.Eq(t, []string{"12/p"}, seen(evs))
	must.EqOp(t, 12, next)

	b.Publish(15, pluginEntry(15, quarter)) // heavier than an answer
	_, _, err = now(t, b, 14, 100, nil)
	must.ErrorIs(t, err, structs.ErrGone)
	must.ErrorContains(t, err, "or larger ones")

	// Once the heavy ones are gone, small events fill the ring again.
	for i := uint64(16); i < 24; i++ {
		b.Publish(i, entry(i, "a"))
	}
	evs, _, err = now(t, b, 15, 100, nil)
	must.NoError(t, err)
	must.SliceLen(t, 8, evs)
}
