package state

import (
	"reflect"

	"github.com/hashicorp/go-memdb"

	"github.com/berth-csi/berth/structs"
)

// Change events: every write that goes through writeTxn has memdb track
// its changes, and its commit turns them into events of the write's raft
// index, handed to the store's EventSink (the FSM's event broker). The
// nodes, jobs, allocs, csi_volumes and csi_plugins tables make events;
// the index, job_versions, ACL and keyring tables make none. A snapshot
// restore makes none either: the sink is told separately (fsm).

// EventSink receives the events of each committed write, in raft index
// order, on the writer's goroutine: it must not block. events may be
// empty (a write that changed no table with events). The events and their
// payloads are shared: never changed after Publish.
type EventSink interface {
	Publish(index uint64, events []structs.Event)
}

// SetEventSink makes every later write publish its events to sink (nil:
// none). Call it from the writer's goroutine, between writes (the FSM
// does, before the store's first write).
func (s *StateStore) SetEventSink(sink EventSink) { s.events = sink }

// writeTxn begins a write at a raft index: a memdb write transaction that,
// when the store has an EventSink, tracks its changes and publishes them
// once it commits (an aborted one publishes nothing). Every write that
// changes a table with events begins with it.
func (s *StateStore) writeTxn(index uint64) *memdb.Txn {
	txn := s.db.Txn(true)
	sink := s.events
	if sink == nil {
		return txn
	}
	txn.TrackChanges()
	// Deferred functions run once Commit has swapped the new tree in;
	// Changes stays readable after Commit. The store's only writer is
	// the FSM's apply goroutine, so a read now sees this write's state.
	txn.Defer(func() { sink.Publish(index, changeEvents(s.db.Txn(false), index, txn.Changes())) })
	return txn
}

// changeEvents turns a committed transaction's changes into events, in
// the order of the changes; read is the state after it, which volume and
// plugin payloads are joined with, as a read of them would be.
func changeEvents(read *memdb.Txn, index uint64, changes memdb.Changes) []structs.Event {
	var out []structs.Event
	join := &eventJoin{read: read}
	for _, c := range changes {
		switch c.Table {
		case TableNodes:
			out = append(out, nodeEvent(index, c))
		case TableJobs:
			out = append(out, jobEvent(index, c))
		case TableAllocs:
			out = append(out, allocEvent(index, c))
		case TableCSIVolumes:
			out = append(out, volumeEvents(join, index, c)...)
		case TableCSIPlugins:
			out = append(out, pluginEvent(index, c))
		}
	}
	return out
}

// eventJoin is the state after a commit (read), with each plugin that its
// events read denormalized once: a key rotation or a batch register
// rewrites N volumes of one plugin in one commit, on every server inside
// the FSM apply, and each volume's payload needs only its plugin's counts,
// not N copies of the plugin with a node read per instance (as
// server/metrics_state.go joins volumes for a scrape). Used on the
// writer's goroutine only, for one commit; the plugins it hands out are
// shared by that commit's payloads and never changed.
type eventJoin struct {
	read    *memdb.Txn
	plugins map[string]joinedPlugin // by ID, as read holds it
}

type joinedPlugin struct {
	row *structs.CSIPlugin // as stored, with its counts; nil when none
	err error
}

// plugin returns the plugin id as read holds it, or nil when there is
// none.
func (j *eventJoin) plugin(id string) joinedPlugin {
	if p, ok := j.plugins[id]; ok {
		return p
	}
	var p joinedPlugin
	p.row, p.err = pluginByIDTxn(j.read, nil, id)
	if j.plugins == nil {
		j.plugins = map[string]joinedPlugin{}
	}
	j.plugins[id] = p
	return p
}

// beforeAfter returns a change's rows as T; nil for a side that is none.
func beforeAfter[T any](c memdb.Change) (before, after *T) {
	before, _ = c.Before.(*T)
	after, _ = c.After.(*T)
	return before, after
}

func nodeEvent(index uint64, c memdb.Change) structs.Event {
	before, after := beforeAfter[structs.Node](c)
	ev := structs.Event{Topic: structs.TopicNode, Index: index}
	switch {
	case after == nil:
		ev.Type, ev.Key, ev.Payload.Node = structs.EventNodeDeregistered, before.ID, before.Sanitized()
		return ev
	case before == nil:
		ev.Type = structs.EventNodeRegistered
	case before.Status != after.Status:
		ev.Type = structs.EventNodeStatusUpdated
	case !reflect.DeepEqual(before.DrainStrategy, after.DrainStrategy):
		ev.Type = structs.EventNodeDrainUpdated
	case before.SchedulingEligibility != after.SchedulingEligibility:
		ev.Type = structs.EventNodeEligibilityUpdated
	default:
		ev.Type = structs.EventNodeUpdated
	}
	ev.Key, ev.Payload.Node = after.ID, after.Sanitized()
	return ev
}

func jobEvent(index uint64, c memdb.Change) structs.Event {
	before, after := beforeAfter[structs.Job](c)
	ev := structs.Event{Topic: structs.TopicJob, Index: index}
	job := after
	switch {
	case after == nil:
		ev.Type, job = structs.EventJobDeregistered, before
	case after.Stop && (before == nil || !before.Stop):
		ev.Type = structs.EventJobStopped
	default:
		ev.Type = structs.EventJobRegistered
	}
	ev.Key, ev.Namespace, ev.Payload.Job = job.ID, job.Namespace, job
	return ev
}

func allocEvent(index uint64, c memdb.Change) structs.Event {
	before, after := beforeAfter[structs.Allocation](c)
	ev := structs.Event{Topic: structs.TopicAllocation, Index: index}
	alloc := after
	switch {
	case after == nil:
		ev.Type, alloc = structs.EventAllocationDeleted, before
	case before == nil:
		ev.Type = structs.EventAllocationCreated
	default:
		ev.Type = structs.EventAllocationUpdated
	}
	// Without its job, which the Job topic carries: an allocation's
	// every client update would repeat it. The row is shared and never
	// changed, so a shallow copy is enough.
	a := *alloc
	a.Job = nil
	ev.Key, ev.Namespace, ev.Payload.Allocation = a.ID, a.Namespace, &a
	return ev
}

func pluginEvent(index uint64, c memdb.Change) structs.Event {
	before, after := beforeAfter[structs.CSIPlugin](c)
	ev := structs.Event{Topic: structs.TopicCSIPlugin, Type: structs.EventPluginUpdated, Index: index}
	plug := after
	if after == nil {
		ev.Type, plug = structs.EventPluginDeleted, before
	}
	// The row, with its health counts: its instances are the node
	// events' (GET joins them in), so an event's size does not grow with
	// the fleet.
	ev.Key, ev.Payload.Plugin = plug.ID, plug
	return ev
}
