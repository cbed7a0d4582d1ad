package server

import (
	"time"

	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
)

// ACL serves the ACL system: bootstrap, policies and tokens. Every method
// refuses when ACLs are off (acl { enabled = false }): tokens made then
// would protect nothing.
type ACL struct{ srv *Server }

// bootstrapTokenName names the management token bootstrap makes.
const bootstrapTokenName = "Bootstrap Token"

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

// Bootstrap makes the first management token, once in the cluster's life.
// It is open to anonymous callers: before it, no token exists. The answer
// is the token with its SecretID, the one time it is shown; the servers
// keep only its hash.
func (a *ACL) Bootstrap(args *structs.ACLBootstrapRequest, reply *structs.ACLTokenUpsertResponse) error {
	if done, err := a.srv.forward("ACL.Bootstrap", args, args, reply); done {
		return err
	}
	if err := a.srv.aclsEnabled("ACL.Bootstrap"); err != nil {
		return err
	}
	if idx, err := a.srv.State().ACLBootstrapIndex(); err != nil {
		return err
	} else if idx > 0 {
		return structs.NewError(structs.CodeConflict,
			"ACL bootstrap already done at index %d; use the management token you got then", idx)
	}
	accessor, secret := structs.NewUUID(), structs.NewUUID()
	token := &structs.ACLToken{AccessorID: accessor, SecretHash: hashSecret(secret), Name: bootstrapTokenName,
		Type: structs.ACLTokenTypeManagement, CreateTime: time.Now().UTC()}
	_, index, err := raftApply[any](a.srv, structs.ACLBootstrapRequestType, &structs.ACLBootstrapRequest{Token: token})
	if err != nil {
		return err
	}
	a.srv.logger.Info("acl bootstrap done", "accessor_id", accessor)
	out := publicToken(token)
	out.SecretID = secret
	out.CreateIndex, out.ModifyIndex = index, index
	reply.Tokens = []*structs.ACLToken{out}
	reply.Index = index
	return nil
}

// WhoAmI returns the caller's own token, without its secret; Token is nil
// for an anonymous caller (no token, or one the servers do not know).
func (a *ACL) WhoAmI(args *structs.ACLTokenGetRequest, reply *structs.ACLTokenGetResponse) error {
	if done, err := a.srv.forward("ACL.WhoAmI", args, args, reply); done {
		return err
	}
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
