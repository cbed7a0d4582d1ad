package client

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/berth-csi/berth/client/allocrunner"
	"github.com/berth-csi/berth/client/volumemanager"
	"github.com/berth-csi/berth/internal/atomicfile"
	"github.com/berth-csi/berth/structs"
)

// fenceCheck is how often the fence looks at the time since the last
// contact with the servers.
const fenceCheck = 100 * time.Millisecond

// fence tracks the last contact with the servers and says when this
// client must stop its writers: once no heartbeat has been answered for
// half the heartbeat TTL the servers gave. The servers mark the node down
// no sooner than a TTL after the last heartbeat they received, which was
// sent after the time recorded here; so a writer stopped from half the TTL
// on, with SIGKILL at most 30% of the TTL later, is dead a fifth of the
// TTL before its claim can be freed (docs/architecture.md, "Fence").
type fence struct {
	mu     sync.Mutex
	last   time.Time     // when the last answered heartbeat was sent
	ttl    time.Duration // the TTL the servers gave with it
	fenced bool          // the fence fired since the last contact
	// path, if set, keeps last and ttl across restarts: a client that
	// restarts while cut off fences what it left running.
	path string
}

// fenceState is the fence's file.
type fenceState struct {
	LastContact time.Time
	TTL         time.Duration
}

// fencePath is where the fence keeps its state.
func fencePath(dataDir string) string { return filepath.Join(dataDir, "client", "fence.json") }

// restore reads what an earlier client of this data dir recorded; a
// client that starts with allocations of its past counts from there.
func (f *fence) restore() error {
	b, err := os.ReadFile(f.path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	var st fenceState
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("client: fence state %s is malformed (%w); remove it, and the client fences again once it has reached the servers", f.path, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.last, f.ttl = st.LastContact.Round(0), st.TTL // wall clock only: it crossed a restart
	return nil
}

// knownTTL is the last TTL the servers gave (0 if none is known).
func (f *fence) knownTTL() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ttl
}

// contact records a heartbeat the servers answered, sent at sent.
func (f *fence) contact(sent time.Time, ttl time.Duration) error {
	f.mu.Lock()
	if sent.After(f.last) {
		f.last = sent
	}
	f.ttl = ttl
	f.fenced = false
	st := fenceState{LastContact: f.last, TTL: f.ttl}
	f.mu.Unlock()
	if f.path == "" {
		return nil
	}
	// Written outside the lock: due, polled every fenceCheck, never waits
	// on the disk. Only the heartbeat loop writes, one at a time.
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(f.path, b)
}

// fenceAfter is how long a client goes without an answered heartbeat
// before it stops its writers; killWithin bounds their kill.
func fenceAfter(ttl time.Duration) time.Duration { return ttl / 2 }
func killWithin(ttl time.Duration) time.Duration { return ttl * 3 / 10 }

// due reports whether the fence must fire at now, the reason, and how
// soon the tasks must be dead. It fires once per loss of contact; a client
// that never had contact (nothing of it runs yet) never fences.
func (f *fence) due(now time.Time) (why string, within time.Duration, fire bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.last.IsZero() || f.ttl <= 0 {
		return "", 0, false
	}
	since := now.Sub(f.last)
	if since < fenceAfter(f.ttl) {
		return "", 0, false
	}
	fire = !f.fenced
	f.fenced = true
	why = fmt.Sprintf("fenced: this client has not reached any server for %s (half the heartbeat TTL, %s); "+
		"its write claims may be freed for another node", since.Round(time.Millisecond), f.ttl)
	return why, killWithin(f.ttl), fire
}

// fenceLoop stops the allocations holding write claims (and not opting
// out) once the fence is due, and any started while it stays so.
func (w *allocWatcher) fenceLoop(ctx context.Context) {
	t := time.NewTicker(fenceCheck)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !w.c.heartbeatTried.Load() {
			continue // a client just started tries the servers once first
		}
		why, within, fire := w.c.fence.due(timeNow())
		if why == "" {
			continue
		}
		var ids []string
		for _, r := range w.allRunners() {
			if r.Fenceable() && !isDone(r.Done()) {
				r.Fence(why, within)
				ids = append(ids, r.ID())
			}
		}
		if fire {
			ids = append(ids, w.fenceOrphans(ctx, why, within)...)
			w.c.logger.Warn("no server reached for half the heartbeat TTL: stopping the allocations that hold write claims",
				"allocs", ids, "kill_within", within)
		}
	}
}

// fenceOrphans fences the allocs this client left running before a
// restart and has no runner for yet (it has not reached the servers since
// it started): all their tasks are killed at once, their volumes
// unmounted, and each is reported lost with why, as a fenced runner is. It
// returns the allocs it fenced.
func (w *allocWatcher) fenceOrphans(ctx context.Context, why string, within time.Duration) []string {
	var (
		mu  sync.Mutex
		ids []string
		wg  sync.WaitGroup
	)
	local, err := allocrunner.LocalAllocs(w.c.config.DataDir)
	if err != nil {
		w.c.logger.Error("cannot list the allocations left from before this client started; they are not fenced", "error", err)
	}
	for _, id := range local {
		if w.runner(id) != nil {
			continue
		}
		wg.Go(func() {
			killed, err := allocrunner.FenceOrphan(ctx, w.c.config.DataDir, id, within, w.c.docker)
			if err != nil {
				w.c.logger.Error("cannot fence an allocation left from before this client started", "alloc_id", id, "error", err)
			}
			if killed {
				mu.Lock()
				ids = append(ids, id)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, id := range ids {
		w.onUpdate(&structs.Allocation{ID: id, ClientStatus: structs.AllocClientStatusLost, ClientDescription: why})
	}
	w.unmountWhere(ctx, func(u volumemanager.Use) bool { return slices.Contains(ids, u.AllocID) })
	return ids
}
