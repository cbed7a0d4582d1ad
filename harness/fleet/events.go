package fleet

import (
	"context"
	"errors"
	"maps"
	"sync"
	"time"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/structs"
)

// Events follows the cluster's event stream (topics Node and CSIVolume)
// on one server and records, from when it starts, every node the
// servers marked down and every claim freed, each with the time the
// servers stamped on it. A stream that ends is resumed after the last
// index read, and counted; one that ended because the server's buffer
// dropped events the reader had not read (Gone) is resumed from then on,
// those events lost to the records (Resumed says so).
type Events struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	downs   map[string]time.Time // node ID -> when the servers marked it down
	freed   map[string]Freed     // alloc ID -> its claim's release
	resumed int
	lost    bool // events were dropped unread (Gone)
	lastErr error
}

// WatchEvents starts following the events after index (0: from now) on
// cl's server. Stop ends it.
func WatchEvents(cl *api.Client, index uint64) (*Events, error) {
	ctx, cancel := context.WithCancel(context.Background())
	topics := []string{string(structs.TopicNode), string(structs.TopicCSIVolume)}
	ch, err := cl.Events().Stream(ctx, topics, index, nil)
	if err != nil {
		cancel()
		return nil, err
	}
	e := &Events{cancel: cancel, done: make(chan struct{}), downs: map[string]time.Time{}, freed: map[string]Freed{}}
	go func() {
		defer close(e.done)
		var last uint64
		for {
			for item := range ch {
				if item.Err != nil {
					e.note(item.Err)
					continue
				}
				last = item.Event.Index
				e.record(item.Event)
			}
			if ctx.Err() != nil {
				return
			}
			// The stream ended on its own: resume after the last event,
			// or from now when the server no longer holds the events
			// after it (Gone: they are lost to the records).
			for {
				e.mu.Lock()
				e.resumed++
				if errors.Is(e.lastErr, structs.ErrGone) {
					last, e.lost = 0, true
				}
				e.mu.Unlock()
				if ch, err = cl.Events().Stream(ctx, topics, last, nil); err == nil {
					break
				}
				e.note(err)
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Second):
				}
			}
		}
	}()
	return e, nil
}

func (e *Events) note(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lastErr = err
}

// record keeps a node's mark-down and a claim's freeing.
func (e *Events) record(ev structs.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case ev.Type == structs.EventNodeStatusUpdated && ev.Payload.Node != nil && ev.Payload.Node.Status == structs.NodeStatusDown:
		n := ev.Payload.Node
		if _, seen := e.downs[n.ID]; !seen {
			e.downs[n.ID] = time.Unix(0, n.StatusUpdatedAt)
		}
	case ev.Type == structs.EventClaimFreed && ev.Payload.Claim != nil:
		c := ev.Payload.Claim
		f := Freed{VolumeID: c.VolumeID, NodeID: c.NodeID}
		f.Released, _ = c.Timeline.At(structs.StepReleaseStarted)
		var ok bool
		if f.At, ok = c.Timeline.At(structs.StepFreed); !ok {
			f.At = time.Now() // no stamp: when it was read
		}
		e.freed[c.AllocID] = f
	}
}

// Freed is a claim that the servers freed: its volume and node, when its
// release started and when it was freed, as the servers stamped them.
type Freed struct {
	VolumeID, NodeID string
	Released, At     time.Time
}

// Downs are the nodes marked down so far, and when.
func (e *Events) Downs() map[string]time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return maps.Clone(e.downs)
}

// Freed are the claims freed so far, by allocation.
func (e *Events) Freed() map[string]Freed {
	e.mu.Lock()
	defer e.mu.Unlock()
	return maps.Clone(e.freed)
}

// Resumed is how many times the stream ended and was resumed, whether
// events were lost to the records meanwhile, and the last error it ended
// with.
func (e *Events) Resumed() (int, bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.resumed, e.lost, e.lastErr
}

// Stop ends the stream and waits for its reader.
func (e *Events) Stop() {
	e.cancel()
	<-e.done
}
