package loadtest

import (
	"errors"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// errRanOut ends a run early: its pool of storage volumes is empty. The
// run's rate stands (operations over the time they took); the table says
// that it ran out.
var errRanOut = errors.New("loadtest: the pool of storage volumes ran out")

// Throughput is what one run did: Ops operations that succeeded, by
// Callers concurrent callers, in Elapsed (from the start until the last
// call in flight at the deadline returned).
type Throughput struct {
	Callers int
	Ops     int
	Elapsed time.Duration
	RanOut  bool // the pool ran out before the deadline
}

// PerSecond is the run's rate.
func (r Throughput) PerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Ops) / r.Elapsed.Seconds()
}

// runFor calls op on callers goroutines, each calling it again as soon as
// it returns, until d has passed. op gets its caller's number and that
// caller's count of calls so far. errRanOut from op ends the run early;
// any other error ends it too, and is returned.
func runFor(callers int, d time.Duration, op func(caller, n int) error) (Throughput, error) {
	var (
		ops    atomic.Int64
		ranOut atomic.Bool
		stop   atomic.Bool
		once   sync.Once
		first  error
		wg     sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(d)
	for w := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; !stop.Load() && time.Now().Before(deadline); n++ {
				switch err := op(w, n); {
				case err == nil:
					ops.Add(1)
				case errors.Is(err, errRanOut):
					ranOut.Store(true)
					stop.Store(true)
				default:
					once.Do(func() { first = err })
					stop.Store(true)
				}
			}
		}()
	}
	wg.Wait()
	return Throughput{Callers: callers, Ops: int(ops.Load()), Elapsed: time.Since(start), RanOut: ranOut.Load()}, first
}

// runCount calls op(i) for every i in [0, n), on callers goroutines, and
// returns how long it took. The first error stops the calls not yet made
// and is returned.
func runCount(callers, n int, op func(i int) error) (time.Duration, error) {
	var (
		next  atomic.Int64
		stop  atomic.Bool
		once  sync.Once
		first error
		wg    sync.WaitGroup
	)
	start := time.Now()
	for range min(callers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := op(i); err != nil {
					once.Do(func() { first = err })
					stop.Store(true)
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start), first
}

// Latencies are the times of repeated calls of one kind.
type Latencies []time.Duration

// Median is the middle time (the mean of the two middle ones for an even
// count); 0 when there are none.
func (l Latencies) Median() time.Duration {
	if len(l) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(l))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Max is the longest time; 0 when there are none.
func (l Latencies) Max() time.Duration {
	if len(l) == 0 {
		return 0
	}
	return slices.Max(l)
}

// Quantile is the time that a fraction q of the calls took at most (the
// nearest rank: P90 of 10 is the 9th); 0 when there are none.
func (l Latencies) Quantile(q float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(l))
	rank := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(rank, 0), len(s)-1)]
}
