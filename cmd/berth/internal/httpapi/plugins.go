package httpapi

import (
	"net/http"

	"github.com/berth-csi/berth/structs"
)

// GET /v1/plugins?type=csi[&prefix=]: the plugin stubs.
func (h *handler) pluginList(w http.ResponseWriter, r *http.Request) error {
	if err := checkTypeCSI(r); err != nil {
		return err
	}
	var args structs.CSIPluginListRequest
	if err := parseQueryOptions(r, &args.QueryOptions); err != nil {
		return err
	}
	var reply structs.CSIPluginListResponse
	if err := h.rpc(r, "CSIPlugin.List", &args, &reply); err != nil {
		return err
	}
	setQueryMeta(w, &reply.QueryMeta)
	return writeJSON(w, r, nonNil(reply.Plugins))
}

// GET /v1/plugin/csi/:id[?per_page=&next_token=]: one plugin with its
// instances (a page of them, by node ID; X-Berth-NextToken names the next
// page's first node), 404 when no instance reports it.
func (h *handler) pluginGet(w http.ResponseWriter, r *http.Request) error {
	args := structs.CSIPluginGetRequest{ID: r.PathValue("id")}
	if err := parseQueryOptions(r, &args.QueryOptions); err != nil {
		return err
	}
	var err error
	if args.PerPage, args.NextToken, err = parsePerPage(r, "is every node"); err != nil {
		return err
	}
	var reply structs.CSIPluginGetResponse
	if err := h.rpc(r, "CSIPlugin.Get", &args, &reply); err != nil {
		return err
	}
	setQueryMeta(w, &reply.QueryMeta)
	setNextToken(w, reply.NextToken)
	if reply.Plugin == nil {
		return notFound("plugin %q not found; list plugins with GET /v1/plugins?type=csi", args.ID)
	}
	return writeJSON(w, r, reply.Plugin)
}

// DELETE /v1/plugin/csi/:id.
func (h *handler) pluginDelete(w http.ResponseWriter, r *http.Request) error {
	args := structs.CSIPluginDeleteRequest{ID: r.PathValue("id")}
	writeNamespace(r, &args.WriteRequest)
	var reply structs.CSIPluginDeleteResponse
	if err := h.rpc(r, "CSIPlugin.Delete", &args, &reply); err != nil {
		return err
	}
	setIndex(w, reply.Index)
	return writeJSON(w, r, &reply)
}
