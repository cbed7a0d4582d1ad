package dynamicplugins

import (
	"fmt"
	"sort"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// Registry holds the plugins on this node, by ID.
type Registry struct {
	logger hclog.Logger

	mu      sync.Mutex
	plugins map[string]entry
	gen     uint64 // bumped by every change; an entry records the one that made it
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

// Register adds a plugin, or replaces the one registered with the same ID
// from the same source (a restarted plugin task, a reloaded config).
// Registering exactly what is registered changes nothing. It fails with
// ErrInvalidPlugin for a bad registration and ErrPluginConflict if the ID
// is registered from the other source.
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
	old, ok := r.plugins[p.ID]
	if ok && old.info.Source != p.Source {
		return fmt.Errorf("%w: plugin %q is registered by the %s, not the %s",
			ErrPluginConflict, p.ID, old.info.Source, p.Source)
	}
	if ok && *old.info == *p {
		return nil
	}
	r.gen++
	r.plugins[p.ID] = entry{info: p, gen: r.gen}
	logger := r.logger.With("plugin_id", p.ID, "type", p.Type, "socket", p.Socket, "source", p.Source, "alloc_id", p.AllocID)
	if ok {
		logger.Info("plugin registration replaced", "old_alloc_id", old.info.AllocID, "old_socket", old.info.Socket)
	} else {
		logger.Info("plugin registered")
	}
	r.wakeLocked()
	return nil
}

// Deregister removes the plugin id that allocID registered (allocID is
// empty for a plugin from the config). It fails with ErrPluginNotFound if
// id is not registered and ErrAllocMismatch if another allocation
// registered it since (its replacement must stay).
func (r *Registry) Deregister(id, allocID string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	old, ok := r.plugins[id]
	if !ok {
		return fmt.Errorf("%w: %q", ErrPluginNotFound, id)
	}
	if old.info.AllocID != allocID {
		return fmt.Errorf("%w: plugin %q is registered by alloc %q, not %q", ErrAllocMismatch, id, old.info.AllocID, allocID)
	}
	delete(r.plugins, id)
	r.gen++
	r.logger.Info("plugin deregistered", "plugin_id", id, "alloc_id", allocID)
	r.wakeLocked()
	return nil
}

// Get returns a copy of the plugin registered as id.
func (r *Registry) Get(id string) (*PluginInfo, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.plugins[id]
	return e.info.Copy(), ok
}

// List returns copies of the registered plugins, sorted by ID.
func (r *Registry) List() []*PluginInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*PluginInfo, 0, len(r.plugins))
	for _, e := range r.plugins {
		out = append(out, e.info.Copy())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
