package server

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"

	"github.com/berth-csi/berth/structs"
)

// TestBatcher_CoalescesWhileOneIsInFlight: the claims that arrive
// while a batch is being written go out together in the next one (at most
// maxBatch an entry), each caller gets its own claim's result, and a
// raft error answers the whole batch it hit.
func TestBatcher_CoalescesWhileOneIsInFlight(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var sizes []int
	index := uint64(0)
	b := &batcher[structs.CSIVolumeClaimRequest]{write: func(claims []structs.CSIVolumeClaimRequest) ([]error, uint64, error) {
		mu.Lock()
		sizes = append(sizes, len(claims))
		first := len(sizes) == 1
		index++
		idx := index
		mu.Unlock()
		if first {
			<-release // the first entry is slow to commit
		}
		if claims[0].VolumeID == "raft-fails" {
			return nil, 0, errors.New("leadership lost")
		}
		errs := make([]error, len(claims))
		for i, c := range claims {
			if c.AllocationID == "refused" {
				errs[i] = structs.NewError(structs.CodeConflict, "volume %q is held", c.VolumeID)
			}
		}
		return errs, idx, nil
	}}

	type result struct {
		index uint64
		err   error
	}
	firstDone := make(chan result, 1)
	go func() {
		idx, err := b.apply(structs.CSIVolumeClaimRequest{VolumeID: "v0", AllocationID: "a0"})
		firstDone <- result{idx, err}
	}()
	waitQueued := func(n int) {
		for {
			mu.Lock()
			started := len(sizes) > 0
			mu.Unlock()
			b.mu.Lock()
			queued := len(b.queue)
			b.mu.Unlock()
			if started && queued >= n {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitQueued(0)

	n := maxBatch + 10
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			alloc := fmt.Sprintf("a%d", i+1)
			if i == 3 {
				alloc = "refused"
			}
			idx, err := b.apply(structs.CSIVolumeClaimRequest{VolumeID: fmt.Sprintf("v%d", i+1), AllocationID: alloc})
			results[i] = result{idx, err}
		}()
	}
	waitQueued(n)
	close(release)
	wg.Wait()
	r := <-firstDone
	must.NoError(t, r.err)
	must.EqOp(t, uint64(1), r.index)

	must.Eq(t, []int{1, maxBatch, 10}, sizes, must.Sprint("one entry for the first, then full batches of what queued behind it"))
	for i, r := range results {
		if i == 3 {
			must.ErrorIs(t, r.err, structs.ErrConflict, must.Sprint("a claim's own refusal reaches its caller alone"))
			continue
		}
		must.NoError(t, r.err)
		must.True(t, r.index == 2 || r.index == 3)
	}

	_, err := b.apply(structs.CSIVolumeClaimRequest{VolumeID: "raft-fails", AllocationID: "x"})
	must.ErrorContains(t, err, "leadership lost")
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return !b.running
	}), wait.Timeout(10*time.Second), wait.Gap(time.Millisecond)), must.Sprint("the flusher stops when the queue is empty"))
}
