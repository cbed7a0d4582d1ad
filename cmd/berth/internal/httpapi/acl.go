package httpapi

import (
	"net/http"

	"github.com/berth-csi/berth/structs"
)

// aclRoutes registers the token and policy routes. Writes take PUT or
// POST, as Nomad's do.
func (h *handler) aclRoutes() {
	h.handle("/v1/acl/bootstrap", route{
		http.MethodPut:  h.aclBootstrap,
		http.MethodPost: h.aclBootstrap,
	})
	h.handle("/v1/acl/tokens", route{http.MethodGet: h.aclTokenList})
	h.handle("/v1/acl/token", route{
		http.MethodPut:  h.aclTokenCreate,
		http.MethodPost: h.aclTokenCreate,
	})
	h.handle("/v1/acl/token/self", route{http.MethodGet: h.aclTokenSelf})
	h.handle("/v1/acl/token/{accessor}", route{
		http.MethodGet:    h.aclTokenGet,
		http.MethodPut:    h.aclTokenUpdate,
		http.MethodPost:   h.aclTokenUpdate,
		http.MethodDelete: h.aclTokenDelete,
	})
	h.handle("/v1/acl/policies", route{http.MethodGet: h.aclPolicyList})
	h.handle("/v1/acl/policy/{name}", route{
		http.MethodGet:    h.aclPolicyGet,
		http.MethodPut:    h.aclPolicyUpsert,
		http.MethodPost:   h.aclPolicyUpsert,
		http.MethodDelete: h.aclPolicyDelete,
	})
}

// POST|PUT /v1/acl/bootstrap: make the first management token. The answer
// is the token with its SecretID, which is shown this once; a second
// bootstrap is refused by the servers, unless the leader's
// acl-bootstrap-reset file names the reset index.
func (h *handler) aclBootstrap(w http.ResponseWriter, r *http.Request) error {
	var args structs.ACLBootstrapRequest
	var reply structs.ACLTokenUpsertResponse
	if err := h.rpc(r, "ACL.Bootstrap", &args, &reply); err != nil {
		return err
	}
	return writeUpsertedToken(w, r, &reply, true)
}

// GET /v1/acl/tokens[?prefix=]: the token stubs (no secrets).
func (h *handler) aclTokenList(w http.ResponseWriter, r *http.Request) error {
	var args structs.ACLTokenListRequest
	if err := parseQueryOptions(r, &args.QueryOptions); err != nil {
		return err
	}
	var reply structs.ACLTokenListResponse
	if err := h.rpc(r, "ACL.ListTokens", &args, &reply); err != nil {
		return err
	}
	setQueryMeta(w, &reply.QueryMeta)
	return writeJSON(w, r, nonNil(reply.Tokens))
}

// PUT|POST /v1/acl/token with a token {"Name", "Type", "Policies",
// "ExpirationTTL"}: create it. The answer is the token with its SecretID,
// shown this once.
func (h *handler) aclTokenCreate(w http.ResponseWriter, r *http.Request) error {
	token, err := decodeToken(w, r)
	if err != nil {
		return err
	}
	if token.AccessorID != "" {
		return badRequest("request body names AccessorID %q: a new token's accessor is made by the servers; update a token with PUT /v1/acl/token/%s", token.AccessorID, token.AccessorID)
	}
	return h.upsertToken(w, r, token, true)
}

// PUT|POST /v1/acl/token/:accessor with a token: change its name, type and
// policies. A token in the body with no AccessorID takes the URL's. The
// answer is the token, without its secret.
func (h *handler) aclTokenUpdate(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("accessor")
	token, err := decodeToken(w, r)
	if err != nil {
		return err
	}
	if token.AccessorID == "" {
		token.AccessorID = id
	}
	if token.AccessorID != id {
		return badRequest("token AccessorID %q in the request body does not match %q in the URL; update each token at its own URL", token.AccessorID, id)
	}
	return h.upsertToken(w, r, token, false)
}

// decodeToken reads a token from the body. A SecretID is refused: the
// servers make it, and keep only its hash.
func decodeToken(w http.ResponseWriter, r *http.Request) (*structs.ACLToken, error) {
	var token structs.ACLToken
	if err := decodeBody(r, w, `token object {"Name": ..., "Type": ..., "Policies": [...]}`, &token); err != nil {
		return nil, err
	}
	if token.SecretID != "" {
		return nil, badRequest("request body: a token's SecretID is made by the servers and cannot be set; leave SecretID out")
	}
	return &token, nil
}

func (h *handler) upsertToken(w http.ResponseWriter, r *http.Request, token *structs.ACLToken, created bool) error {
	args := structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{token}}
	var reply structs.ACLTokenUpsertResponse
	if err := h.rpc(r, "ACL.UpsertTokens", &args, &reply); err != nil {
		return err
	}
	return writeUpsertedToken(w, r, &reply, created)
}

// writeUpsertedToken answers with the one token written. Its SecretID is
// kept only for a token just made (bootstrap, create): an update never
// shows it.
func writeUpsertedToken(w http.ResponseWriter, r *http.Request, reply *structs.ACLTokenUpsertResponse, created bool) error {
	setIndex(w, reply.Index)
	if len(reply.Tokens) != 1 || reply.Tokens[0] == nil {
		return structs.NewError(structs.CodeInternal, "the servers answered %s %s with %d tokens, want 1; report this as a bug", r.Method, r.URL.Path, len(reply.Tokens))
	}
	token := reply.Tokens[0]
	if !created {
		token = withoutSecret(token)
	}
	return writeJSON(w, r, token)
}

