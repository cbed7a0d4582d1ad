package server

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// nextEvents long-polls Event.Next after index until done says stop, and
// returns every event received.
func nextEvents(t *testing.T, s *Server, topics map[structs.EventTopic][]string, index uint64,
	done func([]structs.Event) bool) []structs.Event {
	t.Helper()
	var got []structs.Event
	deadline := time.Now().Add(60 * time.Second)
	for !done(got) {
		must.True(t, time.Now().Before(deadline), must.Sprintf("events so far: %v", eventTypes(got)))
		var reply structs.EventNextResponse
		must.NoError(t, rpcCall(t, s, "Event.Next", &structs.EventNextRequest{Topics: topics, Index: index,
			MaxWait: 5 * time.Second}, &reply))
		must.GreaterEq(t, index, reply.Index, must.Sprint("the next index never goes back"))
		got = append(got, reply.Events...)
		index = reply.Index
	}
	return got
}

func eventTypes(evs []structs.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

// TestEvent_Next_ClaimWholeLife: on a real raft, a writer's claim is taken
// with its placement; its node goes down (the alloc is lost, and the claim
// released in the same write), and the leader's volumewatcher drives it
// through node detach (the node is gone: skipped) and controller detach
// (the plugin has no controller) to freed. Every step is an event of its
// own on the volume's key, in order, at increasing indexes.
func TestEvent_Next_ClaimWholeLife(t *testing.T) {
	s := schedWorld(t)
	var start structs.EventNextResponse
	must.NoError(t, rpcCall(t, s, "Event.Next", &structs.EventNextRequest{}, &start))
	must.SliceEmpty(t, start.Events, must.Sprint("index 0 starts from now"))
	must.Positive(t, start.Index)

	var reg structs.JobRegisterResponse
	must.NoError(t, rpcCall(t, s, "Job.Register", &structs.JobRegisterRequest{Job: writerJob("first", "data")}, &reg))
	must.SliceLen(t, 1, reg.Placed)
	alloc := reg.Placed[0]
	var upd structs.NodeUpdateResponse
	must.NoError(t, rpcCall(t, s, "Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: alloc.NodeID,
		Status: structs.NodeStatusDown}, &upd))

	ofAlloc := func(evs []structs.Event) []structs.Event {
		var out []structs.Event
		for _, e := range evs {
			if e.Payload.Claim != nil && e.Payload.Claim.AllocID == alloc.ID {
				out = append(out, e)
			}
		}
		return out
	}
	volumeTopic := map[structs.EventTopic][]string{structs.TopicCSIVolume: {"data"}}
	evs := ofAlloc(nextEvents(t, s, volumeTopic, start.Index, func(evs []structs.Event) bool {
		claims := ofAlloc(evs)
		return len(claims) > 0 && claims[len(claims)-1].Type == structs.EventClaimFreed
	}))
	must.Eq(t, []string{structs.EventClaimTaken, structs.EventClaimUnpublishing, structs.EventClaimNodeDetached,
		structs.EventClaimControllerDetached, structs.EventClaimFreed}, eventTypes(evs))
	for i, e := range evs {
		must.EqOp(t, structs.TopicCSIVolume, e.Topic)
		must.EqOp(t, "data", e.Key)
		must.EqOp(t, structs.DefaultNamespace, e.Namespace)
		must.EqOp(t, alloc.NodeID, e.Payload.Claim.NodeID)
		must.EqOp(t, "hostpath", e.Payload.Claim.PluginID)
		must.EqOp(t, structs.CSIVolumeClaimState(i), e.Payload.Claim.State)
		if i > 0 {
			must.Greater(t, evs[i-1].Index, e.Index, must.Sprintf("%s after %s", e.Type, evs[i-1].Type))
		}
	}
	t.Logf("figure: one claim's life on the stream: %v", eventTypes(evs))
}

// A key filter passes only its key; other topics are not sent.
func TestEvent_Next_TopicAndKeyFilter(t *testing.T) {
	s := schedWorld(t)
	var reply structs.EventNextResponse
	must.NoError(t, rpcCall(t, s, "Event.Next", &structs.EventNextRequest{Index: 1,
		Topics: map[structs.EventTopic][]string{structs.TopicNode: {"node-2"}}}, &reply))
	must.SliceNotEmpty(t, reply.Events)
	for _, e := range reply.Events {
		must.EqOp(t, structs.TopicNode, e.Topic)
		must.EqOp(t, "node-2", e.Key)
		must.EqOp(t, "node-2", e.Payload.Node.ID)
		must.EqOp(t, "", e.Payload.Node.SecretHash)
	}

	err := rpcCall(t, s, "Event.Next", &structs.EventNextRequest{Topics: map[structs.EventTopic][]string{"Volume": nil}},
		&structs.EventNextResponse{})
	must.ErrorIs(t, err, structs.ErrBadRequest)
	must.ErrorContains(t, err, `topic "Volume" is not one of`)
}

