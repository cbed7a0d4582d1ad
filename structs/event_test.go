package structs

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// An answer of Event.Next crosses the RPC in msgpack and reaches the HTTP
// API unchanged; a claim's payload shows the claim's fields beside the
// volume's, in JSON too.
func TestEvent_RoundTrip_ClaimPayload(t *testing.T) {
	next := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	in := EventNextResponse{Index: 42, Events: []Event{{
		Topic: TopicCSIVolume, Type: EventClaimReleaseRetry, Key: "data", Namespace: DefaultNamespace, Index: 42,
		Payload: EventPayload{Claim: &CSIVolumeClaimEvent{VolumeID: "data", Namespace: DefaultNamespace, PluginID: "hostpath",
			CSIVolumeClaim: CSIVolumeClaim{AllocID: "a1", NodeID: "n1", Mode: CSIVolumeClaimWrite,
				State: CSIVolumeClaimStateUnpublishing, Attempts: 2, LastError: "node n1 unreachable", NextAttemptAt: next}}},
	}}}
	buf, err := Encode(0, &in)
	must.NoError(t, err)
	var out EventNextResponse
	must.NoError(t, Decode(buf[1:], &out))
	must.Eq(t, in, out)

	js, err := json.Marshal(out.Events[0])
	must.NoError(t, err)
	var shown map[string]any
	must.NoError(t, json.Unmarshal(js, &shown))
	claim := shown["Payload"].(map[string]any)["Claim"].(map[string]any)
	must.EqOp(t, "unpublishing", claim["State"].(string))
	must.EqOp(t, "a1", claim["AllocID"].(string))
	must.EqOp(t, "hostpath", claim["PluginID"].(string))
	must.MapNotContainsKey(t, shown["Payload"].(map[string]any), "Volume", must.Sprint("only the payload's one object is shown"))
}

func TestParseEventTopic(t *testing.T) {
	cases := []struct {
		in      string
		topic   EventTopic
		key     string
		wantErr string
	}{
		{"CSIVolume", TopicCSIVolume, "*", ""},
		{"CSIVolume:data", TopicCSIVolume, "data", ""},
		{"Node:n1:x", TopicNode, "n1:x", ""},
		{"*", TopicAll, "*", ""},
		{"Volume", "", "", `topic "Volume" is not one of Node, Job, Allocation, CSIVolume, CSIPlugin, or * for all`},
		{"Job:", "", "", "names an empty key"},
		{"*:x", "", "", "* takes no key"},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			topic, key, err := ParseEventTopic(tc.in)
			if tc.wantErr != "" {
				must.ErrorIs(t, err, ErrBadRequest)
				must.ErrorContains(t, err, tc.wantErr)
				return
			}
			must.NoError(t, err)
			must.EqOp(t, tc.topic, topic)
			must.EqOp(t, tc.key, key)
		})
	}
}

func TestClaimEventType(t *testing.T) {
	must.EqOp(t, EventClaimTaken, ClaimEventType(CSIVolumeClaimStateTaken))
	must.EqOp(t, EventClaimControllerDetached, ClaimEventType(CSIVolumeClaimStateControllerDetached))
	must.EqOp(t, EventClaimFreed, ClaimEventType(CSIVolumeClaimStateFreed))
	must.EqOp(t, "ClaimCSIVolumeClaimState(9)", ClaimEventType(9))
}

// A node's payload leaves out the hash of its secret and shares the row's
// maps and lists (rows read from state are never changed): a node's every
// write would otherwise copy its plugins and events for the event alone.
func TestNode_Sanitized_ShallowWithoutTheSecret(t *testing.T) {
	n := &Node{ID: "n1", SecretHash: "hash-XYZ", CSINodePlugins: map[string]*CSIInfo{"p": {PluginID: "p"}},
		Events: []*NodeEvent{{Message: "registered"}}}
	c := n.Sanitized()
	must.EqOp(t, "", c.SecretHash)
	must.EqOp(t, "hash-XYZ", n.SecretHash, must.Sprint("the row keeps it"))
	must.EqOp(t, "n1", c.ID)
	must.True(t, c.CSINodePlugins["p"] == n.CSINodePlugins["p"], must.Sprint("the plugins are the row's, not copies"))
	must.True(t, c.Events[0] == n.Events[0], must.Sprint("the events are the row's, not copies"))
	must.Nil(t, (*Node)(nil).Sanitized())
}
