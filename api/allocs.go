package api

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/berth-csi/berth/structs"
)

// Allocations reads allocations and their tasks' logs.
type Allocations struct{ c *Client }

// Allocations returns the allocation endpoints.
func (c *Client) Allocations() *Allocations { return &Allocations{c} }

// List returns the allocations, filtered by q.Prefix.
func (a *Allocations) List(q *QueryOptions) ([]*structs.AllocListStub, *QueryMeta, error) {
	var out []*structs.AllocListStub
	qm, err := a.c.query("/v1/allocations", nil, &out, q)
	if err != nil {
		return nil, nil, err
	}
	return out, qm, nil
}

// Info returns one allocation by its full ID, with its task states and
// the job it runs; a missing allocation is an error that matches
// structs.ErrNotFound.
func (a *Allocations) Info(id string, q *QueryOptions) (*structs.Allocation, *QueryMeta, error) {
	var out structs.Allocation
	qm, err := a.c.query("/v1/allocation/"+escape(id), nil, &out, q)
	if err != nil {
		return nil, nil, err
	}
	return &out, qm, nil
}

// Log kinds.
const (
	LogStdout = "stdout"
	LogStderr = "stderr"
)

// HeaderLogSize carries the size of the whole log on a logs answer, so a
// caller can read on from where the answer ends.
const HeaderLogSize = "X-Berth-Log-Size"

// Logs reads the log of kind (LogStdout or LogStderr) of task in the
// allocation with the full ID allocID, from the client that runs it:
// limit bytes (0 for all) from offset. size is the whole log's size, -1
// when the answer does not say.
func (a *Allocations) Logs(allocID, task, kind string, offset, limit int64) (data []byte, size int64, err error) {
	switch {
	case allocID == "":
		return nil, 0, fmt.Errorf("api: read logs: no allocation ID given")
	case task == "":
		return nil, 0, fmt.Errorf("api: read logs of allocation %q: no task given", allocID)
	case kind != LogStdout && kind != LogStderr:
		return nil, 0, fmt.Errorf("api: read logs of allocation %q: log kind %q is not %q or %q", allocID, kind, LogStdout, LogStderr)
	case offset < 0 || limit < 0:
		return nil, 0, fmt.Errorf("api: read logs of allocation %q: offset %d and limit %d must not be negative", allocID, offset, limit)
	}
	params := url.Values{"task": {task}, "type": {kind}}
	if offset > 0 {
		params.Set("offset", strconv.FormatInt(offset, 10))
	}
	if limit > 0 {
		params.Set("limit", strconv.FormatInt(limit, 10))
	}
	endpoint := "/v1/client/fs/logs/" + escape(allocID)
	resp, err := a.c.do(http.MethodGet, endpoint, params, nil, nil)
	if err != nil {
		return nil, 0, err
	}
	defer drain(resp)
	data, err = io.ReadAll(resp.Body)
	if err != nil {
		return nil, 0, fmt.Errorf("api: read answer of %s: %w", endpoint, err)
	}
	size = -1
	if s, err := strconv.ParseInt(resp.Header.Get(HeaderLogSize), 10, 64); err == nil {
		size = s
	}
	return data, size, nil
}

// Detach has the servers release every claim the node nodeID (a full ID)
// holds on the volume volumeID, driving each through node and controller
// detach, for a node that is gone or an allocation whose claim is stuck.
// It returns the IDs of the allocations whose claims it started to
// release; the release goes on in the background (berth volume status
// shows it). It lives here, with the allocations, because it releases
// their claims.
func (v *CSIVolumes) Detach(volumeID, nodeID string) ([]string, *WriteMeta, error) {
	switch {
	case volumeID == "":
		return nil, nil, fmt.Errorf("api: detach volume: no volume ID given")
	case nodeID == "":
		return nil, nil, fmt.Errorf("api: detach volume %q: no node ID given", volumeID)
	}
	var out structs.CSIVolumeDetachResponse
	params := url.Values{"node": {nodeID}}
	wm, err := v.c.write(http.MethodDelete, "/v1/volume/csi/"+escape(volumeID)+"/detach", params, nil, &out)
	if err != nil {
		return nil, nil, err
	}
	return out.Released, wm, nil
}
