package httpapi

import (
	"net/http"
	"strings"

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
	return writeJSON(w, r, nonNil(reply.Volumes))
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
	var args structs.CSIVolumeRegisterRequest
	if err := decodeBody(r, w, `object {"Volumes": [...]}`, &args); err != nil {
		return err
	}
	writeNamespace(r, &args.WriteRequest)
	if err := checkBodyVolumes(r.PathValue("id"), "register", args.Volumes, args.Namespace); err != nil {
		return err
	}
	var reply structs.CSIVolumeRegisterResponse
	if err := h.rpc(r, "CSIVolume.Register", &args, &reply); err != nil {
		return err
	}
	setIndex(w, reply.Index)
	return writeJSON(w, r, &reply)
}

// PUT /v1/volume/csi/:id/create with {"Volumes": [...]}: have a controller
// of the volume's plugin make it, then register it. The body is checked as
// register's is. The answer is the volumes as registered, sanitized.
func (h *handler) volumeCreate(w http.ResponseWriter, r *http.Request) error {
	var args structs.CSIVolumeCreateRequest
	if err := decodeBody(r, w, `object {"Volumes": [...]}`, &args); err != nil {
		return err
	}
	writeNamespace(r, &args.WriteRequest)
	if err := checkBodyVolumes(r.PathValue("id"), "create", args.Volumes, args.Namespace); err != nil {
		return err
	}
	var reply structs.CSIVolumeCreateResponse
	if err := h.rpc(r, "CSIVolume.Create", &args, &reply); err != nil {
		return err
	}
	setIndex(w, reply.Index)
	out := make([]*structs.CSIVolume, 0, len(reply.Volumes))
	for _, v := range reply.Volumes {
		if v != nil {
			// The server sanitizes them already; this keeps a slip there
			// from ever reaching a response.
			out = append(out, v.Sanitized())
		}
	}
	return writeJSON(w, r, out)
}

// checkBodyVolumes checks the volumes of a register or create body against
// the URL's id: a volume with no ID takes it, one with another is refused.
// Volumes without a namespace take the request's.
func checkBodyVolumes(id, verb string, vols []*structs.CSIVolume, namespace string) error {
	if len(vols) == 0 {
		return badRequest(`volume %q: request body has no volumes; send {"Volumes": [{"ID": %q, ...}]}`, id, id)
	}
	for i, v := range vols {
		if v == nil {
			return badRequest("volume %q: request body's Volumes[%d] is null", id, i)
		}
		if v.ID == "" {
			v.ID = id
		}
		if v.ID != id {
			return badRequest("volume ID %q in the request body does not match %q in the URL; %s each volume at its own URL", v.ID, id, verb)
		}
		if v.Namespace == "" {
			v.Namespace = namespace
		}
	}
	return nil
}

// DELETE /v1/volume/csi/:id[?force=true]: deregister.
func (h *handler) volumeDeregister(w http.ResponseWriter, r *http.Request) error {
	args := structs.CSIVolumeDeregisterRequest{VolumeIDs: []string{r.PathValue("id")}}
	var err error
	if args.Force, err = flagParam(r, "force"); err != nil {
		return err
	}
	writeNamespace(r, &args.WriteRequest)
	var reply structs.CSIVolumeDeregisterResponse
	if err := h.rpc(r, "CSIVolume.Deregister", &args, &reply); err != nil {
		return err
	}
	setIndex(w, reply.Index)
	return writeJSON(w, r, &reply)
}

// DELETE /v1/volume/csi/:id/delete: delete the volume at the provider,
// then deregister it. Secrets for the delete call come from the
// X-Berth-CSI-Secrets header ("key=value,key2=value2"); they replace the
// volume's own. They are never logged or echoed.
func (h *handler) volumeDelete(w http.ResponseWriter, r *http.Request) error {
	args := structs.CSIVolumeDeleteRequest{VolumeIDs: []string{r.PathValue("id")}}
	secrets, err := parseCSISecrets(r)
	if err != nil {
		return err
	}
	args.Secrets = secrets
	writeNamespace(r, &args.WriteRequest)
	var reply structs.CSIVolumeDeleteResponse
	if err := h.rpc(r, "CSIVolume.Delete", &args, &reply); err != nil {
		return err
	}
	setIndex(w, reply.Index)
	return writeJSON(w, r, &reply)
}

// headerCSISecrets carries secrets for requests without a body.
const headerCSISecrets = "X-Berth-CSI-Secrets"

// parseCSISecrets reads the X-Berth-CSI-Secrets header: key=value pairs
// separated by commas; a value may hold '=' (the first one ends the key)
// but not ','. Spaces around a key are dropped; the value is kept as
// written. No header, or an empty one, is nil. Errors name the header and
// the entry's position, never its text, which may be a secret.
func parseCSISecrets(r *http.Request) (structs.CSISecrets, error) {
	secrets := structs.CSISecrets{}
	n := 0
	for _, hv := range r.Header.Values(headerCSISecrets) {
		if strings.TrimSpace(hv) == "" {
			continue
		}
		for _, entry := range strings.Split(hv, ",") {
			n++
			key, value, found := strings.Cut(entry, "=")
			key = strings.TrimSpace(key)
			switch {
			case !found:
				return nil, badRequest("header %s: entry %d has no '='; send key=value pairs separated by commas", headerCSISecrets, n)
			case key == "":
				return nil, badRequest("header %s: entry %d has no key before '='; send key=value pairs separated by commas", headerCSISecrets, n)
			}
			if _, dup := secrets[key]; dup {
				return nil, badRequest("header %s: key %q is given twice; send each secret once", headerCSISecrets, key)
			}
			secrets[key] = value
		}
	}
	if len(secrets) == 0 {
		return nil, nil
	}
	return secrets, nil
}

// POST|PUT /v1/volume/csi/:id/claim with a CSIVolumeClaimRequest: take a
// claim, or ask for its release (State "unpublishing"). For tools and
// tests; allocations claim through the scheduler.
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
	reply.NodeSecrets = nil // for the claiming client's node calls only
	setIndex(w, reply.Index)
	return writeJSON(w, r, &reply)
}
