package httpapi

import (
	"net/http"

	"github.com/berth-csi/berth/structs"
)

// keyringRoutes registers the root keyring's routes. They show and make
// keys' metadata only: key material never leaves the servers.
func (h *handler) keyringRoutes() {
	h.handle("/v1/operator/keyring/keys", route{http.MethodGet: h.keyringList})
	h.handle("/v1/operator/keyring/rotate", route{
		http.MethodPut:  h.keyringRotate,
		http.MethodPost: h.keyringRotate,
	})
}

// GET /v1/operator/keyring/keys: the root keys (ID, state, create time),
// oldest first.
func (h *handler) keyringList(w http.ResponseWriter, r *http.Request) error {
	var args structs.KeyringListRequest
	if err := parseQueryOptions(r, &args.QueryOptions); err != nil {
		return err
	}
	var reply structs.KeyringListResponse
	if err := h.rpc(r, "Keyring.List", &args, &reply); err != nil {
		return err
	}
	setQueryMeta(w, &reply.QueryMeta)
	return writeJSON(w, r, nonNil(reply.Keys))
}

// PUT|POST /v1/operator/keyring/rotate[?full=true]: make a new active root
// key. With full, every volume's secrets are sealed again under it now;
// otherwise on their next write.
func (h *handler) keyringRotate(w http.ResponseWriter, r *http.Request) error {
	var args structs.KeyringRotateRequest
	var err error
	if args.Full, err = flagParam(r, "full"); err != nil {
		return err
	}
	var reply structs.KeyringRotateResponse
	if err := h.rpc(r, "Keyring.Rotate", &args, &reply); err != nil {
		return err
	}
	setIndex(w, reply.Index)
	return writeJSON(w, r, &reply)
}
