package client

import (
	"context"
	"slices"

	"github.com/berth-csi/berth/client/dynamicplugins"
)

// forgetPluginConns closes the pooled connections of a plugin once it is
// deregistered, or of the sockets it no longer uses when its registration
// is replaced, until ctx ends. (The plugin task's client restarts and
// gRPC's reconnect cover a plugin that restarts on the same socket.)
func (c *Client) forgetPluginConns(ctx context.Context) {
	sockets := map[string][]string{} // registration (PluginInfo.Key) -> its sockets
	for ev := range c.registry.Subscribe(ctx) {
		now := pluginSockets(ev.Plugin)
		if ev.Type == dynamicplugins.EventDeregistered {
			now = nil
		}
		for _, s := range sockets[ev.Plugin.Key()] {
			if !slices.Contains(now, s) && !c.socketInUse(s) {
				c.csiConns.Forget(s)
			}
		}
		sockets[ev.Plugin.Key()] = now
	}
}

// socketInUse reports whether a plugin registered now is called on socket
// (a late event of an earlier registration must not drop its connection).
func (c *Client) socketInUse(socket string) bool {
	for _, p := range c.registry.List() {
		if slices.Contains(pluginSockets(p), socket) {
			return true
		}
	}
	return false
}

// pluginSockets is the sockets plugin p is called on.
func pluginSockets(p *dynamicplugins.PluginInfo) []string {
	if p.ControllerSocket != "" && p.ControllerSocket != p.Socket {
		return []string{p.Socket, p.ControllerSocket}
	}
	return []string{p.Socket}
}
