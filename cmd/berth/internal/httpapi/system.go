package httpapi

import (
	"net/http"

	"github.com/berth-csi/berth/structs"
)

// systemRoutes registers the cluster-wide maintenance routes.
func (h *handler) systemRoutes() {
	h.handle("/v1/system/gc", route{http.MethodPut: h.systemGC})
}

// PUT /v1/system/gc: collect garbage now, with every threshold at zero.
// The answer is {"Removed": {"Allocs", "Jobs", "Nodes", "PastClaims"},
// "Index"}.
func (h *handler) systemGC(w http.ResponseWriter, r *http.Request) error {
	var args structs.SystemGCRequest
	var reply structs.SystemGCResponse
	if err := h.rpc(r, "System.GarbageCollect", &args, &reply); err != nil {
		return err
	}
	setIndex(w, reply.Index)
	return writeJSON(w, r, &reply)
}
