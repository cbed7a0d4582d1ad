package httpapi

import (
	"errors"
	"net/http"
	"net/http/pprof"

	"github.com/berth-csi/berth/structs"
)

// WithDebug serves Go's runtime profiles under /debug/pprof/ in front of
// api, for an agent with enable_debug = true. The servers decide who may
// read them, not this agent's own config (a client agent's acl block does
// not say whether the cluster enforces ACLs): with ACLs on, only a
// management token; with ACLs off, whoever reaches the HTTP API, as with
// every other route.
func WithDebug(api http.Handler, backend Backend) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", api)
	guard := func(fn http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if err := requireManagement(withToken(r), backend); err != nil {
				writeError(w, err)
				return
			}
			fn(w, r)
		}
	}
	mux.HandleFunc("/debug/pprof/", guard(pprof.Index))
	mux.HandleFunc("/debug/pprof/cmdline", guard(pprof.Cmdline))
	mux.HandleFunc("/debug/pprof/profile", guard(pprof.Profile))
	mux.HandleFunc("/debug/pprof/symbol", guard(pprof.Symbol))
	mux.HandleFunc("/debug/pprof/trace", guard(pprof.Trace))
	return mux
}

// requireManagement asks the servers who the request's token is (through
// authBackend, like every route): nil when ACLs are off (the servers
// refuse WhoAmI as a bad request then) or the token is a management
// token.
func requireManagement(r *http.Request, backend Backend) error {
	var reply structs.ACLTokenGetResponse
	err := authBackend{next: backend}.RPC(r.Context(), "ACL.WhoAmI", &structs.ACLTokenGetRequest{}, &reply)
	switch {
	case errors.Is(err, structs.ErrBadRequest):
		return nil // ACLs are off
	case err != nil:
		return err
	case reply.Token == nil || reply.Token.Type != structs.ACLTokenTypeManagement:
		return structs.NewError(structs.CodePermissionDenied,
			"permission denied: /debug/pprof/ needs a management token in the %s header", headerToken)
	}
	return nil
}
