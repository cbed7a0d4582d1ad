package httpapi

import (
	"net/http"

	"github.com/berth-csi/berth/structs"
)

// nodeDrainRoutes registers the node drain and eligibility routes: writes
// that need node write (or a management token) when ACLs are on.
func (h *handler) nodeDrainRoutes() {
	h.handle("/v1/node/{id}/drain", route{
		http.MethodPut:  h.nodeDrain,
		http.MethodPost: h.nodeDrain,
	})
	h.handle("/v1/node/{id}/eligibility", route{
		http.MethodPut:  h.nodeEligibility,
		http.MethodPost: h.nodeEligibility,
	})
}

// nodeDrainBody is PUT /v1/node/:id/drain's body.
type nodeDrainBody struct {
	// DrainSpec starts (or replaces) the drain; null cancels it.
	DrainSpec *structs.DrainSpec
}

// PUT /v1/node/:id/drain with {"DrainSpec": {"Deadline": ns,
// "IgnoreSystemJobs": bool}} starts a drain, {"DrainSpec": null} cancels
// it. The answer is {"NodeModifyIndex", "Index"}.
func (h *handler) nodeDrain(w http.ResponseWriter, r *http.Request) error {
	var body nodeDrainBody
	if err := decodeBody(r, w, `object {"DrainSpec": {"Deadline": 3600000000000, "IgnoreSystemJobs": false}} (or {"DrainSpec": null} to cancel)`, &body); err != nil {
		return err
	}
	args := structs.NodeUpdateDrainRequest{NodeID: r.PathValue("id"), DrainSpec: body.DrainSpec}
	var reply structs.NodeDrainUpdateResponse
	if err := h.rpc(r, "Node.UpdateDrain", &args, &reply); err != nil {
		return err
	}
	setIndex(w, reply.Index)
	return writeJSON(w, r, &reply)
}

// nodeEligibilityBody is PUT /v1/node/:id/eligibility's body.
type nodeEligibilityBody struct {
	Eligibility string // "eligible" or "ineligible"
}

// PUT /v1/node/:id/eligibility with {"Eligibility": "eligible"} or
// "ineligible". The answer is {"NodeModifyIndex", "Index"}.
func (h *handler) nodeEligibility(w http.ResponseWriter, r *http.Request) error {
	var body nodeEligibilityBody
	if err := decodeBody(r, w, `object {"Eligibility": "eligible"} (or "ineligible")`, &body); err != nil {
		return err
	}
	if !structs.ValidNodeEligibility(body.Eligibility) {
		return badRequest(`request body: Eligibility %q is not "eligible" or "ineligible"`, body.Eligibility)
	}
	args := structs.NodeUpdateEligibilityRequest{NodeID: r.PathValue("id"), Eligibility: body.Eligibility}
	var reply structs.NodeEligibilityUpdateResponse
	if err := h.rpc(r, "Node.UpdateEligibility", &args, &reply); err != nil {
		return err
	}
	setIndex(w, reply.Index)
	return writeJSON(w, r, &reply)
}
