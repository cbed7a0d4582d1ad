package pluginmanager

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"

	"github.com/berth-csi/berth/client/dynamicplugins"
	"github.com/berth-csi/berth/structs"
)

// Manager fingerprints the registry's plugins and reports their changes.
type Manager struct {
	cfg     Config
	logger  hclog.Logger
	running atomic.Bool

	// emitMu orders OnUpdate calls: a change is stored and emitted under
	// it, so updates reach OnUpdate in the order they happened.
	emitMu sync.Mutex

	mu    sync.Mutex
	state map[string]Update // the last emitted state of each plugin
}

// New validates cfg, fills its defaults, and returns a Manager; Run starts
// it.
func New(cfg Config) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return &Manager{
		cfg:    cfg,
		logger: cfg.Logger.Named("pluginmanager"),
		state:  map[string]Update{},
	}, nil
}

// Run fingerprints every registered plugin, following registrations and
// deregistrations, until ctx ends; it returns after every instance
// goroutine has stopped. It runs once per Manager.
func (m *Manager) Run(ctx context.Context) {
	if !m.running.CompareAndSwap(false, true) {
		m.logger.Error("plugin manager already running")
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	instances := map[string]*instance{}
	defer func() {
		for _, in := range instances {
			in.cancel() // stop them all at once, then wait
		}
		for _, in := range instances {
			<-in.done
		}
		m.logger.Debug("plugin manager stopped")
	}()

	events := m.cfg.Registry.Subscribe(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			m.handle(ctx, instances, ev)
		}
	}
}

// handle follows one registration (by PluginInfo.Key: a plugin's
// monolith, or its controller or node instance, each fingerprinted on its
// own and reported as its side of the plugin).
func (m *Manager) handle(ctx context.Context, instances map[string]*instance, ev dynamicplugins.Event) {
	key := ev.Plugin.Key()
	if old, ok := instances[key]; ok {
		old.stop()
		delete(instances, key)
	}
	switch ev.Type {
	case dynamicplugins.EventRegistered:
		in := newInstance(ev.Plugin, &m.cfg, m.logger, m.report)
		instances[key] = in
		in.start(ctx)
	case dynamicplugins.EventDeregistered:
		m.remove(ev.Plugin)
	}
}

// report stores an instance's round and emits an Update if it changed
// anything but the time.
func (m *Manager) report(p *dynamicplugins.PluginInfo, ctrl, node *structs.CSIInfo) {
	m.emitMu.Lock()
	defer m.emitMu.Unlock()

	m.mu.Lock()
	prev, had := m.state[p.ID]
	// A split instance reports its own side; the other is its sibling's.
	switch p.Type {
	case structs.CSIPluginTypeController:
		node = prev.Node.Copy()
	case structs.CSIPluginTypeNode:
		ctrl = prev.Controller.Copy()
	}
	ctrlChanged, nodeChanged := !infoEqual(prev.Controller, ctrl), !infoEqual(prev.Node, node)
	if had && !ctrlChanged && !nodeChanged {
		m.mu.Unlock()
		return
	}
	now := m.cfg.Now()
	up := Update{PluginID: p.ID, Controller: ctrl, Node: node}
	for _, s := range []struct {
		cur, prev *structs.CSIInfo
		changed   bool
	}{{ctrl, prev.Controller, ctrlChanged}, {node, prev.Node, nodeChanged}} {
		if s.cur == nil {
			continue
		}
		s.cur.UpdateTime = now
		if !s.changed && s.prev != nil {
			s.cur.UpdateTime = s.prev.UpdateTime
		}
	}
	wasHealthy, _ := prev.Healthy()
	healthy, reason := up.Healthy()
	if !had || healthy != wasHealthy {
		up.Event = healthEvent(p.ID, healthy, reason, now)
		if healthy {
			m.logger.Info("plugin healthy", "plugin_id", p.ID, "alloc_id", p.AllocID)
		} else {
			m.logger.Warn("plugin unhealthy", "plugin_id", p.ID, "alloc_id", p.AllocID, "reason", reason)
		}
	}
	stored := up.Copy()
	if stored.Event == nil && prev.Event != nil {
		stored.Event = prev.Event // Plugins shows the last health event
	}
	m.state[p.ID] = stored
	m.mu.Unlock()

	m.cfg.OnUpdate(up)
}

// remove forgets a deregistered plugin instance and emits an Update
// without its side: both nil for a monolith, or for the last of a
// plugin's split instances. Its instance has stopped, so nothing it
// reports can follow.
func (m *Manager) remove(p *dynamicplugins.PluginInfo) {
	m.emitMu.Lock()
	defer m.emitMu.Unlock()

	id := p.ID
	m.mu.Lock()
	prev, had := m.state[id]
	up := Update{PluginID: id}
	switch p.Type {
	case structs.CSIPluginTypeController:
		up.Node = prev.Node.Copy()
	case structs.CSIPluginTypeNode:
		up.Controller = prev.Controller.Copy()
	}
	left := up.Controller != nil || up.Node != nil
	if left {
		m.state[id] = up.Copy()
	} else {
		delete(m.state, id)
	}
	m.mu.Unlock()
	if !had {
		return
	}
	what := fmt.Sprintf("plugin %q was deregistered", id)
	if left {
		what = fmt.Sprintf("plugin %q's %s instance was deregistered", id, p.Type)
	}
	m.logger.Info("plugin deregistered", "plugin_id", id, "type", p.Type)
	up.Event = pluginEvent(id, what, m.cfg.Now())
	m.cfg.OnUpdate(up)
}

// Plugins returns a copy of the current state of every plugin, by ID.
// Event holds the last health event emitted for the plugin, if any.
func (m *Manager) Plugins() map[string]Update {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]Update, len(m.state))
	for id, up := range m.state {
		out[id] = up.Copy()
	}
	return out
}
