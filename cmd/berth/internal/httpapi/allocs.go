package httpapi

import (
	"net/http"
	"strconv"

	"github.com/berth-csi/berth/structs"
)

// GET /v1/allocations[?prefix=]: the allocation stubs.
func (h *handler) allocList(w http.ResponseWriter, r *http.Request) error {
	var args structs.AllocListRequest
	if err := parseQueryOptions(r, &args.QueryOptions); err != nil {
		return err
	}
	var reply structs.AllocListResponse
	if err := h.rpc(r, "Alloc.List", &args, &reply); err != nil {
		return err
	}
	setQueryMeta(w, &reply.QueryMeta)
	return writeJSON(w, r, nonNil(reply.Allocations))
}

// GET /v1/allocation/:id: one allocation with its task states and job,
// 404 when it does not exist.
func (h *handler) allocGet(w http.ResponseWriter, r *http.Request) error {
	args := structs.AllocSpecificRequest{AllocID: r.PathValue("id")}
	if err := parseQueryOptions(r, &args.QueryOptions); err != nil {
		return err
	}
	var reply structs.SingleAllocResponse
	if err := h.rpc(r, "Alloc.Get", &args, &reply); err != nil {
		return err
	}
	setQueryMeta(w, &reply.QueryMeta)
	if reply.Alloc == nil {
		return notFound("allocation %q not found; list allocations with GET /v1/allocations", args.AllocID)
	}
	return writeJSON(w, r, reply.Alloc)
}

// headerLogSize carries the whole log's size on a logs answer.
const headerLogSize = "X-Berth-Log-Size"

// GET /v1/client/fs/logs/:alloc?task=&type=stdout|stderr[&offset=&limit=]:
// a task's log as plain bytes, read from the client that runs the
// allocation. type defaults to stdout; limit 0 or absent means all. The
// whole log's size is in X-Berth-Log-Size.
func (h *handler) allocLogs(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	args := structs.ClientAllocLogsRequest{AllocID: r.PathValue("alloc"), Task: q.Get("task"), Kind: q.Get("type")}
	if args.Task == "" {
		return badRequest("query parameter task is required: name the task whose log to read")
	}
	switch args.Kind {
	case "":
		args.Kind = "stdout"
	case "stdout", "stderr":
	default:
		return badRequest("query parameter type=%q must be stdout or stderr", args.Kind)
	}
	for _, p := range []struct {
		name string
		dst  *int64
	}{{"offset", &args.Offset}, {"limit", &args.Limit}} {
		s := q.Get(p.name)
		if s == "" {
			continue
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return badRequest("query parameter %s=%q must be a non-negative number of bytes", p.name, s)
		}
		*p.dst = n
	}
	if err := parseQueryOptions(r, &args.QueryOptions); err != nil {
		return err
	}
	var reply structs.ClientAllocLogsResponse
	if err := h.rpc(r, "ClientAllocations.Logs", &args, &reply); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set(headerLogSize, strconv.FormatInt(reply.Size, 10))
	_, _ = w.Write(reply.Data)
	return nil
}

// DELETE /v1/volume/csi/:id/detach?node=ID: release every claim the node
// holds on the volume. The answer is {"Released": [alloc IDs], "Index"}.
// It sits with the allocations because it releases their claims.
func (h *handler) volumeDetach(w http.ResponseWriter, r *http.Request) error {
	args := structs.CSIVolumeDetachRequest{VolumeID: r.PathValue("id"), NodeID: r.URL.Query().Get("node")}
	if args.NodeID == "" {
		return badRequest("volume %q: query parameter node is required: the full ID of the node whose claims to release", args.VolumeID)
	}
	writeNamespace(r, &args.WriteRequest)
	var reply structs.CSIVolumeDetachResponse
	if err := h.rpc(r, "CSIVolume.Detach", &args, &reply); err != nil {
		return err
	}
	setIndex(w, reply.Index)
	reply.Released = nonNil(reply.Released)
	return writeJSON(w, r, &reply)
}
