package allocrunner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/berth-csi/berth/client/csi"
	"github.com/berth-csi/berth/client/drivers/exec"
	"github.com/berth-csi/berth/client/dynamicplugins"
	"github.com/berth-csi/berth/client/volumemanager"
	"github.com/berth-csi/berth/structs"
)

// Plugin task events.
const (
	EventPluginHealthy   = "Plugin Healthy"
	EventPluginUnhealthy = "Plugin Unhealthy"
)

const (
	// pluginSocketName is the plugin's socket, in its host dir; the
	// plugin sees it at mount_dir/csi.sock (CSI_ENDPOINT).
	pluginSocketName = "csi.sock"
	// controllerSocketName is a split plugin's controller task's socket,
	// mount_dir/csi-controller.sock to it.
	controllerSocketName = "csi-controller.sock"
	// DefaultPluginProbeInterval is how often a running plugin task is
	// probed, when the config does not say.
	DefaultPluginProbeInterval = 5 * time.Second
	// readyPoll is how often a starting plugin is probed for readiness
	// during its first readyPollFast (a probe is one call on a unix
	// socket): most plugins are ready within it, and each poll's wait is
	// time the plugin's volumes cannot be placed; after it, the polls
	// back off to one a second.
	readyPoll     = 20 * time.Millisecond
	readyPollFast = time.Second
	// defaultHealthTimeout is a csi_plugin block's health_timeout when it
	// has none.
	defaultHealthTimeout = 30 * time.Second
	// pluginProbeTimeout bounds one Probe.
	pluginProbeTimeout = 5 * time.Second
)

// PluginRegistry is where healthy plugin tasks register:
// *dynamicplugins.Registry.
type PluginRegistry interface {
	Register(p *dynamicplugins.PluginInfo) error
	Deregister(id, allocID string) error
}

var _ PluginRegistry = (*dynamicplugins.Registry)(nil)

// pluginTask supervises a task with a csi_plugin block: before each start
// it shares the plugin's host dir (socket, staging and publish dirs) and
// binds it at mount_dir with bidirectional propagation; after each start
// it waits up to health_timeout for the plugin to probe healthy, registers
// it, probes it every interval (health changes become task events), and
// deregisters it when the process ends.
type pluginTask struct {
	r        *Runner
	task     string
	conf     *structs.TaskCSIPluginConfig
	hostDir  string // volumemanager.PluginHostDir
	socket   string // the socket on the host
	endpoint string // the socket as the plugin sees it
}

func newPluginTask(r *Runner, t *structs.Task) *pluginTask {
	host := volumemanager.PluginHostDir(r.cfg.DataDir, t.CSIPluginConfig.ID)
	sock := socketName(t.CSIPluginConfig.Type)
	return &pluginTask{
		r:        r,
		task:     t.Name,
		conf:     t.CSIPluginConfig,
		hostDir:  host,
		socket:   filepath.Join(host, sock),
		endpoint: "unix://" + filepath.Join(t.CSIPluginConfig.MountDir, sock),
	}
}

// socketName is a plugin task's socket in the plugin's host dir: the
// controller task of a plugin split in two has its own, so that it runs
// beside the node task, which shares the host dir.
func socketName(t structs.CSIPluginType) string {
	if t == structs.CSIPluginTypeController {
		return controllerSocketName
	}
	return pluginSocketName
}

// viewDir is where the plugin sees its staging and publish dirs.
func (p *pluginTask) viewDir() string {
	if p.conf.StagePublishBaseDir != "" {
		return p.conf.StagePublishBaseDir
	}
	return p.conf.MountDir
}

// checkPlugin refuses a plugin task this client cannot run.
func (r *Runner) checkPlugin(t *structs.Task) error {
	p := t.CSIPluginConfig
	if r.cfg.Plugins == nil {
		return errors.New("csi_plugin: this client takes no plugin tasks (no plugin registry)")
	}
	// The ID names the plugin's host dir.
	if err := volumemanager.CheckPluginID(p.ID); err != nil {
		return fmt.Errorf("csi_plugin: %w", err)
	}
	info := newPluginTask(r, t).info()
	if n := len(info.Socket); n > dynamicplugins.MaxSocketPath {
		return fmt.Errorf("csi_plugin %q: its socket %s is %d bytes, over the %d a unix socket allows: give the client a shorter data_dir",
			p.ID, info.Socket, n, dynamicplugins.MaxSocketPath)
	}
	if err := info.Validate(); err != nil {
		return fmt.Errorf("csi_plugin %q: %w", p.ID, err)
	}
	return nil
}

// info is the plugin's registration.
func (p *pluginTask) info() *dynamicplugins.PluginInfo {
	return &dynamicplugins.PluginInfo{
		ID:       p.conf.ID,
		Type:     p.conf.Type,
		Socket:   p.socket,
		AllocID:  p.r.cfg.Alloc.ID,
		Source:   dynamicplugins.SourceTask,
		MountDir: p.viewDir(),
	}
}

