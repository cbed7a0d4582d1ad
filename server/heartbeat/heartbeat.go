package heartbeat

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/berth-csi/berth/internal/clock"
	"github.com/berth-csi/berth/internal/telemetry"
	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
)

// Grace is added to the TTL when a new leader starts its timers, so
// clients have time to find it before they are marked down.
const Grace = 5 * time.Second

// Config is what the timers need from the server that runs them.
type Config struct {
	// Clock is the timers' only source of time (clock.System for the
	// wall clock).
	Clock clock.Clock
	// TTL is the least heartbeat TTL the clients are told (see
	// MaxPerSecond): Arm's timers run the fleet's TTL plus Grace, a failed
	// mark-down is tried again one TTL on, and the log line and the node
	// event name it.
	TTL time.Duration
	// MaxPerSecond caps the heartbeats the leader handles per second, as
	// Nomad's max_heartbeats_per_second does: once the live nodes would
	// send more at TTL (each structs.HeartbeatsPerTTL a TTL), the TTL
	// given (FleetTTL) grows with them (ScaledTTL). 0 never grows it.
	MaxPerSecond float64
	// Grace is added to TTL by Arm (Grace, for the server).
	Grace time.Duration
	// Logger gets the mark-downs and their failures.
	Logger hclog.Logger
	// State is the current state store (a snapshot restore replaces it).
	State func() *state.StateStore
	// MarkDown writes a node's status down through raft.
	MarkDown func(*structs.NodeUpdateStatusRequest) error
	// Leading reports whether the server still runs and leads: a failed
	// mark-down is tried again only then.
	Leading func() bool
}

func (c *Config) validate() error {
	var errs []error
	if c.Clock == nil || c.Logger == nil || c.State == nil || c.MarkDown == nil || c.Leading == nil {
		errs = append(errs, errors.New("heartbeat: Clock, Logger, State, MarkDown and Leading are required"))
	}
	if c.MaxPerSecond < 0 {
		errs = append(errs, fmt.Errorf("heartbeat: MaxPerSecond must not be negative, got %g", c.MaxPerSecond))
	}
	if c.TTL <= 0 || c.Grace < 0 {
		errs = append(errs, fmt.Errorf("heartbeat: TTL must be positive and Grace not negative, got %s and %s", c.TTL, c.Grace))
	}
	return errors.Join(errs...)
}

// Timers are the leader's per-node heartbeat timers.
type Timers struct {
	cfg Config

	mu      sync.Mutex
	enabled bool
	byNode  map[string]*timer
	queue   queue         // the timers by deadline, earliest first
	wake    chan struct{} // buffered, one pending: the earliest deadline moved up
	stop    chan struct{} // closed by Disable; nil while off
	done    chan struct{} // closed when the loop of stop has returned
	// unarmed is the live nodes of the state while the timers are off
	// (a new leader before Arm), counted once; -1 until then.
	unarmed int
}

// New returns the timers, off.
func New(cfg Config) (*Timers, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Timers{cfg: cfg, byNode: map[string]*timer{}, wake: make(chan struct{}, 1), unarmed: -1}, nil
}

// Reset restarts a node's timer for ttl; a no-op off the leader.
func (h *Timers) Reset(nodeID string, ttl time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.enabled {
		return
	}
	h.setLocked(nodeID, h.cfg.Clock.Now().Add(ttl))
}

// Clear stops a node's timer (the node was deregistered or collected).
func (h *Timers) Clear(nodeID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t, ok := h.byNode[nodeID]; ok {
		h.queue.remove(t)
		delete(h.byNode, nodeID)
	}
}

// Arm replaces the timers by one per node of the current state that is
// not down, for TTL plus Grace, as a new leader starts them. With start
// it turns the timers on: the leader calls it so once it serves
// consistent reads. Without, it is a no-op while they are off (off the
// leader): a snapshot restore re-arms the leader's for the restored
// nodes. A failed read of the state leaves the timers as they were (on,
// with start).
func (h *Timers) Arm(start bool) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.unarmed = -1
	if start && !h.enabled {
		h.enabled = true
		h.stop, h.done = make(chan struct{}), make(chan struct{})
		go h.run(h.stop, h.done)
	}
	if !h.enabled {
		return nil
	}
	iter, err := h.cfg.State().Nodes(nil)
	if err != nil {
		return err
	}
	h.clearLocked()
	var live []string
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if n := raw.(*structs.Node); n.Status != structs.NodeStatusDown {
			live = append(live, n.ID)
		}
	}
	// The fleet's TTL, as the clients were told it, plus the grace.
	at := h.cfg.Clock.Now().Add(ScaledTTL(h.cfg.TTL, h.cfg.MaxPerSecond, len(live)) + h.cfg.Grace)
	for _, id := range live {
		h.setLocked(id, at)
	}
	return nil
}

// FleetTTL is the TTL to give a client now: TTL, or longer when the nodes
// with a timer would heartbeat more than MaxPerSecond times a second
// (ScaledTTL).
func (h *Timers) FleetTTL() time.Duration { return h.FleetTTLFor("") }

// FleetTTLFor is FleetTTL for node nodeID, counted among the nodes even
// before its timer is set: a node registering is told the TTL of the
// fleet it joins, as its next heartbeat would be.
//
// Off (a new leader before Arm, which will give every live node the
// fleet's TTL plus Grace), it is the TTL of the state's live nodes and
// one more, counted once: not the floor, which a client would be told
// while the timers wait the fleet's TTL.
func (h *Timers) FleetTTLFor(nodeID string) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.enabled {
		if h.unarmed < 0 {
			h.unarmed = h.liveNodesLocked()
		}
		return ScaledTTL(h.cfg.TTL, h.cfg.MaxPerSecond, h.unarmed+1)
	}
	n := len(h.byNode)
	if _, ok := h.byNode[nodeID]; nodeID != "" && !ok {
		n++
	}
	return ScaledTTL(h.cfg.TTL, h.cfg.MaxPerSecond, n)
}

