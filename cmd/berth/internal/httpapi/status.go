package httpapi

import (
	"net/http"

	"github.com/berth-csi/berth/structs"
)

func (h *handler) rpc(r *http.Request, method string, args, reply any) error {
	return h.backend.RPC(r.Context(), method, args, reply)
}

// GET /v1/status/leader: the leader's RPC address as a JSON string.
func (h *handler) statusLeader(w http.ResponseWriter, r *http.Request) error {
	var args structs.GenericRequest
	if err := parseQueryOptions(r, &args.QueryOptions); err != nil {
		return err
	}
	var leader string
	if err := h.rpc(r, "Status.Leader", &args, &leader); err != nil {
		return err
	}
	return writeJSON(w, r, leader)
}

// GET /v1/status/peers: the raft peers' RPC addresses.
func (h *handler) statusPeers(w http.ResponseWriter, r *http.Request) error {
	var args structs.GenericRequest
	if err := parseQueryOptions(r, &args.QueryOptions); err != nil {
		return err
	}
	var peers []string
	if err := h.rpc(r, "Status.Peers", &args, &peers); err != nil {
		return err
	}
	return writeJSON(w, r, nonNil(peers))
}

// GET /v1/agent/members: the servers as gossip sees them.
func (h *handler) agentMembers(w http.ResponseWriter, r *http.Request) error {
	var args structs.GenericRequest
	if err := parseQueryOptions(r, &args.QueryOptions); err != nil {
		return err
	}
	var reply structs.ServerMembersResponse
	if err := h.rpc(r, "Status.Members", &args, &reply); err != nil {
		return err
	}
	return writeJSON(w, r, nonNil(reply.Members))
}

// GET /v1/operator/raft/configuration.
func (h *handler) raftConfiguration(w http.ResponseWriter, r *http.Request) error {
	var args structs.GenericRequest
	if err := parseQueryOptions(r, &args.QueryOptions); err != nil {
		return err
	}
	var reply structs.RaftConfigurationResponse
	if err := h.rpc(r, "Operator.RaftGetConfiguration", &args, &reply); err != nil {
		return err
	}
	reply.Servers = nonNil(reply.Servers)
	setIndex(w, reply.Index)
	return writeJSON(w, r, &reply)
}
