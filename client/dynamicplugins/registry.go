package dynamicplugins

import (
	"fmt"
	"sort"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/berth-csi/berth/structs"
)

// Registry holds the plugins on this node, by PluginInfo.Key: a plugin's
// monolith, or its controller and its node instance.
type Registry struct {
	logger hclog.Logger

	mu      sync.Mutex
	plugins map[string]entry // by Key
	gen     uint64           // bumped by every change; an entry records the one that made it
	subs    map[*subscription]struct{}
}

// entry is a registered plugin and the generation of its registration,
// which subscriptions compare to see what changed since they last looked.
type entry struct {
	info *PluginInfo
	gen  uint64
}

// New returns an empty registry.
func New(logger hclog.Logger) *Registry {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	return &Registry{
		logger:  logger.Named("dynamicplugins"),
		plugins: map[string]entry{},
		subs:    map[*subscription]struct{}{},
	}
}

// Register adds a plugin instance, or replaces the ones of the same plugin
// that serve a service it serves (a restarted plugin task, a reloaded
// config; a monolith replaces a controller and a node instance, either
// of them a monolith), registered from the same source. A plugin's
// controller and node instances stand side by side. Registering exactly
// what is registered changes nothing. It fails with ErrInvalidPlugin for
// a bad registration and ErrPluginConflict if an instance it would
// replace is registered from the other source.
func (r *Registry) Register(p *PluginInfo) error {
	if err := p.Validate(); err != nil {
		return err
	}
	p = p.Copy()
	if p.Source == "" {
		p.Source = SourceConfig
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	key := p.Key()
	var replaced []string
	for k, e := range r.plugins {
		if e.info.ID != p.ID || !overlaps(e.info.Type, p.Type) {
			continue
		}
		if e.info.Source != p.Source {
			return fmt.Errorf("%w: plugin %q is registered by the %s, not the %s",
				ErrPluginConflict, p.ID, e.info.Source, p.Source)
		}
		if k != key {
			replaced = append(replaced, k)
		}
	}
	old, ok := r.plugins[key]
	if ok && *old.info == *p && len(replaced) == 0 {
		return nil
	}
	for _, k := range replaced {
		r.logger.Info("plugin registration replaced by another type", "plugin_id", p.ID, "old_type", r.plugins[k].info.Type, "type", p.Type)
		delete(r.plugins, k)
	}
	r.gen++
	r.plugins[key] = entry{info: p, gen: r.gen}
	logger := r.logger.With("plugin_id", p.ID, "type", p.Type, "socket", p.Socket, "source", p.Source, "alloc_id", p.AllocID)
	if ok {
		logger.Info("plugin registration replaced", "old_alloc_id", old.info.AllocID, "old_socket", old.info.Socket)
	} else {
		logger.Info("plugin registered")
	}
	r.wakeLocked()
	return nil
}

// Deregister removes the registration key (PluginInfo.Key: the plugin ID
// of a monolith) that allocID made (allocID is empty for a plugin from
// the config). It fails with ErrPluginNotFound if key is not registered
// and ErrAllocMismatch if another allocation registered it since (its
// replacement must stay).
func (r *Registry) Deregister(key, allocID string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	old, ok := r.plugins[key]
	if !ok {
		return fmt.Errorf("%w: %q", ErrPluginNotFound, key)
	}
	if old.info.AllocID != allocID {
		return fmt.Errorf("%w: plugin %q is registered by alloc %q, not %q", ErrAllocMismatch, key, old.info.AllocID, allocID)
	}
	delete(r.plugins, key)
	r.gen++
	r.logger.Info("plugin deregistered", "plugin_id", old.info.ID, "type", old.info.Type, "alloc_id", allocID)
	r.wakeLocked()
	return nil
}

// Get returns a copy of the registration key (PluginInfo.Key).
func (r *Registry) Get(key string) (*PluginInfo, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.plugins[key]
	return e.info.Copy(), ok
}

// Node returns the instance of plugin id that serves the node service:
// its monolith or its node instance.
func (r *Registry) Node(id string) (*PluginInfo, bool) {
	return r.serving(id, structs.CSIPluginTypeNode)
}

// Controller returns the instance of plugin id that serves the
// controller service: its monolith or its controller instance.
func (r *Registry) Controller(id string) (*PluginInfo, bool) {
	return r.serving(id, structs.CSIPluginTypeController)
}

// Has reports whether any instance of plugin id is registered.
func (r *Registry) Has(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.plugins {
		if e.info.ID == id {
			return true
		}
	}
	return false
}

func (r *Registry) serving(id string, typ structs.CSIPluginType) (*PluginInfo, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.plugins[id]; ok && e.info.Type == structs.CSIPluginTypeMonolith {
		return e.info.Copy(), true
	}
	if e, ok := r.plugins[id+"/"+string(typ)]; ok {
		return e.info.Copy(), true
	}
	return nil, false
}

// List returns copies of the registered plugins, sorted by ID.
func (r *Registry) List() []*PluginInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*PluginInfo, 0, len(r.plugins))
	for _, e := range r.plugins {
		out = append(out, e.info.Copy())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out
}
