package client

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/client/pluginmanager"
	"github.com/berth-csi/berth/structs"
)

func info(id string, healthy bool) *structs.CSIInfo {
	return &structs.CSIInfo{PluginID: id, Healthy: healthy, NodeInfo: &structs.CSINodeInfo{ID: "n"}}
}

func TestNodeUpdater_OnlyWhatChanged(t *testing.T) {
	u := newNodeUpdater(&Client{})

	u.pluginChanged(pluginmanager.Update{PluginID: "a", Node: info("a", true)})
	_, nodes, seq := u.fingerprint()
	must.MapContainsKey(t, nodes, "a")
	u.markRegistered(seq)
	must.MapEmpty(t, u.pending, must.Sprint("a registration carries every plugin"))

	// A flap that returns to what the servers have is not sent at all.
	u.pluginChanged(pluginmanager.Update{PluginID: "a", Node: info("a", false)})
	must.MapContainsKey(t, u.pending, "a")
	u.pluginChanged(pluginmanager.Update{PluginID: "a", Node: info("a", true)})
	must.MapEmpty(t, u.pending)

	// Several changes to one plugin coalesce into its latest state.
	u.pluginChanged(pluginmanager.Update{PluginID: "b", Node: info("b", false)})
	u.pluginChanged(pluginmanager.Update{PluginID: "b", Node: info("b", true),
		Event: &structs.NodeEvent{Message: `plugin "b" became healthy`}})
	must.MapLen(t, 1, u.pending)
	must.True(t, u.pending["b"].update.Node.Healthy)
	must.SliceLen(t, 1, u.events)

	// A change made while a send is in flight is not acked by it.
	sent := u.seq
	u.pluginChanged(pluginmanager.Update{PluginID: "c", Node: info("c", true)})
	u.mu.Lock()
	u.ackLocked(sent, true)
	u.mu.Unlock()
	must.MapContainsKey(t, u.acked, "b")
	must.MapContainsKey(t, u.pending, "c")
	must.SliceEmpty(t, u.events)

	// Removal: both sides nil leaves nothing acked for the plugin.
	u.pluginChanged(pluginmanager.Update{PluginID: "b"})
	u.mu.Lock()
	u.ackLocked(u.seq, true)
	u.mu.Unlock()
	must.MapNotContainsKey(t, u.acked, "b")
	_, nodes, _ = u.fingerprint()
	must.MapNotContainsKey(t, nodes, "b")
	must.MapContainsKey(t, nodes, "c")
}
