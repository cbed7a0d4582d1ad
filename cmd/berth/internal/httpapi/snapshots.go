package httpapi

import (
	"net/http"
	"strconv"

	"github.com/berth-csi/berth/structs"
)

// snapshotCreateBody is the body of POST /v1/volumes/snapshot. Secrets
// come in the X-Berth-CSI-Secrets header; Secrets is here only to refuse
// them, so that secrets sent in the body are not silently dropped.
type snapshotCreateBody struct {
	VolumeID   string
	Name       string
	Parameters map[string]string
	Secrets    map[string]string
}

// POST /v1/volumes/snapshot with {"VolumeID", "Name", "Parameters"}: have a
// controller of the volume's plugin snapshot it. Secrets for the call come
// from the X-Berth-CSI-Secrets header, as for volume delete. The answer is
// {"Snapshot": {...}, "Index": N}.
func (h *handler) snapshotCreate(w http.ResponseWriter, r *http.Request) error {
	var body snapshotCreateBody
	if err := decodeBody(r, w, `object {"VolumeID": ..., "Name": ..., "Parameters": {...}}`, &body); err != nil {
		return err
	}
	if body.Secrets != nil {
		return badRequest("request body: Secrets are not taken in the body of a snapshot request; send them in the %s header as key=value pairs separated by commas", headerCSISecrets)
	}
	if body.VolumeID == "" {
		return badRequest(`request body has no VolumeID; send {"VolumeID": "<volume>", "Name": "<snapshot name>"}`)
	}
	secrets, err := parseCSISecrets(r)
	if err != nil {
		return err
	}
	args := structs.CSISnapshotCreateRequest{
		VolumeID:   body.VolumeID,
		Name:       body.Name,
		Parameters: body.Parameters,
		Secrets:    secrets,
	}
	writeNamespace(r, &args.WriteRequest)
	var reply structs.CSISnapshotCreateResponse
	if err := h.rpc(r, "CSIVolume.CreateSnapshot", &args, &reply); err != nil {
		return err
	}
	setIndex(w, reply.Index)
	return writeJSON(w, r, &reply)
}

// DELETE /v1/volumes/snapshot?plugin_id=&snapshot_id=: have a controller of
// the plugin delete the snapshot. Both parameters are required; secrets
// come from the X-Berth-CSI-Secrets header.
func (h *handler) snapshotDelete(w http.ResponseWriter, r *http.Request) error {
	pluginID, err := requiredParam(r, "plugin_id", "the ID of the plugin that holds the snapshot")
	if err != nil {
		return err
	}
	snapshotID, err := requiredParam(r, "snapshot_id", "the plugin's ID of the snapshot")
	if err != nil {
		return err
	}
	secrets, err := parseCSISecrets(r)
	if err != nil {
		return err
	}
	args := structs.CSISnapshotDeleteRequest{PluginID: pluginID, SnapshotID: snapshotID, Secrets: secrets}
	writeNamespace(r, &args.WriteRequest)
	var reply structs.CSISnapshotDeleteResponse
	if err := h.rpc(r, "CSIVolume.DeleteSnapshot", &args, &reply); err != nil {
		return err
	}
	setIndex(w, reply.Index)
	return writeJSON(w, r, &reply)
}

// snapshotPage is the answer of GET /v1/volumes/snapshot.
type snapshotPage struct {
	Snapshots []*structs.CSISnapshot
	NextToken string
}

// GET /v1/volumes/snapshot[?plugin_id=&per_page=&next_token=]: one page of
// snapshots, of one plugin or of every plugin that can list them. Secrets
// come from the X-Berth-CSI-Secrets header.
func (h *handler) snapshotList(w http.ResponseWriter, r *http.Request) error {
	args := structs.CSISnapshotListRequest{PluginID: r.URL.Query().Get("plugin_id")}
	var err error
	if args.PerPage, args.NextToken, err = parsePage(r); err != nil {
		return err
	}
	if args.Secrets, err = parseCSISecrets(r); err != nil {
		return err
	}
	if err := parseQueryOptions(r, &args.QueryOptions); err != nil {
		return err
	}
	var reply structs.CSISnapshotListResponse
	if err := h.rpc(r, "CSIVolume.ListSnapshots", &args, &reply); err != nil {
		return err
	}
	setQueryMeta(w, &reply.QueryMeta)
	page := snapshotPage{Snapshots: nonNil(reply.Snapshots), NextToken: reply.NextToken}
	return writeJSON(w, r, &page)
}

// externalVolumePage is the answer of GET /v1/volumes/external.
type externalVolumePage struct {
	Volumes   []*structs.CSIExternalVolume
	NextToken string
}

// GET /v1/volumes/external?plugin_id=[&per_page=&next_token=]: one page of
// the volumes the plugin's controller lists, berth's or not (VolumeID is
// empty for a volume berth does not know).
func (h *handler) externalVolumeList(w http.ResponseWriter, r *http.Request) error {
	pluginID, err := requiredParam(r, "plugin_id", "the ID of the plugin whose volumes to list")
	if err != nil {
		return err
	}
	args := structs.CSIVolumeExternalListRequest{PluginID: pluginID}
	if args.PerPage, args.NextToken, err = parsePage(r); err != nil {
		return err
	}
	if err := parseQueryOptions(r, &args.QueryOptions); err != nil {
		return err
	}
	var reply structs.CSIVolumeExternalListResponse
	if err := h.rpc(r, "CSIVolume.ListExternal", &args, &reply); err != nil {
		return err
	}
	setQueryMeta(w, &reply.QueryMeta)
	page := externalVolumePage{Volumes: nonNil(reply.Volumes), NextToken: reply.NextToken}
	return writeJSON(w, r, &page)
}

// requiredParam reads a query parameter that must be given; what says
// what it names, for the error.
func requiredParam(r *http.Request, name, what string) (string, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return "", badRequest("query parameter %s is required: %s", name, what)
	}
	return v, nil
}

// parsePage reads ?per_page= (absent or 0: the plugin chooses) and
// ?next_token= (the previous page's NextToken).
func parsePage(r *http.Request) (perPage int32, nextToken string, err error) {
	n, next, err := parsePerPage(r, "lets the plugin choose")
	return int32(n), next, err
}

// parsePerPage reads ?per_page= (absent or 0: what zero says) and
// ?next_token= (the previous page's NextToken).
func parsePerPage(r *http.Request, zero string) (perPage int, nextToken string, err error) {
	q := r.URL.Query()
	if s := q.Get("per_page"); s != "" {
		n, err := strconv.ParseUint(s, 10, 31)
		if err != nil {
			return 0, "", badRequest("query parameter per_page=%q must be a non-negative integer below 2^31 (0 %s)", s, zero)
		}
		perPage = int(n)
	}
	return perPage, q.Get("next_token"), nil
}

// setNextToken writes where a paged read's next page starts, if any.
func setNextToken(w http.ResponseWriter, next string) {
	if next != "" {
		w.Header().Set(headerNextToken, next)
	}
}
