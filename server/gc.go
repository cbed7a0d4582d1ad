package server

import (
	"context"
	"math"
	"time"

	"github.com/berth-csi/berth/internal/backoff"
	"github.com/berth-csi/berth/internal/clock"
	"github.com/berth-csi/berth/structs"
)

// Garbage collection runs on the leader: every GCInterval it lists what
// the state's rules allow removing (state/gc_rules.go: allocations over on
// their client and holding no claim that is not freed, stopped or done
// jobs with no allocation left, down nodes, freed past claims) and removes
// it, gcBatchRows rows per raft write. System.GarbageCollect runs a pass
// at once, with every threshold at zero.
//
// The FSM must not read a clock, so ages are raft indexes: the leader
// remembers when it saw the store reach each index (gcWitness), and a row
// whose ModifyIndex is at or below the index it saw a threshold ago has
// not changed since. A new leader knows only the indexes it has seen
// itself: it counts every older row's age from when it took office, so a
// failover can delay a collection by a threshold, never hasten one.

// gcBatchRows bounds the rows of one garbage collection raft write (a
// job's rows are never split, so a job with more goes in one of its own).
const gcBatchRows = 1000

// gcRetry spaces the passes after a failed one, up to GCInterval.
var gcRetry = backoff.Policy{Initial: time.Second, Jitter: 0.2}

// gcAll are the cutoffs of a collection with every threshold at zero.
var gcAll = structs.GCCutoffs{Alloc: math.MaxUint64, Job: math.MaxUint64, Node: math.MaxUint64}

// gcLoop collects garbage every GCInterval while this server leads.
func (s *Server) gcLoop(ctx context.Context) {
	clk := s.clock()
	logger := s.logger.Named("gc")
	keep := max(s.config.AllocGCThreshold, s.config.JobGCThreshold, s.config.NodeGCThreshold)
	w := &gcWitness{}
	store := s.State()
	note := func() {
		if st := s.State(); st != store {
			// A snapshot restore replaced the store: its rows' indexes are
			// another history's, so ages count again from now.
			w, store = &gcWitness{}, st
		}
		if index, err := store.LatestIndex(); err == nil {
			w.note(index, clk.Now(), keep)
		}
	}
	note()
	failures := 0
	for {
		wait := s.config.GCInterval
		if failures > 0 {
			retry := gcRetry
			retry.Max = wait
			wait = retry.Delay(failures)
		}
		select {
		case <-ctx.Done():
			return
		case <-clock.After(clk, wait):
		}
		note()
		cut := s.gcCutoffs(w, clk.Now())
		res, err := s.collectGarbage(ctx, cut)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			failures++
			logger.Warn("garbage collection failed; retrying", "error", err, "removed", res.Total())
			continue
		}
		failures = 0
		logGC(logger.Info, logger.Debug, res, "garbage collected")
	}
}

// logGC logs what a collection removed: with info when it removed
// something, with quiet otherwise.
func logGC(info, quiet func(string, ...any), res *structs.GCResult, msg string) {
	log := quiet
	if res.Total() > 0 {
		log = info
	}
	log(msg, "allocs", res.Allocs, "jobs", res.Jobs, "nodes", res.Nodes, "past_claims", res.PastClaims)
}

// gcCutoffs maps the configured thresholds to raft indexes at now.
func (s *Server) gcCutoffs(w *gcWitness, now time.Time) structs.GCCutoffs {
	return structs.GCCutoffs{
		Alloc: w.indexAt(now.Add(-s.config.AllocGCThreshold)),
		Job:   w.indexAt(now.Add(-s.config.JobGCThreshold)),
		Node:  w.indexAt(now.Add(-s.config.NodeGCThreshold)),
	}
}

// collectGarbage lists what cut allows removing and removes it, one raft
// write per batch, and answers what was removed (also when it fails
// part way).
func (s *Server) collectGarbage(ctx context.Context, cut structs.GCCutoffs) (*structs.GCResult, error) {
	total := &structs.GCResult{}
	batches, err := s.State().GCCandidates(cut, gcBatchRows)
	if err != nil {
		return total, err
	}
	for _, req := range batches {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		res, _, err := raftApply[*structs.GCResult](s, structs.GCRequestType, req)
		if err != nil {
			return total, err
		}
		total.Add(res)
		for _, id := range req.Nodes {
			if n, err := s.State().NodeByID(nil, id); err == nil && n == nil {
				s.clearHeartbeat(id)
			}
		}
	}
	return total, nil
}

// gcWitness remembers when this leader saw the store reach an index.
type gcWitness struct {
	marks []gcMark // oldest first
}

type gcMark struct {
	index uint64
	at    time.Time
}

// note records that the store had reached index at at, and forgets the
// marks no cutoff within keep of at needs.
func (w *gcWitness) note(index uint64, at time.Time, keep time.Duration) {
	if n := len(w.marks); n > 0 && w.marks[n-1].index == index {
		// Nothing was written since: the older mark says more.
	} else {
		w.marks = append(w.marks, gcMark{index: index, at: at})
	}
	// Keep the newest mark at or before at-keep (the oldest cutoff's
	// answer) and those after it.
	oldest := at.Add(-keep)
	drop := 0
	for drop+1 < len(w.marks) && !w.marks[drop+1].at.After(oldest) {
		drop++
	}
	w.marks = w.marks[drop:]
}

// indexAt is the last index the store had reached at cutoff, as far as
// the marks say: every row changed at or below it is at least as old as
// cutoff. 0 when no mark is that old.
func (w *gcWitness) indexAt(cutoff time.Time) uint64 {
	var index uint64
	for _, m := range w.marks {
		if m.at.After(cutoff) {
			break
		}
		index = m.index
	}
	return index
}
