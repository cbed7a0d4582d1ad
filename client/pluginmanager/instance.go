package pluginmanager

import (
	"context"
	"errors"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/berth-csi/berth/client/csi"
	"github.com/berth-csi/berth/client/dynamicplugins"
	"github.com/berth-csi/berth/internal/backoff"
	"github.com/berth-csi/berth/structs"
)

// instance fingerprints one registered plugin. Its goroutine (run) owns
// every field below cancel; the manager only cancels it and waits on done.
type instance struct {
	info   *dynamicplugins.PluginInfo
	cfg    *Config
	logger hclog.Logger
	report func(*dynamicplugins.PluginInfo, *structs.CSIInfo, *structs.CSIInfo)
	cancel context.CancelFunc
	done   chan struct{}

	main *endpoint // the plugin's socket: identity, node, and controller unless split
	ctrl *endpoint // the controller socket, when the plugin has one

	lastCtrl, lastNode *structs.CSIInfo
}

// endpoint is one socket of the plugin and, once dialed, its client and
// connection watcher.
type endpoint struct {
	socket    string
	client    *csi.Client
	watch     <-chan struct{}
	stopWatch context.CancelFunc
}

// socketPoll is how often a plugin whose socket does not exist yet is
// looked for: a stat, cheap enough to notice a starting plugin at once.
const socketPoll = 100 * time.Millisecond

// unhealthyBackoff paces rounds while the plugin is unhealthy (capped at
// the probe interval), so that a plugin starting up is seen quickly.
var unhealthyBackoff = backoff.Policy{Initial: 100 * time.Millisecond, Multiplier: 2, Jitter: 0.2}

func newInstance(info *dynamicplugins.PluginInfo, cfg *Config, logger hclog.Logger,
	report func(*dynamicplugins.PluginInfo, *structs.CSIInfo, *structs.CSIInfo)) *instance {
	in := &instance{
		info:   info,
		cfg:    cfg,
		logger: logger.With("plugin_id", info.ID, "alloc_id", info.AllocID),
		report: report,
		done:   make(chan struct{}),
		main:   &endpoint{socket: info.Socket},
	}
	if info.ControllerSocket != "" && info.ProvidesController() {
		in.ctrl = &endpoint{socket: info.ControllerSocket}
	}
	return in
}

// start runs the instance until ctx ends or stop is called.
func (in *instance) start(ctx context.Context) {
	ctx, in.cancel = context.WithCancel(ctx)
	go in.run(ctx)
}

// stop ends the instance and waits until its goroutine and clients are
// gone. It returns promptly: every plugin call has a timeout and ends with
// the instance's context.
func (in *instance) stop() {
	in.cancel()
	<-in.done
}

func (in *instance) run(ctx context.Context) {
	defer close(in.done)
	defer in.closeClients()
	in.logger.Debug("fingerprinting plugin", "type", in.info.Type, "socket", in.info.Socket)

	timer := time.NewTimer(0) // the first round at once
	defer timer.Stop()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case _, ok := <-in.main.watch:
			in.main.closedWatch(ok)
		case _, ok := <-in.ctrl.watchChan():
			in.ctrl.closedWatch(ok)
		}
		healthy, noSocket := in.round(ctx)
		if ctx.Err() != nil {
			return
		}
		delay := in.cfg.ProbeInterval
		switch {
		case healthy:
			failures = 0
		case noSocket:
			delay = min(socketPoll, delay)
		default:
			failures++
			delay = min(unhealthyBackoff.Delay(failures), delay)
		}
		timer.Reset(delay)
	}
}

// round fingerprints every side the plugin provides once and reports the
// result; it returns whether all of them are healthy, and whether a socket
// was missing. Each call is bounded by the probe timeout; the first
// failure of a side ends that side's round.
func (in *instance) round(ctx context.Context) (healthy, noSocket bool) {
	mainID, mainErr := in.identify(ctx, in.main)
	noSocket = errors.Is(mainErr, csi.ErrNoSocket)

	var node, ctrl *structs.CSIInfo
	if in.info.ProvidesNode() {
		var ni *structs.CSINodeInfo
		err := mainErr
		if err == nil {
			ni, err = fingerprintNode(ctx, in.main.client)
		}
		node = sideInfo(in.lastNode, in.info, mainID, err)
		if ni != nil {
			node.NodeInfo = ni
		}
	}
	if in.info.ProvidesController() {
		ep, id, err := in.main, mainID, mainErr
		if in.ctrl != nil {
			ep = in.ctrl
			id, err = in.identify(ctx, ep)
			noSocket = noSocket || errors.Is(err, csi.ErrNoSocket)
		}
		var ci *structs.CSIControllerInfo
		if err == nil {
			ci, err = fingerprintController(ctx, ep.client, id, in.info.ID)
		}
		ctrl = sideInfo(in.lastCtrl, in.info, id, err)
		if ci != nil {
			ctrl.ControllerInfo = ci
		}
	}
	if ctx.Err() != nil {
		return false, false // stopped mid-round: what it saw is not the plugin's doing
	}
	in.lastCtrl, in.lastNode = ctrl, node
	in.report(in.info, ctrl.Copy(), node.Copy())
	return (ctrl == nil || ctrl.Healthy) && (node == nil || node.Healthy), noSocket
}

// identify dials the endpoint if it has no client yet, then runs the
// identity calls on it.
func (in *instance) identify(ctx context.Context, ep *endpoint) (*identity, error) {
	if ep.client == nil {
		c, err := csi.Dial(ctx, ep.socket, in.logger,
			csi.WithPluginID(in.info.ID), csi.WithCallTimeout(in.cfg.ProbeTimeout))
		if err != nil {
			return nil, err
		}
		var watchCtx context.Context
		watchCtx, ep.stopWatch = context.WithCancel(ctx)
		ep.client, ep.watch = c, c.WatchConnection(watchCtx)
	}
	return identify(ctx, ep.client, in.info.ID)
}

func (in *instance) closeClients() {
	for _, ep := range []*endpoint{in.main, in.ctrl} {
		if ep != nil && ep.client != nil {
			ep.stopWatch()
			ep.client.Close()
			ep.client, ep.watch = nil, nil
		}
	}
}

// watchChan is the endpoint's watcher, nil (never ready) if it has none.
func (ep *endpoint) watchChan() <-chan struct{} {
	if ep == nil {
		return nil
	}
	return ep.watch
}

// closedWatch forgets a watcher whose channel was closed, so that select
// does not spin on it.
func (ep *endpoint) closedWatch(ok bool) {
	if !ok {
		ep.watch = nil
	}
}