// withoutSecret returns a copy of t without its SecretID. The servers do
// not send it outside create and bootstrap; this keeps a slip there from
// reaching an answer.
func withoutSecret(t *structs.ACLToken) *structs.ACLToken {
	c := t.Copy()
	c.SecretID = ""
	return c
}

// GET /v1/acl/token/:accessor: one token, without its secret; 404 when it
// does not exist.
func (h *handler) aclTokenGet(w http.ResponseWriter, r *http.Request) error {
	args := structs.ACLTokenGetRequest{AccessorID: r.PathValue("accessor")}
	return h.getToken(w, r, "ACL.GetToken", &args,
		`token %q not found; list tokens with GET /v1/acl/tokens`, args.AccessorID)
}

// GET /v1/acl/token/self: the caller's own token (X-Berth-Token), without
// its secret.
func (h *handler) aclTokenSelf(w http.ResponseWriter, r *http.Request) error {
	var args structs.ACLTokenGetRequest
	return h.getToken(w, r, "ACL.WhoAmI", &args,
		"no token: the request carried no %s header, or the servers do not know its token", headerToken)
}

func (h *handler) getToken(w http.ResponseWriter, r *http.Request, method string, args *structs.ACLTokenGetRequest, notFoundMsg string, msgArgs ...any) error {
	if err := parseQueryOptions(r, &args.QueryOptions); err != nil {
		return err
	}
	var reply structs.ACLTokenGetResponse
	if err := h.rpc(r, method, args, &reply); err != nil {
		return err
	}
	setQueryMeta(w, &reply.QueryMeta)
	if reply.Token == nil {
		return notFound(notFoundMsg, msgArgs...)
	}
	return writeJSON(w, r, withoutSecret(reply.Token))
}

// DELETE /v1/acl/token/:accessor: delete a token. The answer is {"Index"}.
func (h *handler) aclTokenDelete(w http.ResponseWriter, r *http.Request) error {
	args := structs.ACLTokenDeleteRequest{AccessorIDs: []string{r.PathValue("accessor")}}
	var reply structs.GenericResponse
	if err := h.rpc(r, "ACL.DeleteTokens", &args, &reply); err != nil {
		return err
	}
	setIndex(w, reply.Index)
	return writeJSON(w, r, &reply)
}

// GET /v1/acl/policies[?prefix=]: the policy stubs (no rules).
func (h *handler) aclPolicyList(w http.ResponseWriter, r *http.Request) error {
	var args structs.ACLPolicyListRequest
	if err := parseQueryOptions(r, &args.QueryOptions); err != nil {
		return err
	}
	var reply structs.ACLPolicyListResponse
	if err := h.rpc(r, "ACL.ListPolicies", &args, &reply); err != nil {
		return err
	}
	setQueryMeta(w, &reply.QueryMeta)
	return writeJSON(w, r, nonNil(reply.Policies))
}

// GET /v1/acl/policy/:name: one policy with its rules; 404 when it does
// not exist.
func (h *handler) aclPolicyGet(w http.ResponseWriter, r *http.Request) error {
	args := structs.ACLPolicyGetRequest{Name: r.PathValue("name")}
	if err := parseQueryOptions(r, &args.QueryOptions); err != nil {
		return err
	}
	var reply structs.ACLPolicyGetResponse
	if err := h.rpc(r, "ACL.GetPolicy", &args, &reply); err != nil {
		return err
	}
	setQueryMeta(w, &reply.QueryMeta)
	if reply.Policy == nil {
		return notFound("policy %q not found; list policies with GET /v1/acl/policies", args.Name)
	}
	return writeJSON(w, r, reply.Policy)
}

// PUT|POST /v1/acl/policy/:name with {"Description", "Rules"}: write the
// policy. A body with no Name takes the URL's; the servers parse the
// rules. The answer is {"Index"}.
func (h *handler) aclPolicyUpsert(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	var policy structs.ACLPolicy
	if err := decodeBody(r, w, `policy object {"Description": ..., "Rules": ...}`, &policy); err != nil {
		return err
	}
	if policy.Name == "" {
		policy.Name = name
	}
	if policy.Name != name {
		return badRequest("policy Name %q in the request body does not match %q in the URL; write each policy at its own URL", policy.Name, name)
	}
	args := structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{&policy}}
	var reply structs.GenericResponse
	if err := h.rpc(r, "ACL.UpsertPolicies", &args, &reply); err != nil {
		return err
	}
	setIndex(w, reply.Index)
	return writeJSON(w, r, &reply)
}

// DELETE /v1/acl/policy/:name: delete a policy. The answer is {"Index"}.
func (h *handler) aclPolicyDelete(w http.ResponseWriter, r *http.Request) error {
	args := structs.ACLPolicyDeleteRequest{Names: []string{r.PathValue("name")}}
	var reply structs.GenericResponse
	if err := h.rpc(r, "ACL.DeletePolicies", &args, &reply); err != nil {
		return err
	}
	setIndex(w, reply.Index)
	return writeJSON(w, r, &reply)
}
