package server

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/berth-csi/berth/structs"
)

// controllerCallTimeout bounds one controller call made for a user's request.
const controllerCallTimeout = 2 * time.Minute

// maxControllerTries is how many healthy controller instances a call
// without a near node or topology lists, to try in turn: the first that
// answers serves it, so a fleet of thousands of monolith instances is not
// walked whole for each call.
const maxControllerTries = 8

// controllerNodes lists the nodes running a healthy controller instance of
// a plugin, in node ID order, so calls keep going to the same instance
// while it stays healthy: at most limit of them (0: all). need says which
// capability the call needs; an instance without it is skipped, and when
// none has it the error says so.
func (s *Server) controllerNodes(pluginID string, need func(*structs.CSIControllerInfo) bool, capName string, limit int) ([]string, error) {
	st := s.State()
	plug, err := st.CSIPluginByID(nil, pluginID)
	if err != nil {
		return nil, err
	}
	if plug == nil {
		return nil, structs.NewError(structs.CodeBadRequest,
			"plugin %q is not running on any node; check plugin_id or start the plugin first", pluginID)
	}
	if plug.ControllersExpected == 0 {
		return nil, structs.NewError(structs.CodeBadRequest,
			"plugin %q has no controller instance: start it as a controller or monolith plugin", pluginID)
	}
	iter, err := st.CSIPluginNodes(nil, pluginID)
	if err != nil {
		return nil, err
	}
	var nodes []string
	capable := false
	for raw := iter.Next(); raw != nil && (limit == 0 || len(nodes) < limit); raw = iter.Next() {
		node := raw.(*structs.Node)
		info := node.CSIControllerPlugins[pluginID]
		if info == nil || info.ControllerInfo == nil || !need(info.ControllerInfo) {
			continue
		}
		capable = true
		if info.Healthy && node.Ready() {
			nodes = append(nodes, node.ID)
		}
	}
	if !capable {
		return nil, structs.NewError(structs.CodeBadRequest, "plugin %q does not support %s", pluginID, capName)
	}
	if len(nodes) == 0 {
		return nil, structs.NewError(structs.CodeUnavailable,
			"plugin %q has no healthy controller instance on a ready node; check `berth plugin status %s`", pluginID, pluginID)
	}
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

// controllerCap is a controller capability a call needs: has reports
// whether an instance offers it, name says which it is in errors.
type controllerCap struct {
	name string
	has  func(*structs.CSIControllerInfo) bool
}

var (
	capCreateDelete = controllerCap{"creating and deleting volumes (CREATE_DELETE_VOLUME)",
		func(c *structs.CSIControllerInfo) bool { return c.SupportsCreateDelete }}
	capSnapshot = controllerCap{"snapshots (CREATE_DELETE_SNAPSHOT)",
		func(c *structs.CSIControllerInfo) bool { return c.SupportsCreateDeleteSnapshot }}
	capListSnapshots = controllerCap{"listing snapshots (LIST_SNAPSHOTS)",
		func(c *structs.CSIControllerInfo) bool { return c.SupportsListSnapshots }}
	capListVolumes = controllerCap{"listing volumes (LIST_VOLUMES)",
		func(c *structs.CSIControllerInfo) bool { return c.SupportsListVolumes }}
	capExpand = controllerCap{"expanding volumes (EXPAND_VOLUME)",
		func(c *structs.CSIControllerInfo) bool { return c.SupportsExpand }}
	capAttach = controllerCap{"publishing volumes to nodes (PUBLISH_UNPUBLISH_VOLUME)",
		func(c *structs.CSIControllerInfo) bool { return c.SupportsAttachDetach }}
	capClone = controllerCap{"cloning volumes (CREATE_DELETE_VOLUME and CLONE_VOLUME)",
		func(c *structs.CSIControllerInfo) bool { return c.SupportsCreateDelete && c.SupportsClone }}
	// capAny is for the calls every controller serves (ValidateVolumeCapabilities).
	capAny = controllerCap{"a controller service", func(*structs.CSIControllerInfo) bool { return true }}
)

// publishes reports whether a volume's plugin publishes volumes to nodes
// through its controller (ControllerPublish/Unpublish): it requires a
// controller and one of its instances offers PUBLISH_UNPUBLISH_VOLUME.
func (s *Server) publishes(vol *structs.CSIVolume) (bool, error) {
	if !vol.ControllerRequired {
		return false, nil
	}
	plug, err := s.State().CSIPluginByID(nil, vol.PluginID)
	if err != nil {
		return false, err
	}
	return plug.PublishesThroughController(), nil
}

// controllerCall is one ClientCSI call to a controller instance of a
// plugin. node and opts point into args: the call routes by *node, and
// opts carries the forwarding mark between servers.
type controllerCall struct {
	plugin      string
	need        controllerCap
	method      string // the ClientCSI method, relayed as the same name
	node        *string
	opts        *structs.QueryOptions
	args, reply any
	// volume and near, when set, order the instances: the one on node
	// near first, then those whose node is inside the volume's
	// topologies. A plugin whose instances each serve only their own
	// node's volumes (node-local storage) then gets the call on the
	// instance that can serve it; the others stay as fallbacks.
	volume *structs.CSIVolume
	near   string
}

// callController makes the call on the healthy controller instances with
// the capability, in their stable order, until one answers.
func (s *Server) callController(ctx context.Context, c controllerCall) error {
	limit := maxControllerTries
	if c.near != "" || c.volume != nil && len(c.volume.Topologies) > 0 {
		limit = 0 // preferNear orders and filters them all
	}
	nodes, err := s.controllerNodes(c.plugin, c.need.has, c.need.name, limit)
	if err != nil {
		return err
	}
	if nodes, err = s.preferNear(nodes, c); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, controllerCallTimeout)
	defer cancel()
	return s.onController(ctx, nodes, func(ctx context.Context, nodeID string) error {
		*c.node = nodeID
		c.opts.Forwarded = false
		return s.callClient(ctx, nodeID, c.method, c.method, c.opts, c.args, c.reply)
	})
}

