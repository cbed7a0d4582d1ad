package chaos

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/harness/chaos/check"
	"github.com/berth-csi/berth/structs"
)

// sampleEvery is the pause between two samples of the job volumes.
const sampleEvery = 200 * time.Millisecond

// Sampler reads the job volumes' claims and the allocations from a
// random server, over and over, until stopped: each read of a writer
// volume is a check.ClaimSample, and every claim seen is followed from
// its allocation's end (complete, failed or lost) to the first read that
// no longer shows it.
type Sampler struct {
	c        *Cluster
	vols     []JobVolume
	cancel   context.CancelFunc
	done     chan struct{}
	stopOnce sync.Once

	mu      sync.Mutex
	samples []check.ClaimSample
	claims  map[claimKey]*claimTrack
	order   []claimKey // claims in the order first seen
	reads   int
	failed  int // reads that got no answer (faults)
}

type claimKey struct{ volumeID, allocID string }

type claimTrack struct {
	lastSeen time.Time // the last read that showed the claim
	stopped  time.Time // the first read that showed its alloc ended
	freed    time.Time // the first read after lastSeen that did not show it
}

// StartSampler starts sampling vols, drawing servers from seed.
func StartSampler(c *Cluster, vols []JobVolume, seed uint64) *Sampler {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Sampler{c: c, vols: vols, cancel: cancel, done: make(chan struct{}), claims: map[claimKey]*claimTrack{}}
	clients := make([]*api.Client, len(c.Servers))
	for i, srv := range c.Servers {
		clients[i] = c.API(srv)
	}
	go s.run(ctx, rand.New(rand.NewPCG(seed, 0x73616d70)), clients)
	c.t.Cleanup(s.Stop)
	return s
}

// Stop ends the sampling, waits for the read in flight, and reads once
// more from the leader, so that a claim freed after the last periodic
// read (the workloads stopped just before) is seen freed, not taken for
// one never freed. It may be called twice.
func (s *Sampler) Stop() {
	s.stopOnce.Do(func() {
		s.cancel()
		<-s.done
		if leader := s.c.Leader(); leader != nil {
			s.sample(leader.Name, s.c.API(leader))
		}
	})
}

func (s *Sampler) run(ctx context.Context, rng *rand.Rand, clients []*api.Client) {
	defer close(s.done)
	for sleepCtx(ctx, sampleEvery) {
		i := rng.IntN(len(clients))
		s.sample(s.c.Servers[i].Name, clients[i])
	}
}

// sample reads the allocations and then each job volume from one server
// (not stale: through the leader).
func (s *Sampler) sample(server string, cl *api.Client) {
	allocs, _, err := cl.Allocations().List(nil)
	if err != nil {
		s.count(false)
		return
	}
	ended := map[string]bool{}
	running := map[string][]string{} // job ID -> running allocs
	for _, a := range allocs {
		switch a.ClientStatus {
		case structs.AllocClientStatusComplete, structs.AllocClientStatusFailed, structs.AllocClientStatusLost:
			ended[a.ID] = true
		case structs.AllocClientStatusRunning:
			running[a.JobID] = append(running[a.JobID], a.ID)
		}
	}
	for _, v := range s.vols {
		vol, _, err := cl.CSIVolumes().Info(v.ID, nil)
		now := time.Now()
		if err != nil {
			s.count(false)
			continue
		}
		s.count(true)
		s.record(now, v, vol, ended)
		if v.Writer {
			ids := JobIDs(v)
			s.mu.Lock()
			s.samples = append(s.samples, check.ClaimSample{At: now, Server: server, VolumeID: v.ID,
				WriteClaims: writeClaims(vol), RunningWriters: append(slices.Clone(running[ids[0]]), running[ids[1]]...)})
			s.mu.Unlock()
		}
	}
}

// writeClaims is the allocs holding a write claim on vol, taken or being
// released.
func writeClaims(vol *structs.CSIVolume) []string {
	var ids []string
	for id := range vol.WriteClaims {
		ids = append(ids, id)
	}
	for id, c := range vol.PastClaims {
		if c.Mode == structs.CSIVolumeClaimWrite {
			ids = append(ids, id)
		}
	}
	return ids
}

// record follows the claims of one read of vol.
func (s *Sampler) record(now time.Time, v JobVolume, vol *structs.CSIVolume, ended map[string]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	for _, id := range vol.ClaimingAllocs() {
		seen[id] = true
		k := claimKey{v.ID, id}
		tr := s.claims[k]
		if tr == nil {
			tr = &claimTrack{}
			s.claims[k] = tr
			s.order = append(s.order, k)
		}
		tr.lastSeen, tr.freed = now, time.Time{}
		if ended[id] && tr.stopped.IsZero() {
			tr.stopped = now
		}
	}
	for _, k := range s.order {
		if tr := s.claims[k]; k.volumeID == v.ID && !seen[k.allocID] && tr.freed.IsZero() {
			tr.freed = now
		}
	}
}

func (s *Sampler) count(ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	if !ok {
		s.failed++
	}
}

// Samples is every read of a writer volume, in the order taken.
func (s *Sampler) Samples() []check.ClaimSample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.samples)
}

// Reads is how many reads were made and how many got no answer.
func (s *Sampler) Reads() (reads, failed int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads, s.failed
}

// Releases is every claim whose allocation was seen ended or that was
// seen freed, for check.TimeToFree; faults gives each one the heal of the
// last fault injected before it was freed (or before now, if it was not).
// A claim freed between two reads without its alloc seen ended counts as
// stopped at the last read that showed it.
func (s *Sampler) Releases(faults []Fault) []check.ClaimRelease {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []check.ClaimRelease
	for _, k := range s.order {
		tr := s.claims[k]
		if tr.stopped.IsZero() && tr.freed.IsZero() {
			continue // held by an alloc that still runs
		}
		stopped := tr.stopped
		if stopped.IsZero() {
			stopped = tr.lastSeen
		}
		until := tr.freed
		if until.IsZero() {
			until = time.Now()
		}
		out = append(out, check.ClaimRelease{VolumeID: k.volumeID, AllocID: k.allocID,
			Stopped: stopped, Freed: tr.freed, Healed: lastHealBefore(faults, until)})
	}
	return out
}

// lastHealBefore is the latest heal of a fault injected before t; zero
// if none was.
func lastHealBefore(faults []Fault, t time.Time) time.Time {
	var healed time.Time
	for _, f := range faults {
		if f.Injected.Before(t) && f.Healed.After(healed) {
			healed = f.Healed
		}
	}
	return healed
}