// A token sees only the topics it may read: asking for another is 403
// naming the topic; asking for all gets the readable ones.
func TestEvent_Next_ACL(t *testing.T) {
	s, mgmt := aclServer(t)
	walkSeed(t, s, mgmt)
	nodeReader := makeToken(t, s, mgmt, "node-reader", `node { policy = "read" }`)

	err := callAs(t, s, nodeReader, "Event.Next", &structs.EventNextRequest{Index: 1,
		Topics: map[structs.EventTopic][]string{structs.TopicCSIVolume: {"data"}}}, &structs.EventNextResponse{})
	must.ErrorIs(t, err, structs.ErrPermissionDenied)
	must.ErrorContains(t, err, `capability "csi-read-volume" in namespace "default", which topic CSIVolume needs`)

	var reply structs.EventNextResponse
	must.NoError(t, callAs(t, s, nodeReader, "Event.Next", &structs.EventNextRequest{Index: 1}, &reply))
	must.SliceNotEmpty(t, reply.Events)
	for _, e := range reply.Events {
		must.EqOp(t, structs.TopicNode, e.Topic)
	}

	err = callAs(t, s, "", "Event.Next", &structs.EventNextRequest{Index: 1}, &structs.EventNextResponse{})
	must.ErrorIs(t, err, structs.ErrPermissionDenied)
	must.ErrorContains(t, err, "token may read none of the event topics")

	// Namespace "*": the namespaces the token may read the topic in.
	volReader := makeToken(t, s, mgmt, "vol-reader", `namespace "other" {
  capabilities = ["csi-read-volume"]
}`)
	reply = structs.EventNextResponse{}
	must.NoError(t, callAs(t, s, volReader, "Event.Next", &structs.EventNextRequest{Index: 1,
		Topics:       map[structs.EventTopic][]string{structs.TopicCSIVolume: nil},
		QueryOptions: structs.QueryOptions{Namespace: "*"}}, &reply))
	must.SliceEmpty(t, reply.Events, must.Sprint("the only volume is in default"))
}

// A plugin's event carries its row, with its counts: no instance and no
// allocation, so nothing of a namespace the token may not read (a plugin
// runs the jobs of every namespace), and nothing that grows with the
// fleet.
func TestEvent_Next_PluginEventCarriesCountsOnly(t *testing.T) {
	s, mgmt := aclServer(t)
	nodes := map[string]string{"node-1": "plugin-default", "node-2": "plugin-prod"}
	register := func(healthy bool) {
		for id, alloc := range nodes {
			node := statetest.NodeWithPlugin(id, "hostpath", false, true, healthy)
			node.CSINodePlugins["hostpath"].AllocID = alloc
			must.NoError(t, callAs(t, s, id+"-secret", "Node.Register", &structs.NodeRegisterRequest{Node: node}, &structs.NodeUpdateResponse{}))
		}
	}
	register(true)
	placeAllocs(t, s,
		volumeAlloc("plugin-default", "node-1", structs.DefaultNamespace, 0, "", false),
		volumeAlloc("plugin-prod", "node-2", "prod", 0, "", false))
	register(false)
	defaultReader := makeToken(t, s, mgmt, "default-reader",
		"plugin {\n  policy = \"read\"\n}\nnamespace \"default\" {\n  policy = \"read\"\n}\n")

	var reply structs.EventNextResponse
	must.NoError(t, callAs(t, s, defaultReader, "Event.Next", &structs.EventNextRequest{Index: 1,
		Topics: map[structs.EventTopic][]string{structs.TopicCSIPlugin: nil}}, &reply))
	must.SliceNotEmpty(t, reply.Events)
	last := reply.Events[len(reply.Events)-1].Payload.Plugin
	must.Eq(t, [2]int{0, 2}, [2]int{last.NodesHealthy, last.NodesExpected}, must.Sprint("both nodes now report it unhealthy"))
	for _, e := range reply.Events {
		must.SliceEmpty(t, e.Payload.Plugin.Allocations)
		must.MapEmpty(t, e.Payload.Plugin.Nodes)
	}
}
