package server

import (
	"sync"

	"github.com/berth-csi/berth/structs"
)

// maxClaimBatch bounds the claims of one raft entry.
const maxClaimBatch = 256

// claimBatcher coalesces the claim writes that arrive while one is being
// committed into the next raft entry (group commit): one entry and one
// memdb transaction for many claims, with no wait added when there is no
// queue. The FSM applies a batch in order, each claim as if alone, and
// answers each with its own error; a raft error answers the whole batch.
type claimBatcher struct {
	// write commits one batch: raftApply of a CSIVolumeClaimRequestType
	// entry (a test's fake otherwise).
	write func(*structs.CSIVolumeClaimBatchRequest) ([]error, uint64, error)

	mu      sync.Mutex
	queue   []*pendingClaim
	running bool // a goroutine is flushing the queue
}

type pendingClaim struct {
	req  structs.CSIVolumeClaimRequest
	done chan claimResult
}

// claimResult is one claim's answer: its own error, the entry's index,
// or the raft error of its whole batch.
type claimResult struct {
	err   error
	index uint64
}

// apply writes req through raft with whatever claims are queued with it,
// and returns its own result.
func (b *claimBatcher) apply(req structs.CSIVolumeClaimRequest) (uint64, error) {
	p := &pendingClaim{req: req, done: make(chan claimResult, 1)}
	b.mu.Lock()
	b.queue = append(b.queue, p)
	if !b.running {
		b.running = true
		go b.flush()
	}
	b.mu.Unlock()
	r := <-p.done
	return r.index, r.err
}

// flush writes the queue, up to maxClaimBatch claims an entry, until it is
// empty.
func (b *claimBatcher) flush() {
	for {
		b.mu.Lock()
		if len(b.queue) == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		n := min(len(b.queue), maxClaimBatch)
		batch := append([]*pendingClaim(nil), b.queue[:n]...)
		b.queue = append(b.queue[:0:0], b.queue[n:]...)
		b.mu.Unlock()

		req := &structs.CSIVolumeClaimBatchRequest{Claims: make([]structs.CSIVolumeClaimRequest, n)}
		for i, p := range batch {
			req.Claims[i] = p.req
		}
		errs, index, err := b.write(req)
		if err == nil && len(errs) != n {
			err = structs.NewError(structs.CodeInternal, "a claim batch of %d was answered with %d results", n, len(errs))
		}
		for i, p := range batch {
			if err != nil {
				p.done <- claimResult{err: err}
				continue
			}
			p.done <- claimResult{err: errs[i], index: index}
		}
	}
}
