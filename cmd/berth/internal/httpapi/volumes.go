package httpapi

import (
	"net/http"

	"github.com/berth-csi/berth/structs"
)

// GET /v1/volumes?type=csi[&plugin_id=&node_id=&prefix=]: the volume stubs.
func (h *handler) volumeList(w http.ResponseWriter, r *http.Request) error {
	if err := checkTypeCSI(r); err != nil {
		return err
	}
	args := structs.CSIVolumeListRequest{
		PluginID: r.URL.Query().Get("plugin_id"),
		NodeID:   r.URL.Query().Get("node_id"),
	}
	if err := parseQueryOptions(r, &args.QueryOptions); err != nil {
		return err
	}
	var reply structs.CSIVolumeListResponse
	if err := h.rpc(r, "CSIVolume.List", &args, &reply); err != nil {
		return err
	}
	setQueryMeta(w, &reply.QueryMeta)
	if reply.Volumes == nil {
		reply.Volumes = []*structs.CSIVolumeListStub{}
	}
	return writeJSON(w, r, reply.Volumes)
}

// GET /v1/volume/csi/:id: one volume, 404 when it does not exist. The
// server sanitizes it (no secrets, mount flags redacted).
func (h *handler) volumeGet(w http.ResponseWriter, r *http.Request) error {
	args := structs.CSIVolumeGetRequest{ID: r.PathValue("id")}
	if err := parseQueryOptions(r, &args.QueryOptions); err != nil {
		return err
	}
	var reply structs.CSIVolumeGetResponse
	if err := h.rpc(r, "CSIVolume.Get", &args, &reply); err != nil {
		return err
	}
	setQueryMeta(w, &reply.QueryMeta)
	if reply.Volume == nil {
		return notFound("volume %q not found; list volumes with GET /v1/volumes?type=csi", args.ID)
	}
	return writeJSON(w, r, reply.Volume)
}

// PUT /v1/volume/csi/:id with {"Volumes": [...]}: register. A volume with no
// ID takes the URL's; one with another ID is refused.
func (h *handler) volumeRegister(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	var args structs.CSIVolumeRegisterRequest
	if err := decodeBody(r, w, `object {"Volumes": [...]}`, &args); err != nil {
		return err
	}
	writeNamespace(r, &args.WriteRequest)
	if len(args.Volumes) == 0 {
		return badRequest(`volume %q: request body has no volumes; send {"Volumes": [{"ID": %q, ...}]}`, id, id)
	}
	for i, v := range args.Volumes {
		if v == nil {
			return badRequest("volume %q: request body's Volumes[%d] is null", id, i)
		}
		if v.ID == "" {
			v.ID = id
		}
		if v.ID != id {
			return badRequest("volume ID %q in the request body does not match %q in the URL; register each volume at its own URL", v.ID, id)
		}
		if v.Namespace == "" {
			v.Namespace = args.Namespace
		}
	}
	var reply structs.CSIVolumeRegisterResponse
	if err := h.rpc(r, "CSIVolume.Register", &args, &reply); err != nil {
		return err
	}
	setIndex(w, reply.Index)
	return writeJSON(w, r, &reply)
}

// DELETE /v1/volume/csi/:id[?force=true]: deregister.
func (h *handler) volumeDeregister(w http.ResponseWriter, r *http.Request) error {
	args := structs.CSIVolumeDeregisterRequest{VolumeIDs: []string{r.PathValue("id")}}
	if q := r.URL.Query(); q.Has("force") {
		force, err := parseFlag(q.Get("force"))
		if err != nil {
			return badRequest("query parameter force=%q must be true or false", q.Get("force"))
		}
		args.Force = force
	}
	writeNamespace(r, &args.WriteRequest)
	var reply structs.CSIVolumeDeregisterResponse
	if err := h.rpc(r, "CSIVolume.Deregister", &args, &reply); err != nil {
		return err
	}
	setIndex(w, reply.Index)
	return writeJSON(w, r, &reply)
}

// POST|PUT /v1/volume/csi/:id/claim with a CSIVolumeClaimRequest: take or
// move a claim. For tools and tests; allocations claim through the
// scheduler.
func (h *handler) volumeClaim(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	var args structs.CSIVolumeClaimRequest
	if err := decodeBody(r, w, "claim request object", &args); err != nil {
		return err
	}
	writeNamespace(r, &args.WriteRequest)
	if args.VolumeID == "" {
		args.VolumeID = id
	}
	if args.VolumeID != id {
		return badRequest("claim request's VolumeID %q does not match volume %q in the URL", args.VolumeID, id)
	}
	var reply structs.CSIVolumeClaimResponse
	if err := h.rpc(r, "CSIVolume.Claim", &args, &reply); err != nil {
		return err
	}
	setIndex(w, reply.Index)
	return writeJSON(w, r, &reply)
}
