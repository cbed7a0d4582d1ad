package server

import (
	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
)

// ACL serves the ACL system: bootstrap, policies and tokens. Every method
// refuses when ACLs are off (acl { enabled = false }): tokens made then
// would protect nothing.
type ACL struct{ srv *Server }

// maxACLBatch bounds the tokens or policies one request writes.
const maxACLBatch = 64

// aclsEnabled refuses an ACL method on a server that does not enforce ACLs.
func (s *Server) aclsEnabled(method string) error {
	if !s.config.ACLEnabled {
		return structs.NewError(structs.CodeBadRequest,
			"%s: ACLs are disabled on server %s; set acl { enabled = true } on every agent first", method, s.config.NodeName)
	}
	return nil
}

// WhoAmI returns the caller's own token, without its secret; Token is nil
// for an anonymous caller (no token, or one the servers do not know).
func (a *ACL) WhoAmI(args *structs.ACLTokenGetRequest, reply *structs.ACLTokenGetResponse) error {
	if err := a.srv.aclsEnabled("ACL.WhoAmI"); err != nil {
		return err
	}
	_, token, err := a.srv.resolveToken(args.AuthToken)
	if err != nil {
		return err
	}
	reply.Token = nil
	if token != nil && !isLeaderToken(token.AccessorID) {
		reply.Token = publicToken(token)
	}
	a.srv.setQueryMeta(&reply.QueryMeta)
	reply.Index, err = a.srv.State().Index(state.TableACLTokens)
	return err
}

// publicToken is a copy of t fit for an answer: no secret, no hash.
func publicToken(t *structs.ACLToken) *structs.ACLToken {
	c := t.Copy()
	c.SecretID, c.SecretHash = "", ""
	return c
}