// prestart readies the host dir for a start and returns the mounts and
// env the task gets: the host dir at mount_dir (and at
// stage_publish_base_dir, where the plugin stages and publishes, when
// set), with bidirectional propagation.
func (p *pluginTask) prestart() ([]exec.Mount, map[string]string, error) {
	if os.Geteuid() != 0 {
		return nil, nil, fmt.Errorf("csi_plugin %q: its dirs are mounted with bidirectional propagation: %w", p.conf.ID, exec.ErrNeedsRoot)
	}
	if err := os.MkdirAll(p.hostDir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("csi_plugin %q: %w", p.conf.ID, err)
	}
	if err := exec.ShareDir(p.hostDir); err != nil {
		return nil, nil, fmt.Errorf("csi_plugin %q: %w", p.conf.ID, err)
	}
	// A socket left by a plugin that died would answer nothing.
	if err := os.Remove(p.socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("csi_plugin %q: remove the old socket: %w", p.conf.ID, err)
	}
	ms := []exec.Mount{{Source: p.hostDir, Destination: p.conf.MountDir, Propagation: structs.PropagationBidirectional}}
	if d := p.conf.StagePublishBaseDir; d != "" && filepath.Clean(d) != filepath.Clean(p.conf.MountDir) {
		ms = append(ms, exec.Mount{Source: p.hostDir, Destination: d, Propagation: structs.PropagationBidirectional})
	}
	return ms, map[string]string{"CSI_ENDPOINT": p.endpoint}, nil
}

// supervise runs while the task's process h does, and returns a channel
// closed once it has deregistered the plugin (or ctx ended).
func (p *pluginTask) supervise(ctx context.Context, h taskHandle, killSignal syscall.Signal, killTimeout time.Duration) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.run(ctx, h, killSignal, killTimeout)
	}()
	return done
}

func (p *pluginTask) run(ctx context.Context, h taskHandle, killSignal syscall.Signal, killTimeout time.Duration) {
	log := p.r.logger.With("task", p.task, "plugin_id", p.conf.ID)
	var cc *csi.Client
	defer func() {
		if cc != nil {
			_ = cc.Close()
		}
	}()
	probe := func() error {
		if cc == nil {
			c, err := csi.Dial(ctx, p.socket, log, csi.WithPluginID(p.conf.ID))
			if err != nil {
				return err
			}
			cc = c
		}
		pctx, cancel := context.WithTimeout(ctx, pluginProbeTimeout)
		defer cancel()
		ready, err := cc.Probe(pctx)
		if err == nil && !ready {
			err = errors.New("the plugin says it is not ready yet")
		}
		return err
	}

	// Readiness: probe quickly until healthy or health_timeout.
	timeout := time.Duration(p.conf.HealthTimeout)
	if timeout <= 0 {
		timeout = defaultHealthTimeout
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	started := time.Now()
	wait := readyPoll
	var lastErr error
	for {
		if lastErr = probe(); lastErr == nil {
			break
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
			if time.Since(started) > readyPollFast {
				wait = min(2*wait, time.Second) // a slow starter: back off
			}
			continue
		case <-deadline.C:
			t.Stop()
			msg := fmt.Sprintf("plugin %q did not become healthy within %s: %v; stopping it", p.conf.ID, timeout, lastErr)
			p.r.updateTask(p.task, nil, event(EventPluginUnhealthy, msg))
			log.Warn("plugin task never became healthy", "timeout", timeout, "error", lastErr)
			if err := h.Stop(ctx, killSignal, killTimeout); err != nil {
				log.Warn("cannot stop the plugin task", "error", err)
			}
			return // the task runner waits for the process
		case <-h.Done():
			t.Stop()
			return
		case <-ctx.Done():
			t.Stop()
			return
		}
	}

	if p.r.stopping() {
		// Being stopped (a lost alloc cleaned up by a client that came
		// back, a stop during startup): a plugin on its way out is never
		// registered over the one that may replace it.
		select {
		case <-h.Done():
		case <-ctx.Done():
		}
		return
	}
	registered := false
	if err := p.r.cfg.Plugins.Register(p.info()); err != nil {
		msg := fmt.Sprintf("plugin %q is healthy but cannot be registered: %v", p.conf.ID, err)
		p.r.updateTask(p.task, nil, event(EventPluginUnhealthy, msg))
		log.Error("cannot register plugin task", "error", err)
	} else {
		registered = true
		p.r.updateTask(p.task, nil, event(EventPluginHealthy,
			fmt.Sprintf("plugin %q is healthy and registered on this node (%s)", p.conf.ID, p.conf.Type)))
	}
	defer func() {
		if !registered || ctx.Err() != nil {
			return // the client is stopping: its registry goes with it
		}
		if err := p.r.cfg.Plugins.Deregister(p.info().Key(), p.r.cfg.Alloc.ID); err != nil {
			log.Warn("cannot deregister plugin", "error", err)
			return
		}
		p.r.updateTask(p.task, nil, event(EventPluginUnhealthy,
			fmt.Sprintf("plugin %q stopped and was deregistered from this node", p.conf.ID)))
	}()

	// Heartbeat: a change of health is a task event.
	interval := p.r.cfg.PluginProbeInterval
	if interval <= 0 {
		interval = DefaultPluginProbeInterval
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	healthy := true
	for {
		select {
		case <-tick.C:
		case <-h.Done():
			return
		case <-ctx.Done():
			return
		}
		err := probe()
		switch {
		case err != nil && healthy:
			healthy = false
			p.r.updateTask(p.task, nil, event(EventPluginUnhealthy, fmt.Sprintf("plugin %q: %v", p.conf.ID, err)))
		case err == nil && !healthy:
			healthy = true
			p.r.updateTask(p.task, nil, event(EventPluginHealthy, fmt.Sprintf("plugin %q is healthy again", p.conf.ID)))
		}
	}
}
