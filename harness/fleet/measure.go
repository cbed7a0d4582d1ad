package fleet

import (
	"fmt"
	"sync"
	"time"

	"github.com/berth-csi/berth/harness/loadtest"
)

// Recorder keeps the latencies of one kind of call made while it
// records (Start to Stop). It is safe for concurrent use.
type Recorder struct {
	mu  sync.Mutex
	on  bool
	lat loadtest.Latencies
}

// Start drops what was recorded and starts recording.
func (r *Recorder) Start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.on, r.lat = true, nil
}

// Stop stops recording and returns what was recorded.
func (r *Recorder) Stop() loadtest.Latencies {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.on = false
	return r.lat
}

// Add records d, while recording.
func (r *Recorder) Add(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.on {
		r.lat = append(r.lat, d)
	}
}

// Spread renders the median, p99 and max of l, and how many there are.
func Spread(l loadtest.Latencies) string {
	if len(l) == 0 {
		return "none"
	}
	return fmt.Sprintf("p50 %s, p99 %s, max %s of %d", loadtest.Millis(l.Median()), loadtest.Millis(l.Quantile(0.99)),
		loadtest.Millis(l.Max()), len(l))
}

// Since are the times from at to each of times, as latencies.
func Since(at time.Time, times []time.Time) loadtest.Latencies {
	out := make(loadtest.Latencies, len(times))
	for i, t := range times {
		out[i] = t.Sub(at)
	}
	return out
}

// TTLRange is the least and the most TTL that nodes' last answers
// handed out.
func TTLRange(nodes []*Node) (lo, hi time.Duration) {
	for i, n := range nodes {
		ttl := n.TTL()
		if i == 0 || ttl < lo {
			lo = ttl
		}
		hi = max(hi, ttl)
	}
	return lo, hi
}

// Duration renders d in milliseconds under a second, in seconds from
// there on.
func Duration(d time.Duration) string {
	if d < time.Second && d > -time.Second {
		return loadtest.Millis(d)
	}
	return loadtest.Seconds(d)
}

// Percent renders a share (0.5) as a percentage.
func Percent(share float64) string { return fmt.Sprintf("%.1f %%", 100*share) }
