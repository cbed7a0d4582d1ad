package client

import (
	"context"
	"errors"
	"reflect"
	"sync"

	"github.com/berth-csi/berth/client/pluginmanager"
	"github.com/berth-csi/berth/structs"
)

// nodeUpdater turns plugin fingerprint changes into node updates. Changes
// gather for UpdateCoalesce, then one Node.UpdateFingerprint carries every
// plugin that changed since the servers last acknowledged, and the events
// the changes made. A change that returns to what the servers already have
// is not sent at all.
//
// A change of a task driver's health (driverChanged) is sent as a
// registration of the whole node (Node.Register), before the plugin
// deltas and events of the same send: driver health changes seldom, and
// the registration is the one write that takes a node's drivers, so the
// servers need nothing new. It goes from this one send loop, never in
// flight next to a plugin delta of the same client.
type nodeUpdater struct {
	c    *Client
	kick chan struct{}

	mu         sync.Mutex
	seq        uint64
	acked      map[string]*structs.NodePluginUpdate // what the servers have
	pending    map[string]pendingUpdate             // changed since, by plugin
	events     []pendingEvent
	registered bool // the servers know the node; deltas may be sent

	// drivers is each driver's health as last fingerprinted; driversSeq
	// the sequence of its last change, and driversAcked the sequence up
	// to which a registration carried them to the servers.
	drivers      map[string]*structs.DriverInfo
	driversSeq   uint64
	driversAcked uint64

	// usagePending is the volume usage collected and not yet sent (or
	// sent and not acknowledged); usageAcked what the servers have.
	usagePending map[usageKey]*structs.CSIVolumeUsageReport
	usageAcked   map[usageKey]*structs.CSIVolumeUsage
}

type pendingUpdate struct {
	seq    uint64
	update *structs.NodePluginUpdate
}

type pendingEvent struct {
	seq   uint64
	event *structs.NodeEvent
}

func newNodeUpdater(c *Client) *nodeUpdater {
	return &nodeUpdater{
		c:       c,
		kick:    make(chan struct{}, 1),
		acked:   map[string]*structs.NodePluginUpdate{},
		pending: map[string]pendingUpdate{},
		drivers: map[string]*structs.DriverInfo{},

		usagePending: map[usageKey]*structs.CSIVolumeUsageReport{},
		usageAcked:   map[usageKey]*structs.CSIVolumeUsage{},
	}
}

// driverChanged is the driver fingerprinter's OnChange: the driver's new
// health, and the event it made, if any.
func (u *nodeUpdater) driverChanged(name string, info *structs.DriverInfo, event *structs.NodeEvent) {
	u.mu.Lock()
	u.seq++
	u.drivers[name] = info.Copy()
	u.driversSeq = u.seq
	if event != nil {
		u.events = append(u.events, pendingEvent{seq: u.seq, event: event})
	}
	u.mu.Unlock()
	notify(u.kick)
}

// driverSnapshot is every driver's health as last fingerprinted, for a
// registration.
func (u *nodeUpdater) driverSnapshot() map[string]*structs.DriverInfo {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make(map[string]*structs.DriverInfo, len(u.drivers))
	for name, d := range u.drivers {
		out[name] = d.Copy()
	}
	return out
}

// registerDrivers registers the whole node again when a driver's health
// changed since the servers last had it; markRegistered records it.
func (u *nodeUpdater) registerDrivers(ctx context.Context) error {
	u.mu.Lock()
	changed := u.driversSeq > u.driversAcked
	u.mu.Unlock()
	if !changed {
		return nil
	}
	node, seq := u.c.node(u.c.status())
	var resp structs.NodeUpdateResponse
	if err := u.c.rpc(ctx, "Node.Register", &structs.NodeRegisterRequest{Node: node}, &resp); err != nil {
		return err
	}
	u.mu.Lock()
	u.ackLocked(seq, false)
	u.driversAcked = max(u.driversAcked, seq)
	u.mu.Unlock()
	return nil
}

// pluginChanged is the plugin manager's OnUpdate.
func (u *nodeUpdater) pluginChanged(up pluginmanager.Update) {
	next := &structs.NodePluginUpdate{PluginID: up.PluginID, Controller: up.Controller, Node: up.Node}
	u.mu.Lock()
	u.seq++
	if reflect.DeepEqual(u.acked[up.PluginID], normalize(next)) {
		delete(u.pending, up.PluginID)
	} else {
		u.pending[up.PluginID] = pendingUpdate{seq: u.seq, update: next}
	}
	if up.Event != nil {
		u.events = append(u.events, pendingEvent{seq: u.seq, event: up.Event})
	}
	u.mu.Unlock()
	notify(u.kick)
}

