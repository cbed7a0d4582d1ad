package api

import (
	"fmt"
	"net/http"

	"github.com/berth-csi/berth/structs"
)

// UpdateDrain starts a drain of the node with the full ID id (spec set),
// replaces the one under way, or cancels it (spec nil): PUT
// /v1/node/:id/drain. A cancelled drain leaves the node ineligible; see
// UpdateEligibility.
func (n *Nodes) UpdateDrain(id string, spec *structs.DrainSpec) (*structs.NodeDrainUpdateResponse, *WriteMeta, error) {
	if id == "" {
		return nil, nil, fmt.Errorf("api: node drain: no node ID given")
	}
	body := struct{ DrainSpec *structs.DrainSpec }{DrainSpec: spec}
	var out structs.NodeDrainUpdateResponse
	wm, err := n.c.write(http.MethodPut, "/v1/node/"+escape(id)+"/drain", nil, body, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, wm, nil
}

// UpdateEligibility marks the node with the full ID id eligible or not for
// new placements: PUT /v1/node/:id/eligibility. A draining node cannot be
// made eligible (an error matching structs.ErrConflict).
func (n *Nodes) UpdateEligibility(id string, eligible bool) (*structs.NodeEligibilityUpdateResponse, *WriteMeta, error) {
	if id == "" {
		return nil, nil, fmt.Errorf("api: node eligibility: no node ID given")
	}
	e := structs.NodeSchedulingIneligible
	if eligible {
		e = structs.NodeSchedulingEligible
	}
	body := struct{ Eligibility string }{Eligibility: e}
	var out structs.NodeEligibilityUpdateResponse
	wm, err := n.c.write(http.MethodPut, "/v1/node/"+escape(id)+"/eligibility", nil, body, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, wm, nil
}
