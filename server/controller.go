package server

import (
	"context"
	"errors"
	"sort"

	"github.com/berth-csi/berth/structs"
)

// controllerNodes lists the nodes running a healthy controller instance of
// a plugin, in a stable order, so calls keep going to the same instance
// while it stays healthy. need says which capability the call needs; an
// instance without it is skipped, and when none has it the error says so.
func (s *Server) controllerNodes(pluginID string, need func(*structs.CSIControllerInfo) bool, capName string) ([]string, error) {
	plug, err := s.State().CSIPluginByID(nil, pluginID)
	if err != nil {
		return nil, err
	}
	if plug == nil {
		return nil, structs.NewError(structs.CodeBadRequest,
			"plugin %q is not running on any node; check plugin_id or start the plugin first", pluginID)
	}
	if len(plug.Controllers) == 0 {
		return nil, structs.NewError(structs.CodeBadRequest,
			"plugin %q has no controller instance: start it as a controller or monolith plugin", pluginID)
	}
	var nodes []string
	capable := false
	for nodeID, info := range plug.Controllers {
		if info.ControllerInfo == nil || !need(info.ControllerInfo) {
			continue
		}
		capable = true
		node, err := s.State().NodeByID(nil, nodeID)
		if err != nil {
			return nil, err
		}
		if info.Healthy && node.Ready() {
			nodes = append(nodes, nodeID)
		}
	}
	if !capable {
		return nil, structs.NewError(structs.CodeBadRequest, "plugin %q does not support %s", pluginID, capName)
	}
	if len(nodes) == 0 {
		return nil, structs.NewError(structs.CodeUnavailable,
			"plugin %q has no healthy controller instance on a ready node; check `berth plugin status %s`", pluginID, pluginID)
	}
	sort.Strings(nodes)
	return nodes, nil
}

// onController runs call against each healthy controller instance in turn
// until one answers; only Unavailable (the instance or its client could
// not be reached, or the plugin says to retry) moves on to the next.
func (s *Server) onController(ctx context.Context, nodes []string, call func(ctx context.Context, nodeID string) error) error {
	var err error
	for _, nodeID := range nodes {
		if err = call(ctx, nodeID); err == nil || !errors.Is(err, structs.ErrUnavailable) || ctx.Err() != nil {
			return err
		}
		s.logger.Warn("controller instance unavailable; trying the next", "node_id", nodeID, "error", err)
	}
	return err
}
