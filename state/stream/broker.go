package stream

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/berth-csi/berth/structs"
)

// DefaultSize is how many events a broker holds unless told otherwise:
// minutes of a busy cluster's changes, a few MiB (tens at most: see
// objectsPerEvent).
const DefaultSize = 4096

// objectsPerEvent bounds what the held payloads weigh, on average per
// event of the broker's size (see payloadObjects). A payload grows with
// the cluster (a plugin's every instance and allocation, a volume's every
// claim), so that a count of events alone would let a large cluster's
// ring hold gigabytes; there, fewer events are held.
const objectsPerEvent = 16

// answerShare: one answer carries at most a quarter of what the ring
// holds (whole entries), and an entry weighing more is not kept. An answer
// crosses the RPC as one message (rpc.MaxFrameSize, 16 MiB), and a
// payload's object is a few hundred bytes: the ring's whole 64 Ki objects
// would not fit.
const answerShare = 4

// Broker holds the latest events in a ring and serves them to subscribers
// by raft index. The zero value is not usable: use New.
type Broker struct {
	mu   sync.Mutex
	ring []structs.Event // len(ring) is the bound
	// start is the ring position of the oldest event held, n how many
	// are held, oldest first and in index order.
	start, n int
	// objects is what the held events' payloads weigh (payloadObjects),
	// at most maxObjects.
	objects, maxObjects int
	// floor: the events of every index above it are held (or none were
	// made). A subscriber may resume after any index >= floor.
	floor uint64
	// head is the last index published or restored.
	head uint64
	// restored: a restore moved the floor, which becomes final at the
	// next publish (the first index after the snapshot's, which the
	// FSM is not told).
	restored bool
	// gone says why the events at or below floor are gone.
	gone string
	// wake is closed and replaced by every Publish and Restore.
	wake chan struct{}
}

// New returns a broker that holds up to size events (DefaultSize when
// size <= 0).
func New(size int) *Broker {
	if size <= 0 {
		size = DefaultSize
	}
	return &Broker{ring: make([]structs.Event, size), maxObjects: size * objectsPerEvent, wake: make(chan struct{})}
}

// Publish adds the events of the write at index (any number, none
// included) and wakes the waiting subscribers. Indexes never go back:
// events of an index lower than one already published are dropped. When
// the ring is full (of events, or of their payloads' objects), the oldest
// index's events go, all of them; an index with more events than the ring
// holds, or weighing more than an answer may carry (answerShare), keeps
// none (its subscribers are told they are behind).
func (b *Broker) Publish(index uint64, events []structs.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	defer b.signal()
	if b.restored && index > 0 {
		b.restored = false
		b.floor = max(b.floor, index-1)
	}
	if index < b.head {
		return
	}
	b.head = index
	objects := 0
	for i := range events {
		objects += payloadObjects(&events[i])
	}
	if len(events) > len(b.ring) || objects > b.maxObjects/answerShare {
		b.start, b.n, b.objects = 0, 0, 0
		clear(b.ring)
		b.drop(index, "one write made more events than the server's event buffer holds, or larger ones")
		return
	}
	for b.n+len(events) > len(b.ring) || b.objects+objects > b.maxObjects {
		b.evictOldest()
	}
	for i := range events {
		b.ring[(b.start+b.n)%len(b.ring)] = events[i]
		b.n++
	}
	b.objects += objects
}

// payloadObjects is what an event's payload weighs, roughly in objects:
// one, plus the entries of the lists and maps that grow with the cluster.
func payloadObjects(e *structs.Event) int {
	p, n := &e.Payload, 1
	switch {
	case p.Node != nil:
		n += len(p.Node.CSIControllerPlugins) + len(p.Node.CSINodePlugins) + len(p.Node.Drivers) + len(p.Node.Events)
	case p.Job != nil:
		for _, tg := range p.Job.TaskGroups {
			if tg != nil {
				n += 1 + len(tg.Tasks) + len(tg.Volumes)
			}
		}
	case p.Allocation != nil:
		for _, ts := range p.Allocation.TaskStates {
			if ts != nil {
				n += 1 + len(ts.Events)
			}
		}
	case p.Volume != nil:
		v := p.Volume
		n += len(v.ReadClaims) + len(v.WriteClaims) + len(v.PastClaims) + len(v.ReadAllocs) + len(v.WriteAllocs) + len(v.Topologies)
	case p.Plugin != nil:
		n += len(p.Plugin.Controllers) + len(p.Plugin.Nodes) + len(p.Plugin.Allocations)
	}
	return n
}

