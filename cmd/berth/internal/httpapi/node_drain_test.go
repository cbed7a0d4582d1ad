package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"github.com/shoenig/test/wait"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/server/servertest"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// TestNodeDrain_BadBodies: a body the routes cannot take is a 400 that
// says what to send, and no RPC is made.
func TestNodeDrain_BadBodies(t *testing.T) {
	cases := []struct {
		name, target, body, says string
	}{
		{"deadline as text", "/v1/node/n1/drain", `{"DrainSpec": {"Deadline": "1h"}}`, "DrainSpec.Deadline must be"},
		{"a step", "/v1/node/n1/drain", `{"DrainSpec": null, "Step": {"Complete": true}}`, `"Step"`},
		{"no body", "/v1/node/n1/drain", ``, `{"DrainSpec": {"Deadline": 3600000000000`},
		{"unknown eligibility", "/v1/node/n1/eligibility", `{"Eligibility": "maybe"}`, `Eligibility "maybe" is not "eligible" or "ineligible"`},
		{"no eligibility", "/v1/node/n1/eligibility", `{}`, `Eligibility "" is not`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := &fakeBackend{}
			rec := do(t, b, http.MethodPut, c.target, c.body)
			must.EqOp(t, http.StatusBadRequest, rec.Code, must.Sprint(rec.Body.String()))
			var e struct{ Code, Message string }
			must.NoError(t, json.Unmarshal(rec.Body.Bytes(), &e))
			must.EqOp(t, "BadRequest", e.Code)
			must.StrContains(t, e.Message, c.says)
			must.Zero(t, b.count())
		})
	}
	mustNotAllowed(t, http.MethodGet, "/v1/node/n1/drain", "POST, PUT")

	// The servers' refusal of eligibility for a draining node is a 409.
	b := &fakeBackend{err: structs.NewError(structs.CodeConflict, "node n1 is draining and cannot be made eligible")}
	rec := do(t, b, http.MethodPut, "/v1/node/n1/eligibility", `{"Eligibility": "eligible"}`)
	must.EqOp(t, http.StatusConflict, rec.Code)
	var apiErr struct{ Code, Message string }
	must.NoError(t, json.Unmarshal(rec.Body.Bytes(), &apiErr))
	must.EqOp(t, "Conflict", apiErr.Code)
	args := b.last(t).args.(*structs.NodeUpdateEligibilityRequest)
	must.EqOp(t, "n1", args.NodeID)
	must.EqOp(t, structs.NodeSchedulingEligible, args.Eligibility)
	mustNotAllowed(t, http.MethodDelete, "/v1/node/n1/eligibility", "POST, PUT")
}

// TestNodeDrain_RealServer: the api client's drain and eligibility
// writes, through the HTTP API to a real server: the node turns
// ineligible and back, and
// the drain (of a node with nothing to stop) completes and leaves it
// ineligible; an unknown node is a 404.
func TestNodeDrain_RealServer(t *testing.T) {
	cluster := servertest.Cluster(t, 1)
	s := cluster.Servers[0]
	srv := httptest.NewServer(New(s.Server, testLogger(t)))
	t.Cleanup(srv.Close)
	c, err := api.NewClient(api.Config{Address: srv.URL})
	must.NoError(t, err)
	must.NoError(t, s.RPC(t.Context(), "Node.Register", &structs.NodeRegisterRequest{Node: statetest.Node("node-1"),
		WriteRequest: structs.WriteRequest{AuthToken: "5ec2e7e5-0000-4000-8000-000000000009"}}, &structs.NodeUpdateResponse{}))

	resp, wm, err := c.Nodes().UpdateEligibility("node-1", false)
	must.NoError(t, err)
	must.Positive(t, resp.NodeModifyIndex)
	must.EqOp(t, resp.NodeModifyIndex, wm.LastIndex)
	n, _, err := c.Nodes().Info("node-1", nil)
	must.NoError(t, err)
	must.EqOp(t, structs.NodeSchedulingIneligible, n.SchedulingEligibility)
	must.NoError(t, func() error { _, _, err := c.Nodes().UpdateEligibility("node-1", true); return err }())

	// A drain with a long deadline: nothing runs on the node, so the
	// leader's drainer completes it at once.
	dresp, _, err := c.Nodes().UpdateDrain("node-1", &structs.DrainSpec{Deadline: time.Hour})
	must.NoError(t, err)
	must.Positive(t, dresp.NodeModifyIndex)
	must.Wait(t, wait.InitialSuccess(wait.BoolFunc(func() bool {
		n, _, err = c.Nodes().Info("node-1", &api.QueryOptions{WaitIndex: dresp.NodeModifyIndex, WaitTime: time.Second})
		must.NoError(t, err)
		return n.DrainStrategy == nil
	}), wait.Timeout(20*time.Second), wait.Gap(time.Millisecond)), must.Sprint("the drain never completed"))
	must.EqOp(t, structs.NodeSchedulingIneligible, n.SchedulingEligibility)
	last := n.Events[len(n.Events)-1]
	must.EqOp(t, structs.NodeEventSubsystemDrain, last.Subsystem)
	must.StrHasPrefix(t, "drain complete", last.Message)

	// The list shows it, with no drain any more.
	stubs, _, err := c.Nodes().List(nil)
	must.NoError(t, err)
	must.SliceLen(t, 1, stubs)
	must.EqOp(t, structs.NodeSchedulingIneligible, stubs[0].SchedulingEligibility)
	must.False(t, stubs[0].Drain)

	_, _, err = c.Nodes().UpdateDrain("gone", nil)
	var ae *api.Error
	must.ErrorAs[*api.Error](t, err, &ae)
	must.EqOp(t, http.StatusNotFound, ae.StatusCode)
}
