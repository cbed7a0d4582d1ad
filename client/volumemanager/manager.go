package volumemanager

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/berth-csi/berth/client/csi"
	"github.com/berth-csi/berth/client/dynamicplugins"
	"github.com/berth-csi/berth/client/internal/keyedsem"
	"github.com/berth-csi/berth/internal/atomicfile"
	"github.com/berth-csi/berth/internal/backoff"
	"github.com/berth-csi/berth/structs"
)

// Manager mounts and unmounts CSI volumes for the allocations on this
// node. Build it with New.
type Manager struct {
	dataDir  string // absolute
	registry *dynamicplugins.Registry
	logger   hclog.Logger
	retry    backoff.Policy
	conns    *csi.Pool // the node sockets' connections
	file     string    // the usage file

	locks keyedsem.Semaphores[volumeKey] // one operation per volume at a time

	writeMu sync.Mutex // held across a change and its write, so writes land in order
	mu      sync.Mutex // guards usage
	usage   map[volumeKey]*volumeUsage
}

// New validates cfg, creates DataDir/client/csi and reads the usage a
// previous manager on the same data dir recorded. It fails with
// ErrCorruptUsage if the usage file cannot be trusted.
func New(cfg Config) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dataDir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("volumemanager: data dir %q: %w", cfg.DataDir, err)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	retry := cfg.Retry
	if retry == (backoff.Policy{}) {
		retry = DefaultRetry()
	}
	dir := filepath.Join(dataDir, clientDirName, csiDirName)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("volumemanager: create %s: %w", dir, err)
	}
	m := &Manager{
		dataDir:  dataDir,
		registry: cfg.Registry,
		logger:   logger.Named("volumemanager"),
		retry:    retry,
		conns:    cfg.Conns,
		file:     filepath.Join(dir, usageFileName),
	}
	if m.conns == nil {
		m.conns = csi.NewPool(logger)
	}
	if m.usage, err = loadUsage(m.file); err != nil {
		return nil, err
	}
	if n := len(m.usage); n > 0 {
		m.logger.Info("volume usage restored", "volumes", n, "path", m.file)
	}
	return m, nil
}

// get returns a copy of the usage of key, nil if the volume is not in use.
func (m *Manager) get(key volumeKey) *volumeUsage {
	m.mu.Lock()
	defer m.mu.Unlock()
	if u := m.usage[key]; u != nil {
		return u.copy()
	}
	return nil
}

// save records u as the usage of its volume (a nil u with key: the volume
// is no longer in use) and writes the usage file. If the write fails the
// change is undone, so that memory matches the file, and the error says
// so: the caller must not go on to the step the record was to announce.
func (m *Manager) save(key volumeKey, u *volumeUsage) error {
	m.writeMu.Lock()
	defer m.writeMu.Unlock()

	m.mu.Lock()
	old := m.usage[key]
	if u == nil {
		delete(m.usage, key)
	} else {
		m.usage[key] = u.copy()
	}
	data, err := marshalUsage(m.usage)
	m.mu.Unlock()

	if err == nil {
		err = atomicfile.Write(m.file, data)
	}
	if err != nil {
		m.mu.Lock()
		if old == nil {
			delete(m.usage, key)
		} else {
			m.usage[key] = old
		}
		m.mu.Unlock()
		return fmt.Errorf("write %s: %w", m.file, err)
	}
	return nil
}

// allocInUseLocked reports whether any volume's usage lists allocID. Call it
// with m.mu held.
func (m *Manager) allocInUseLocked(allocID string) bool {
	for _, u := range m.usage {
		if _, ok := u.Allocs[allocID]; ok {
			return true
		}
	}
	return false
}

// removeAllocDir removes the allocation's per-alloc dir of a plugin once
// no volume lists the allocation. It holds m.mu while it checks and
// removes, and a mount records its allocation (under m.mu) before it
// creates the dir, so it never removes a dir a mount is about to use.
// It never removes anything but an empty dir.
func (m *Manager) removeAllocDir(log hclog.Logger, pluginID, allocID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.allocInUseLocked(allocID) {
		return
	}
	removeEmptyDir(log, filepath.Join(PluginHostDir(m.dataDir, pluginID), perAllocDirName, allocID))
}

// removeEmptyDir removes dir if it is an empty directory (or already
// gone); anything else is left and logged: a dir still mounted on, or not
// empty, is never removed.
func removeEmptyDir(log hclog.Logger, dir string) {
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		log.Warn("left a volume dir behind", "path", dir, "error", err)
	}
}

// nodePlugin returns plugin pluginID if it runs on this node and serves
// the node service.
func (m *Manager) nodePlugin(pluginID string) (*dynamicplugins.PluginInfo, error) {
	p, ok := m.registry.Node(pluginID)
	if !ok && m.registry.Has(pluginID) {
		return nil, fmt.Errorf("%w: it runs only a %s instance here", ErrPluginNotRunning, structs.CSIPluginTypeController)
	}
	if !ok {
		return nil, ErrPluginNotRunning
	}
	return p, nil
}

// step is one operation's context for errors and logs.
type step struct {
	volumeID, allocID, pluginID string
	log                         hclog.Logger
}

func (m *Manager) newStep(volumeID, allocID, pluginID string) *step {
	return &step{volumeID: volumeID, allocID: allocID, pluginID: pluginID,
		log: m.logger.With("volume_id", volumeID, "alloc_id", allocID, "plugin_id", pluginID)}
}

// fail names the step that failed and why.
func (s *step) fail(name string, err error) error {
	return &Error{VolumeID: s.volumeID, AllocID: s.allocID, PluginID: s.pluginID, Step: name, Err: err}
}

// call makes one CSI call, retried per m.retry while it fails with an
// error that is not final, and names it in the error.
func (m *Manager) call(ctx context.Context, s *step, name string, fn func(context.Context) error) error {
	attempt := 0
	err := backoff.Retry(ctx, m.retry, csi.IsFinal, func(ctx context.Context) error {
		attempt++
		err := fn(ctx)
		if err != nil && !csi.IsFinal(err) {
			s.log.Debug("csi call failed; it may be retried", "call", name, "attempt", attempt, "error", err)
		}
		return err
	})
	if err != nil {
		return s.fail(name, err)
	}
	return nil
}

// dial returns the connection to plugin p's node socket (shared: never
// closed by the caller).
func (m *Manager) dial(ctx context.Context, s *step, p *dynamicplugins.PluginInfo) (*csi.Client, error) {
	cc, err := m.conns.Get(ctx, p.ID, p.Socket)
	if err != nil {
		return nil, s.fail("dial", err)
	}
	return cc, nil
}

// nodeCaps asks the node plugin for its capabilities (NodeGetCapabilities).
func (m *Manager) nodeCaps(ctx context.Context, s *step, cc *csi.Client) (*csi.NodeCapabilities, error) {
	var caps *csi.NodeCapabilities
	if err := m.call(ctx, s, "NodeGetCapabilities", func(ctx context.Context) (err error) {
		caps, err = cc.NodeGetCapabilities(ctx)
		return err
	}); err != nil {
		return nil, err
	}
	return caps, nil
}
