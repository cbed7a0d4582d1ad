package server

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// registerNodes registers ready nodes running a node-only plugin; it
// returns the last registration's index.
func registerNodes(t *testing.T, s *Server, pluginID string, ids ...string) uint64 {
	t.Helper()
	var resp structs.NodeUpdateResponse
	for _, id := range ids {
		must.NoError(t, rpcCall(t, s, "Node.Register", &structs.NodeRegisterRequest{
			Node: statetest.NodeWithPlugin(id, pluginID, false, true, true)}, &resp))
	}
	return resp.Index
}

func TestNode_List_Pages(t *testing.T) {
	s := testServer(t)
	registerNodes(t, s, "hostpath", "n1", "n2", "n3", "n4", "n5")
	registerNodes(t, s, "hostpath", "other")

	list := func(prefix, from string, perPage int) ([]string, string) {
		t.Helper()
		var reply structs.NodeListResponse
		must.NoError(t, rpcCall(t, s, "Node.List", &structs.NodeListRequest{PerPage: perPage, NextToken: from,
			QueryOptions: structs.QueryOptions{Prefix: prefix}}, &reply))
		ids := []string{}
		for _, n := range reply.Nodes {
			ids = append(ids, n.ID)
		}
		return ids, reply.NextToken
	}
	ids, next := list("n", "", 2)
	must.Eq(t, []string{"n1", "n2"}, ids)
	must.Eq(t, "n3", next)
	ids, next = list("n", next, 2)
	must.Eq(t, []string{"n3", "n4"}, ids)
	must.Eq(t, "n5", next)
	ids, next = list("n", next, 2)
	must.Eq(t, []string{"n5"}, ids, must.Sprint("the prefix ends the page"))
	must.Eq(t, "", next)
	ids, next = list("", "", 0)
	must.SliceLen(t, 6, ids)
	must.Eq(t, "", next)

	err := rpcCall(t, s, "Node.List", &structs.NodeListRequest{PerPage: -1}, &structs.NodeListResponse{})
	must.ErrorIs(t, err, structs.ErrBadRequest)
	must.StrContains(t, err.Error(), "per_page")
}

func TestCSIPlugin_Get_PagesInstancesWithWholeCounts(t *testing.T) {
	s := testServer(t)
	registerNodes(t, s, "hostpath", "n1", "n2", "n3")

	var reply structs.CSIPluginGetResponse
	must.NoError(t, rpcCall(t, s, "CSIPlugin.Get", &structs.CSIPluginGetRequest{ID: "hostpath", PerPage: 2}, &reply))
	must.MapLen(t, 2, reply.Plugin.Nodes)
	must.MapContainsKeys(t, reply.Plugin.Nodes, []string{"n1", "n2"})
	must.Eq(t, "n3", reply.NextToken)
	must.Eq(t, [2]int{3, 3}, [2]int{reply.Plugin.NodesHealthy, reply.Plugin.NodesExpected}, must.Sprint("the counts are the whole plugin's"))

	reply = structs.CSIPluginGetResponse{}
	must.NoError(t, rpcCall(t, s, "CSIPlugin.Get", &structs.CSIPluginGetRequest{ID: "hostpath", PerPage: 2, NextToken: "n3"}, &reply))
	must.MapLen(t, 1, reply.Plugin.Nodes)
	must.MapContainsKey(t, reply.Plugin.Nodes, "n3")
	must.Eq(t, "", reply.NextToken)

	err := rpcCall(t, s, "CSIPlugin.Get", &structs.CSIPluginGetRequest{ID: "hostpath", PerPage: -2}, &structs.CSIPluginGetResponse{})
	must.ErrorIs(t, err, structs.ErrBadRequest)
	must.StrContains(t, err.Error(), `plugin "hostpath"`)
}

// A blocking read of one plugin answers with that plugin's index: another
// plugin's node joining does not end it, a node of its own does.
func TestCSIPlugin_Get_BlocksOnItsOwnPlugin(t *testing.T) {
	s := testServer(t)
	registerNodes(t, s, "hostpath", "n1")
	var first structs.CSIPluginGetResponse
	must.NoError(t, rpcCall(t, s, "CSIPlugin.Get", &structs.CSIPluginGetRequest{ID: "hostpath"}, &first))

	answer := make(chan structs.CSIPluginGetResponse, 1)
	go func() {
		var reply structs.CSIPluginGetResponse
		_ = rpcCall(t, s, "CSIPlugin.Get", &structs.CSIPluginGetRequest{ID: "hostpath",
			QueryOptions: structs.QueryOptions{MinQueryIndex: first.Index, MaxQueryTime: 10 * time.Second}}, &reply)
		answer <- reply
	}()
	registerNodes(t, s, "other", "o1", "o2")
	own := registerNodes(t, s, "hostpath", "n2")
	select {
	case got := <-answer:
		must.Eq(t, own, got.Index, must.Sprint("the answer is at the write of its own plugin"))
		must.Eq(t, 2, got.Plugin.NodesExpected)
	case <-time.After(15 * time.Second):
		t.Fatal("the blocking read did not wake for its plugin's new node")
	}
}
