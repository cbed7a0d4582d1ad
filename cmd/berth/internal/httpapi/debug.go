package httpapi

import (
	"net/http"
	"net/http/pprof"

	"github.com/berth-csi/berth/structs"
)

// WithDebug serves Go's runtime profiles under /debug/pprof/ in front of
// api, for an agent with enable_debug = true. With ACLs on, only a
// management token may read them (a profile shows the agent's memory);
// with ACLs off, whoever reaches the HTTP API may, as with every other
// route.
func WithDebug(api http.Handler, backend Backend, aclsEnabled bool) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", api)
	guard := func(fn http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if aclsEnabled {
				if err := requireManagement(r, backend); err != nil {
					writeError(w, err)
					return
				}
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

// requireManagement refuses a request whose token is not a management
// token.
func requireManagement(r *http.Request, backend Backend) error {
	token := tokenFrom(withToken(r).Context())
	if token == "" {
		return structs.NewError(structs.CodePermissionDenied,
			"permission denied: /debug/pprof/ needs a management token in the %s header", headerToken)
	}
	args := &structs.ACLTokenGetRequest{}
	args.AuthToken = token
	var reply structs.ACLTokenGetResponse
	if err := backend.RPC(r.Context(), "ACL.WhoAmI", args, &reply); err != nil {
		return err
	}
	if reply.Token == nil || reply.Token.Type != structs.ACLTokenTypeManagement {
		return structs.NewError(structs.CodePermissionDenied, "permission denied: /debug/pprof/ needs a management token")
	}
	return nil
}