// liveNodesLocked counts the state's nodes that are not down; 0 when the
// state cannot be read (the floor's TTL: the shorter, and safe).
func (h *Timers) liveNodesLocked() int {
	iter, err := h.cfg.State().Nodes(nil)
	if err != nil {
		return 0
	}
	n := 0
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if raw.(*structs.Node).Status != structs.NodeStatusDown {
			n++
		}
	}
	return n
}

// ScaledTTL is the heartbeat TTL for nodes live nodes: floor, or
// longer when the fleet would heartbeat more than maxPerSecond times a
// second at the floor. Each client heartbeats structs.HeartbeatsPerTTL
// times a TTL on average, so the TTL is that many seconds per
// maxPerSecond nodes. maxPerSecond 0 is no cap.
func ScaledTTL(floor time.Duration, maxPerSecond float64, nodes int) time.Duration {
	if maxPerSecond <= 0 {
		return floor
	}
	secs := float64(nodes) * structs.HeartbeatsPerTTL / maxPerSecond
	return max(floor, time.Duration(secs*float64(time.Second)).Round(time.Millisecond))
}

// Disable stops every timer when leadership ends.
func (h *Timers) Disable() {
	h.mu.Lock()
	h.enabled = false
	h.unarmed = -1
	h.clearLocked()
	stop, done := h.stop, h.done
	h.stop, h.done = nil, nil
	h.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

// Expire does now what a node's timer does when it fires: it stops the
// timer and marks the node down (a no-op off the leader, or for a node
// that is down or gone).
func (h *Timers) Expire(nodeID string) {
	h.mu.Lock()
	if !h.enabled {
		h.mu.Unlock()
		return
	}
	if t, ok := h.byNode[nodeID]; ok {
		h.queue.remove(t)
		delete(h.byNode, nodeID)
	}
	h.mu.Unlock()
	h.markDown(nodeID)
}

// Armed lists the nodes with a timer running, and when each fires.
func (h *Timers) Armed() map[string]time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]time.Time, len(h.byNode))
	for id, t := range h.byNode {
		out[id] = t.at
	}
	return out
}

// setLocked starts or moves a node's timer to at; h.mu is held.
func (h *Timers) setLocked(nodeID string, at time.Time) {
	t, ok := h.byNode[nodeID]
	if ok {
		t.at = at
		h.queue.fix(t)
	} else {
		t = &timer{node: nodeID, at: at}
		h.byNode[nodeID] = t
		h.queue.push(t)
	}
	if t.index == 0 {
		select {
		case h.wake <- struct{}{}:
		default:
		}
	}
}

// clearLocked stops every timer; h.mu is held.
func (h *Timers) clearLocked() {
	clear(h.byNode)
	clear(h.queue)
	h.queue = h.queue[:0]
}

// run waits for the earliest deadline until stop closes, and starts the
// mark-down of each node whose deadline has passed.
func (h *Timers) run(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for {
		h.mu.Lock()
		var fire <-chan time.Time
		if len(h.queue) > 0 {
			fire = h.cfg.Clock.At(h.queue[0].at)
		}
		h.mu.Unlock()
		select {
		case <-stop:
			return
		case <-h.wake:
		case <-fire:
			h.fireDue()
		}
	}
}

// fireDue takes the timers whose deadline has passed off the heap and
// marks their nodes down, each on a goroutine of its own.
func (h *Timers) fireDue() {
	now := h.cfg.Clock.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	for len(h.queue) > 0 && !h.queue[0].at.After(now) {
		t := h.queue.pop()
		delete(h.byNode, t.node)
		go h.fired(t.node)
	}
}

// fired marks a node down once its timer has fired, unless the timers
// were turned off, or the node's heartbeat re-armed its timer, meanwhile.
func (h *Timers) fired(nodeID string) {
	h.mu.Lock()
	_, rearmed := h.byNode[nodeID] // a heartbeat came in since it fired
	on := h.enabled && !rearmed
	h.mu.Unlock()
	if on {
		h.markDown(nodeID)
	}
}

// markDown marks a node down: in the same raft write its plugin
// instances stop counting as healthy and its volumes become
// unschedulable.
func (h *Timers) markDown(nodeID string) {
	node, err := h.cfg.State().NodeByID(nil, nodeID)
	if err != nil || node == nil || node.Status == structs.NodeStatusDown {
		return
	}
	ttl := h.cfg.TTL
	h.cfg.Logger.Warn("node missed its heartbeat; marking it down", "node_id", nodeID, "ttl", ttl)
	req := &structs.NodeUpdateStatusRequest{
		NodeID:    nodeID,
		Status:    structs.NodeStatusDown,
		UpdatedAt: h.cfg.Clock.Now().UnixNano(),
		Event: &structs.NodeEvent{
			Subsystem: "Heartbeat",
			Message:   fmt.Sprintf("node missed its heartbeat (TTL %s); marked down", ttl),
			Timestamp: h.cfg.Clock.Now(),
		},
	}
	if err := h.cfg.MarkDown(req); err != nil {
		h.cfg.Logger.Error("mark node down", "node_id", nodeID, "error", err)
		if h.cfg.Leading() {
			// Try again on the next TTL rather than leave the node up.
			h.Reset(nodeID, ttl)
		}
		return
	}
	// Counted once marked down: a failed write tried again on the next
	// TTL is still one miss.
	telemetry.NodeHeartbeatMisses.Inc()
}
