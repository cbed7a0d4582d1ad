package server

import (
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
)

// UpsertTokens creates tokens (no AccessorID: the servers make the
// accessor and the secret, and answer the secret this once) or updates
// them (AccessorID set: name, type and policies change; the secret, the
// create time and the expiry do not). A client token needs at least one
// existing policy; a management token takes none. ExpirationTTL sets a
// new token's expiry. Management only.
func (a *ACL) UpsertTokens(args *structs.ACLTokenUpsertRequest, reply *structs.ACLTokenUpsertResponse) error {
	if err := a.srv.aclsEnabled("ACL.UpsertTokens"); err != nil {
		return err
	}
	if err := a.srv.allowScope(args.AuthToken, needManagement); err != nil {
		return err
	}
	if len(args.Tokens) == 0 || len(args.Tokens) > maxACLBatch {
		return structs.NewError(structs.CodeBadRequest, "acl token upsert: give 1 to %d tokens, not %d", maxACLBatch, len(args.Tokens))
	}
	st := a.srv.State()
	now := time.Now().UTC()
	secrets := map[string]string{} // accessor -> secret, of the tokens made now
	tokens := make([]*structs.ACLToken, 0, len(args.Tokens))
	for i, in := range args.Tokens {
		if in == nil {
			return structs.NewError(structs.CodeBadRequest, "acl token upsert: token %d of the request is empty", i+1)
		}
		t, secret, err := a.prepareToken(st, in, now)
		if err != nil {
			return err
		}
		if _, dup := secrets[t.AccessorID]; dup {
			return structs.NewError(structs.CodeBadRequest, "acl token upsert: token %s is given twice in one request", t.AccessorID)
		}
		secrets[t.AccessorID] = secret
		tokens = append(tokens, t)
	}
	req := &structs.ACLTokenUpsertRequest{Tokens: tokens}
	_, index, err := raftApply[any](a.srv, structs.ACLTokenUpsertRequestType, req)
	if err != nil {
		return err
	}
	st = a.srv.State()
	for _, t := range tokens {
		stored, err := st.ACLTokenByAccessorID(nil, t.AccessorID)
		if err != nil {
			return err
		}
		if stored == nil {
			return structs.NewError(structs.CodeConflict, "acl token %s was deleted while it was written; write it again", t.AccessorID)
		}
		out := publicToken(stored)
		out.SecretID = secrets[t.AccessorID]
		reply.Tokens = append(reply.Tokens, out)
	}
	reply.Index = index
	return nil
}

// prepareToken checks one token of an upsert and returns what raft gets
// (a hash, never a secret) and, for a new token, its secret.
func (a *ACL) prepareToken(st *state.StateStore, in *structs.ACLToken, now time.Time) (*structs.ACLToken, string, error) {
	if in.SecretID != "" || in.SecretHash != "" {
		return nil, "", structs.NewError(structs.CodeBadRequest, "acl token %s: a token's secret is made by the servers and cannot be set", in.AccessorID)
	}
	if len(in.Name) > maxDescription {
		return nil, "", structs.NewError(structs.CodeBadRequest, "acl token: name is %d bytes; the most is %d", len(in.Name), maxDescription)
	}
	t := &structs.ACLToken{AccessorID: in.AccessorID, Name: in.Name, Type: in.Type, Policies: append([]string(nil), in.Policies...)}
	if t.Type == "" {
		t.Type = structs.ACLTokenTypeClient
	}
	what := "new acl token"
	if t.AccessorID != "" {
		what = "acl token " + t.AccessorID
	}
	switch t.Type {
	case structs.ACLTokenTypeManagement:
		if len(t.Policies) > 0 {
			return nil, "", structs.NewError(structs.CodeBadRequest, "%s: a management token may do everything and takes no policies; leave them out", what)
		}
	case structs.ACLTokenTypeClient:
		if len(t.Policies) == 0 {
			return nil, "", structs.NewError(structs.CodeBadRequest, "%s: a client token needs at least one policy (-policy NAME)", what)
		}
		for _, name := range t.Policies {
			p, err := st.ACLPolicyByName(nil, name)
			if err != nil {
				return nil, "", err
			}
			if p == nil {
				return nil, "", structs.NewError(structs.CodeBadRequest, "%s: policy %q does not exist; write it first with `berth acl policy apply`", what, name)
			}
		}
	default:
		return nil, "", structs.NewError(structs.CodeBadRequest, "%s: type %q is not client or management", what, t.Type)
	}

	if t.AccessorID != "" { // an update
		if isLeaderToken(t.AccessorID) {
			return nil, "", structs.NewError(structs.CodeBadRequest, "%s is the servers' own; it cannot be changed", what)
		}
		existing, err := st.ACLTokenByAccessorID(nil, t.AccessorID)
		if err != nil {
			return nil, "", err
		}
		if existing == nil {
			return nil, "", structs.NewError(structs.CodeNotFound, "%s not found; list tokens with `berth acl token list`", what)
		}
		t.CreateTime, t.ExpirationTime = existing.CreateTime, existing.Copy().ExpirationTime
		return t, "", nil
	}

	if in.ExpirationTTL < 0 {
		return nil, "", structs.NewError(structs.CodeBadRequest, "%s: expiration TTL %s is negative", what, in.ExpirationTTL)
	}
	t.AccessorID = structs.NewUUID()
	secret := structs.NewUUID()
	t.SecretHash = hashSecret(secret)
	t.CreateTime = now
	if in.ExpirationTTL > 0 {
		exp := now.Add(in.ExpirationTTL)
		t.ExpirationTime, t.ExpirationTTL = &exp, in.ExpirationTTL
	}
	return t, secret, nil
}

