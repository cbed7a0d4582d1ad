package httpapi

import (
	"net/http"

	"github.com/berth-csi/berth/structs"
)

// GET /v1/nodes[?prefix=&per_page=&next_token=]: the node stubs in ID
// order, a page of them with per_page (X-Berth-NextToken names the next
// page's first node).
func (h *handler) nodeList(w http.ResponseWriter, r *http.Request) error {
	var args structs.NodeListRequest
	if err := parseQueryOptions(r, &args.QueryOptions); err != nil {
		return err
	}
	var err error
	if args.PerPage, args.NextToken, err = parsePerPage(r, "is every node"); err != nil {
		return err
	}
	var reply structs.NodeListResponse
	if err := h.rpc(r, "Node.List", &args, &reply); err != nil {
		return err
	}
	setQueryMeta(w, &reply.QueryMeta)
	setNextToken(w, reply.NextToken)
	return writeJSON(w, r, nonNil(reply.Nodes))
}

// GET /v1/node/:id: one node, 404 when it does not exist.
func (h *handler) nodeGet(w http.ResponseWriter, r *http.Request) error {
	args := structs.NodeSpecificRequest{NodeID: r.PathValue("id")}
	if err := parseQueryOptions(r, &args.QueryOptions); err != nil {
		return err
	}
	var reply structs.SingleNodeResponse
	if err := h.rpc(r, "Node.Get", &args, &reply); err != nil {
		return err
	}
	setQueryMeta(w, &reply.QueryMeta)
	if reply.Node == nil {
		return notFound("node %q not found; list nodes with GET /v1/nodes", args.NodeID)
	}
	return writeJSON(w, r, reply.Node)
}
