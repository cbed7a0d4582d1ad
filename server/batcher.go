package server

import (
	"sync"

	"github.com/berth-csi/berth/structs"
)

// maxBatch bounds the requests of one raft entry.
const maxBatch = 256

// batcher coalesces the writes of one kind that arrive while one is being
// committed into the next raft entry (group commit): one entry and one
// FSM apply for many requests, with no wait added when there is no queue.
// The FSM applies a batch in order, each request as if alone, and answers
// each with its own error; a raft error answers the whole batch.
type batcher[R any] struct {
	// write commits one batch (raftApply of the kind's batch entry; a
	// test's fake otherwise) and answers one error per request.
	write func([]R) ([]error, uint64, error)

	mu      sync.Mutex
	queue   []*pending[R]
	running bool // a goroutine is flushing the queue
}

type pending[R any] struct {
	req  R
	done chan result
}

// result is one request's answer: its own error and the entry's index,
// or the raft error of its whole batch.
type result struct {
	err   error
	index uint64
}

// apply writes req through raft with whatever requests are queued with
// it, and returns its own result.
func (b *batcher[R]) apply(req R) (uint64, error) {
	p := &pending[R]{req: req, done: make(chan result, 1)}
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

// flush writes the queue, up to maxBatch requests an entry, until it is
// empty.
func (b *batcher[R]) flush() {
	for {
		b.mu.Lock()
		if len(b.queue) == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		n := min(len(b.queue), maxBatch)
		batch := append([]*pending[R](nil), b.queue[:n]...)
		b.queue = append(b.queue[:0:0], b.queue[n:]...)
		b.mu.Unlock()

		reqs := make([]R, n)
		for i, p := range batch {
			reqs[i] = p.req
		}
		errs, index, err := b.write(reqs)
		if err == nil && len(errs) != n {
			err = structs.NewError(structs.CodeInternal, "a batch of %d writes was answered with %d results", n, len(errs))
		}
		for i, p := range batch {
			if err != nil {
				p.done <- result{err: err}
				continue
			}
			p.done <- result{err: errs[i], index: index}
		}
	}
}

// setupBatchers wires the coalesced writes: claims (CSIVolumeClaim
// entries, which the FSM always applied as batches), volume registers
// (CSIVolumeRegisterBatch), and the two writes every client sends often:
// its allocs' reports (AllocClientUpdateBatch) and its plugins'
// fingerprint deltas (NodeFingerprintBatch).
func (s *Server) setupBatchers() {
	s.claims.write = func(reqs []structs.CSIVolumeClaimRequest) ([]error, uint64, error) {
		return raftApply[[]error](s, structs.CSIVolumeClaimRequestType, &structs.CSIVolumeClaimBatchRequest{Claims: reqs})
	}
	s.registers.write = func(reqs []structs.CSIVolumeRegisterRequest) ([]error, uint64, error) {
		return raftApply[[]error](s, structs.CSIVolumeRegisterBatchRequestType, &structs.CSIVolumeRegisterBatchRequest{Registers: reqs})
	}
	s.allocUpdates.write = func(reqs []structs.AllocClientUpdateRequest) ([]error, uint64, error) {
		return raftApply[[]error](s, structs.AllocClientUpdateBatchRequestType, &structs.AllocClientUpdateBatchRequest{Updates: reqs})
	}
	s.fingerprints.write = func(reqs []structs.NodeFingerprintRequest) ([]error, uint64, error) {
		return raftApply[[]error](s, structs.NodeFingerprintBatchRequestType, &structs.NodeFingerprintBatchRequest{Fingerprints: reqs})
	}
}