// DeleteTokens deletes tokens by accessor ID. Management only.
func (a *ACL) DeleteTokens(args *structs.ACLTokenDeleteRequest, reply *structs.GenericResponse) error {
	if err := a.srv.aclsEnabled("ACL.DeleteTokens"); err != nil {
		return err
	}
	if err := a.srv.allowScope(args.AuthToken, needManagement); err != nil {
		return err
	}
	if len(args.AccessorIDs) == 0 || len(args.AccessorIDs) > maxACLBatch {
		return structs.NewError(structs.CodeBadRequest, "acl token delete: give 1 to %d accessor IDs, not %d", maxACLBatch, len(args.AccessorIDs))
	}
	for _, id := range args.AccessorIDs {
		if isLeaderToken(id) {
			return structs.NewError(structs.CodeBadRequest, "acl token %s is the servers' own; it cannot be deleted", id)
		}
	}
	_, index, err := raftApply[any](a.srv, structs.ACLTokenDeleteRequestType, args)
	if err != nil {
		return err
	}
	reply.Index = index
	return nil
}

// GetToken reads one token by accessor ID, without its secret; Token is
// nil when it does not exist. A management token reads any, any other
// token only itself.
func (a *ACL) GetToken(args *structs.ACLTokenGetRequest, reply *structs.ACLTokenGetResponse) error {
	if err := a.srv.aclsEnabled("ACL.GetToken"); err != nil {
		return err
	}
	acls, self, err := a.srv.resolveToken(args.AuthToken)
	if err != nil {
		return err
	}
	if !acls.IsManagement() && (self == nil || self.AccessorID != args.AccessorID) {
		return errPermission("token lacks a management token; a token may read only itself")
	}
	return a.srv.blockingQuery(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) error {
		t, err := st.ACLTokenByAccessorID(ws, args.AccessorID)
		if err != nil {
			return err
		}
		reply.Token = nil
		if t != nil && !isLeaderToken(t.AccessorID) {
			reply.Token = publicToken(t)
		}
		reply.Index, err = st.IndexWatch(ws, state.TableACLTokens)
		return err
	})
}

// ListTokens lists tokens by accessor prefix, without secrets. Management
// only.
func (a *ACL) ListTokens(args *structs.ACLTokenListRequest, reply *structs.ACLTokenListResponse) error {
	if err := a.srv.aclsEnabled("ACL.ListTokens"); err != nil {
		return err
	}
	if err := a.srv.allowScope(args.AuthToken, needManagement); err != nil {
		return err
	}
	return a.srv.blockingQuery(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) error {
		iter, err := st.ACLTokensByAccessorPrefix(ws, args.Prefix)
		if err != nil {
			return err
		}
		reply.Tokens = []*structs.ACLTokenListStub{}
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			if t := raw.(*structs.ACLToken); !isLeaderToken(t.AccessorID) {
				reply.Tokens = append(reply.Tokens, t.Stub())
			}
		}
		reply.Index, err = st.IndexWatch(ws, state.TableACLTokens)
		return err
	})
}