// Restore tells the broker that the state was replaced by a snapshot's,
// latest being the last index its tables record. The change is not told
// as events: every subscriber up to the last index published is behind it
// at once, and must list again. Where the snapshot ends is known at the
// next publish (the entry after it), which moves the floor again; until
// then a subscriber from another server, ahead of this one, waits.
func (b *Broker) Restore(latest uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	clear(b.ring)
	b.start, b.n, b.objects = 0, 0, 0
	floor := latest
	if b.head > 0 {
		floor = max(floor, b.head+1) // past every index published here
	}
	b.head = max(b.head, latest)
	b.drop(floor, "a snapshot restore replaced the state, which events cannot tell")
	b.restored = true
	b.signal()
}

// Next returns the events after index that match (nil matches all), oldest
// first: at least one, at most limit (and a quarter of what the ring can
// hold: answerShare) unless the last index's events run over it (an
// index's events are never split), and the index to ask after
// next. When none is held it waits for one until ctx ends, then returns
// none and the index to ask after. Index 0 starts from the latest index
// (and answers 0 while a restore's floor is not known yet). An index
// older than the floor is a structs.CodeGone error that names the oldest
// index to resume from.
func (b *Broker) Next(ctx context.Context, index uint64, limit int, match func(*structs.Event) bool) ([]structs.Event, uint64, error) {
	fromNow, afterRestore := index == 0, false
	for {
		b.mu.Lock()
		if fromNow {
			// From now: the latest index; or, for a subscriber that came
			// while a restore's floor was not known, that floor, so that
			// it misses none of the events after the restore.
			switch {
			case b.restored:
				afterRestore = true
			case afterRestore:
				index, fromNow = b.floor, false
			default:
				index, fromNow = b.head, false
			}
		}
		if !fromNow {
			if index < b.floor {
				err := b.goneError(index)
				b.mu.Unlock()
				return nil, 0, err
			}
			if !b.restored && index < b.head {
				out, next := b.collect(index, limit, match)
				if len(out) > 0 {
					b.mu.Unlock()
					return out, next, nil
				}
				index = next
			}
		}
		wake := b.wake
		b.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, index, nil
		}
	}
}

// collect returns the matching events after index (at most limit, and
// what an answer may weigh, but whole indexes) and the index to ask after
// next. b.mu is held.
func (b *Broker) collect(index uint64, limit int, match func(*structs.Event) bool) ([]structs.Event, uint64) {
	limit = max(limit, 1)
	first := sort.Search(b.n, func(i int) bool { return b.at(i).Index > index })
	var out []structs.Event
	last, objects := index, 0
	for i := first; i < b.n; i++ {
		e := b.at(i)
		if (len(out) >= limit || objects >= b.maxObjects/answerShare) && e.Index != last {
			return out, last
		}
		last = e.Index
		if match == nil || match(e) {
			out = append(out, *e)
			objects += payloadObjects(e)
		}
	}
	return out, b.head
}

// at is the i-th event held, oldest first. b.mu is held.
func (b *Broker) at(i int) *structs.Event { return &b.ring[(b.start+i)%len(b.ring)] }

// evictOldest drops the events of the oldest index held. b.mu is held.
func (b *Broker) evictOldest() {
	index := b.at(0).Index
	for b.n > 0 && b.at(0).Index == index {
		b.objects -= payloadObjects(b.at(0))
		*b.at(0) = structs.Event{} // let the payload go
		b.start = (b.start + 1) % len(b.ring)
		b.n--
	}
	b.drop(index, "the server's event buffer dropped them (it holds the latest events only)")
}

// drop records that the events up to index are gone, and why. b.mu is
// held.
func (b *Broker) drop(index uint64, why string) {
	if index >= b.floor {
		b.floor, b.gone = index, why
	}
}

// goneError is the refusal of a subscriber behind the floor. b.mu is held.
// A list's index is that of the last change of its own tables, which may
// well be below the floor: resuming after it alone would be refused again.
func (b *Broker) goneError(index uint64) error {
	resume := fmt.Sprintf("the oldest index to resume from is %d", b.floor)
	after := fmt.Sprintf("index %d, or after the lists' X-Berth-Index if higher", b.floor)
	if b.restored {
		resume = "the oldest index to resume from will be known at the next change"
		after = "the lists' X-Berth-Index (if that is refused too, after the index the refusal names)"
	}
	return structs.NewError(structs.CodeGone,
		"event stream: the events after index %d are gone: %s; %s. List the objects again (GET /v1/volumes, /v1/nodes, ...), "+
			"then resume the stream after %s", index, b.gone, resume, after)
}

// signal wakes every waiter. b.mu is held.
func (b *Broker) signal() {
	close(b.wake)
	b.wake = make(chan struct{})
}
