package api

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/berth-csi/berth/structs"
)

// CSISnapshotList is one page of snapshots, as GET /v1/volumes/snapshot
// answers. NextToken is empty on the last page.
type CSISnapshotList struct {
	Snapshots []*structs.CSISnapshot
	NextToken string
}

// CSIExternalVolumeList is one page of the volumes a plugin's controller
// lists, as GET /v1/volumes/external answers. NextToken is empty on the
// last page; a volume berth does not know has an empty VolumeID.
type CSIExternalVolumeList struct {
	Volumes   []*structs.CSIExternalVolume
	NextToken string
}

// snapshotCreateBody is the JSON body of POST /v1/volumes/snapshot;
// secrets travel in the X-Berth-CSI-Secrets header.
type snapshotCreateBody struct {
	VolumeID   string
	Name       string            `json:",omitempty"`
	Parameters map[string]string `json:",omitempty"`
}

// snapshotCreateAnswer is what POST /v1/volumes/snapshot answers.
type snapshotCreateAnswer struct {
	Snapshot *structs.CSISnapshot
}

// CreateSnapshot has a controller of the volume's plugin snapshot it.
// volumeID is the full volume ID; name is the idempotency key (empty lets
// the server choose one); params go to the plugin. secrets, if any,
// replace the volume's own for the call and travel in the
// X-Berth-CSI-Secrets header (see Delete for what they may hold). The
// call lasts as long as the plugin takes.
func (v *CSIVolumes) CreateSnapshot(volumeID, name string, params, secrets map[string]string) (*structs.CSISnapshot, *WriteMeta, error) {
	if volumeID == "" {
		return nil, nil, fmt.Errorf("api: create snapshot: no volume ID given")
	}
	header, err := secretsHeader(secrets)
	if err != nil {
		return nil, nil, fmt.Errorf("api: create snapshot of volume %q: %w", volumeID, err)
	}
	body := snapshotCreateBody{VolumeID: volumeID, Name: name, Parameters: params}
	var out snapshotCreateAnswer
	wm, err := v.c.writeWithHeader(http.MethodPost, "/v1/volumes/snapshot", nil, header, body, &out)
	if err != nil {
		return nil, nil, err
	}
	if out.Snapshot == nil {
		return nil, nil, fmt.Errorf("api: create snapshot of volume %q: the answer carries no snapshot", volumeID)
	}
	return out.Snapshot, wm, nil
}

// DeleteSnapshot has a controller of pluginID delete the snapshot. Both
// IDs are required and taken as they are (snapshot IDs are the plugin's).
// secrets travel as CreateSnapshot's do.
func (v *CSIVolumes) DeleteSnapshot(pluginID, snapshotID string, secrets map[string]string) (*WriteMeta, error) {
	switch {
	case pluginID == "":
		return nil, fmt.Errorf("api: delete snapshot %q: no plugin ID given", snapshotID)
	case snapshotID == "":
		return nil, fmt.Errorf("api: delete snapshot: no snapshot ID given")
	}
	header, err := secretsHeader(secrets)
	if err != nil {
		return nil, fmt.Errorf("api: delete snapshot %q: %w", snapshotID, err)
	}
	params := url.Values{"plugin_id": {pluginID}, "snapshot_id": {snapshotID}}
	return v.c.writeWithHeader(http.MethodDelete, "/v1/volumes/snapshot", params, header, nil, nil)
}

// ListSnapshots reads one page of snapshots: of pluginID, or of every
// plugin that can list them when pluginID is empty. perPage 0 lets the
// plugins choose the page size; nextToken is the previous page's
// NextToken ("" for the first page). secrets travel as CreateSnapshot's do.
func (v *CSIVolumes) ListSnapshots(pluginID string, perPage int32, nextToken string, secrets map[string]string, q *QueryOptions) (*CSISnapshotList, *QueryMeta, error) {
	params, err := pageParams(perPage, nextToken)
	if err != nil {
		return nil, nil, fmt.Errorf("api: list snapshots: %w", err)
	}
	header, err := secretsHeader(secrets)
	if err != nil {
		return nil, nil, fmt.Errorf("api: list snapshots: %w", err)
	}
	var out CSISnapshotList
	qm, err := v.c.queryWithHeader("/v1/volumes/snapshot", params, header, &out, withPlugin(q, pluginID))
	if err != nil {
		return nil, nil, err
	}
	return &out, qm, nil
}

// ListExternal reads one page of the volumes pluginID's controller lists,
// berth's or not. perPage and nextToken work as ListSnapshots'.
func (v *CSIVolumes) ListExternal(pluginID string, perPage int32, nextToken string, q *QueryOptions) (*CSIExternalVolumeList, *QueryMeta, error) {
	if pluginID == "" {
		return nil, nil, fmt.Errorf("api: list external volumes: no plugin ID given")
	}
	params, err := pageParams(perPage, nextToken)
	if err != nil {
		return nil, nil, fmt.Errorf("api: list external volumes of plugin %q: %w", pluginID, err)
	}
	var out CSIExternalVolumeList
	qm, err := v.c.query("/v1/volumes/external", params, &out, withPlugin(q, pluginID))
	if err != nil {
		return nil, nil, err
	}
	return &out, qm, nil
}

// pageParams are the per_page and next_token parameters of a paged list.
func pageParams(perPage int32, nextToken string) (url.Values, error) {
	if perPage < 0 {
		return nil, fmt.Errorf("per page %d is negative; give 0 to let the plugin choose", perPage)
	}
	params := url.Values{}
	if perPage > 0 {
		params.Set("per_page", strconv.FormatInt(int64(perPage), 10))
	}
	if nextToken != "" {
		params.Set("next_token", nextToken)
	}
	return params, nil
}

// withPlugin returns q with PluginID set to pluginID, leaving q as it was;
// the argument beats q's own PluginID.
func withPlugin(q *QueryOptions, pluginID string) *QueryOptions {
	var n QueryOptions
	if q != nil {
		n = *q
	}
	n.PluginID = pluginID
	return &n
}