// preferNear orders nodes (sorted) for the call: its near node first,
// then the nodes inside its volume's topologies, each part in the given
// order. A node whose own instance of the plugin is outside the volume's
// topologies is dropped: it cannot reach the volume, and a call there
// would fail (NotFound) or, for a publish, fall to the wrong node. When no
// instance is left the call is Unavailable, naming the volume.
func (s *Server) preferNear(nodes []string, c controllerCall) ([]string, error) {
	if c.near == "" && (c.volume == nil || len(c.volume.Topologies) == 0) {
		return nodes, nil
	}
	const outside = 3
	rank := func(nodeID string) int {
		inside := false
		if c.volume != nil && len(c.volume.Topologies) > 0 {
			node, err := s.State().NodeByID(nil, nodeID)
			if err != nil || node == nil {
				return outside
			}
			if info := node.CSINodePlugins[c.plugin]; info != nil && info.NodeInfo != nil {
				if !c.volume.AccessibleFrom(info.NodeInfo.AccessibleTopology) {
					return outside
				}
				inside = true
			}
		}
		switch {
		case nodeID == c.near:
			return 0
		case inside:
			return 1
		}
		return 2
	}
	kept := nodes[:0:0]
	for _, n := range nodes {
		if rank(n) != outside {
			kept = append(kept, n)
		}
	}
	if len(kept) == 0 {
		return nil, structs.NewError(structs.CodeUnavailable,
			"volume %q: no healthy controller instance of plugin %q runs inside its topology; check `berth plugin status %s`",
			c.volume.ID, c.plugin, c.plugin)
	}
	sort.SliceStable(kept, func(i, j int) bool { return rank(kept[i]) < rank(kept[j]) })
	return kept, nil
}
