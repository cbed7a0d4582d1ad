package command

import (
	"context"
	"strconv"
	"time"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/structs"
)

// blockingReads calls read with the index of its last answer (0 at first)
// until read says it is done, and returns read's exit status. When an
// answer's index did not move past the last one (a blocking query that
// timed out, or a server that answers at once), it calls pause before the
// next read, so that it never spins on a server.
func blockingReads(ctx context.Context, pause func(context.Context), read func(index uint64) (next uint64, code int, done bool)) int {
	var index uint64
	for {
		next, code, done := read(index)
		if done {
			return code
		}
		if next <= index {
			pause(ctx)
		}
		index = next
	}
}

// pauseRetry waits jobFollowRetry, or until ctx ends.
func pauseRetry(ctx context.Context) {
	t := time.NewTimer(jobFollowRetry)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// watchJobAllocs reads the job's allocations by blocking queries, each
// waiting up to jobProgressEvery, and hands every answer to step until
// step says it is done, with the exit status. goesOn says what goes on
// when the user stops following ("it stays registered").
func (m *meta) watchJobAllocs(ctx context.Context, c *api.Client, jobID, goesOn string,
	step func(allocs []*structs.AllocListStub) (code int, done bool)) int {
	return blockingReads(ctx, pauseRetry, func(index uint64) (uint64, int, bool) {
		allocs, qm, err := c.Jobs().Allocations(jobID, &api.QueryOptions{WaitIndex: index, WaitTime: jobProgressEvery})
		if err != nil {
			if ctx.Err() != nil {
				return 0, m.fail("stopped following job %q; %s: see \"berth job status %s\"", jobID, goesOn, jobID), true
			}
			return 0, m.fail("%s", apiError("follow job "+strconv.Quote(jobID), err)), true
		}
		code, done := step(allocs)
		return qm.LastIndex, code, done
	})
}

// clientTerminal reports whether an allocation's client status says its
// tasks are over for good: complete, failed or lost.
func clientTerminal(status string) bool {
	switch status {
	case structs.AllocClientStatusComplete, structs.AllocClientStatusFailed, structs.AllocClientStatusLost:
		return true
	}
	return false
}

// isTerminal reports whether an allocation has stopped or will not run
// again.
func isTerminal(a *structs.AllocListStub) bool {
	return clientTerminal(a.ClientStatus) || a.DesiredStatus == structs.AllocDesiredStatusStop
}