// normalize maps "no instance on either side" to nil, as acked stores it.
func normalize(up *structs.NodePluginUpdate) *structs.NodePluginUpdate {
	if up == nil || up.Controller == nil && up.Node == nil {
		return nil
	}
	return up
}

// fingerprint is the whole current fingerprint, for a registration, and the
// sequence it reflects.
func (u *nodeUpdater) fingerprint() (ctrl, nodes map[string]*structs.CSIInfo, seq uint64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	seq = u.seq
	ctrl, nodes = map[string]*structs.CSIInfo{}, map[string]*structs.CSIInfo{}
	add := func(up *structs.NodePluginUpdate) {
		if up == nil {
			return
		}
		if up.Controller != nil {
			ctrl[up.PluginID] = up.Controller.Copy()
		}
		if up.Node != nil {
			nodes[up.PluginID] = up.Node.Copy()
		}
	}
	for id, up := range u.acked {
		if _, changed := u.pending[id]; !changed {
			add(up)
		}
	}
	for _, p := range u.pending {
		add(p.update)
	}
	return ctrl, nodes, seq
}

// markRegistered marks a full registration done: the servers now have every
// plugin change made up to seq. Events still go in the next update.
func (u *nodeUpdater) markRegistered(seq uint64) {
	u.mu.Lock()
	u.ackLocked(seq, false)
	u.driversAcked = max(u.driversAcked, seq)
	u.registered = true
	more := len(u.events) > 0 || u.driversSeq > u.driversAcked
	u.mu.Unlock()
	if more {
		notify(u.kick)
	}
}

// ackLocked moves changes made up to seq into acked, and with events, drops
// the events sent up to seq.
func (u *nodeUpdater) ackLocked(seq uint64, events bool) {
	for id, p := range u.pending {
		if p.seq <= seq {
			if n := normalize(p.update); n == nil {
				delete(u.acked, id)
			} else {
				u.acked[id] = n
			}
			delete(u.pending, id)
		}
	}
	if events {
		kept := u.events[:0]
		for _, e := range u.events {
			if e.seq > seq {
				kept = append(kept, e)
			}
		}
		u.events = kept
	}
}

// run sends gathered changes until ctx ends, retrying failed sends with
// bounded backoff.
func (u *nodeUpdater) run(ctx context.Context) {
	u.c.sendLoop(ctx, u.kick, u.c.config.UpdateCoalesce, 1, "node update failed; retrying", u.send)
}

// send sends what is pending; nothing while the node is not registered
// (the registration will carry the plugins and drivers).
func (u *nodeUpdater) send(ctx context.Context) error {
	u.mu.Lock()
	registered := u.registered
	u.mu.Unlock()
	if !registered {
		return nil
	}
	if err := u.registerDrivers(ctx); err != nil {
		return err
	}
	u.mu.Lock()
	if !u.registered || len(u.pending) == 0 && len(u.events) == 0 && len(u.usagePending) == 0 {
		u.mu.Unlock()
		return nil
	}
	seq := u.seq
	req := &structs.NodeFingerprintRequest{NodeID: u.c.nodeID, VolumeUsage: u.usageToSendLocked()}
	for _, p := range u.pending {
		req.Plugins = append(req.Plugins, p.update)
	}
	for _, e := range u.events {
		req.Events = append(req.Events, e.event)
	}
	u.mu.Unlock()

	var resp structs.NodeUpdateResponse
	err := u.c.rpc(ctx, "Node.UpdateFingerprint", req, &resp)
	if errors.Is(err, structs.ErrNotFound) {
		// The servers lost the node; the heartbeat loop registers it
		// again with the whole fingerprint.
		u.mu.Lock()
		u.registered = false
		u.mu.Unlock()
		return nil
	}
	if err != nil {
		return err
	}
	u.mu.Lock()
	u.ackLocked(seq, true)
	more := u.usageSentLocked(req.VolumeUsage)
	u.mu.Unlock()
	if more {
		notify(u.kick)
	}
	return nil
}
