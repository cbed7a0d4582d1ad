package server

import (
	"slices"
	"strings"

	"github.com/hashicorp/go-memdb"

	"github.com/berth-csi/berth/acl"
	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/structs"
)

// maxDescription bounds a policy's or token's free text.
const maxDescription = 256

// UpsertPolicies writes policies; each one's rules must parse. Management
// only.
func (a *ACL) UpsertPolicies(args *structs.ACLPolicyUpsertRequest, reply *structs.GenericResponse) error {
	if err := a.srv.aclsEnabled("ACL.UpsertPolicies"); err != nil {
		return err
	}
	if err := a.srv.allowScope(args.AuthToken, needManagement); err != nil {
		return err
	}
	if len(args.Policies) == 0 || len(args.Policies) > maxACLBatch {
		return structs.NewError(structs.CodeBadRequest, "acl policy upsert: give 1 to %d policies, not %d", maxACLBatch, len(args.Policies))
	}
	seen := map[string]bool{}
	policies := make([]*structs.ACLPolicy, 0, len(args.Policies))
	for i, p := range args.Policies {
		if p == nil {
			return structs.NewError(structs.CodeBadRequest, "acl policy upsert: policy %d of the request is empty", i+1)
		}
		if err := validPolicyName(p.Name); err != nil {
			return err
		}
		if seen[p.Name] {
			return structs.NewError(structs.CodeBadRequest, "acl policy upsert: policy %q is given twice in one request", p.Name)
		}
		seen[p.Name] = true
		if len(p.Description) > maxDescription {
			return structs.NewError(structs.CodeBadRequest, "policy %q: description is %d bytes; the most is %d", p.Name, len(p.Description), maxDescription)
		}
		if _, err := acl.Parse(p.Rules); err != nil {
			return structs.NewError(structs.CodeBadRequest, "policy %q: %v", p.Name, err)
		}
		policies = append(policies, &structs.ACLPolicy{Name: p.Name, Description: p.Description, Rules: p.Rules})
	}
	args.Policies = policies
	_, index, err := raftApply[any](a.srv, structs.ACLPolicyUpsertRequestType, args)
	if err != nil {
		return err
	}
	reply.Index = index
	return nil
}

// validPolicyName checks a policy name: 1 to 128 letters, digits, '-' and '_'.
func validPolicyName(name string) error {
	ok := name != "" && len(name) <= 128 && strings.IndexFunc(name, func(r rune) bool {
		return !(r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) < 0
	if !ok {
		return structs.NewError(structs.CodeBadRequest,
			"policy name %s is not valid: use 1 to 128 letters, digits, '-' and '_'", structs.QuoteName(name))
	}
	return nil
}

// DeletePolicies deletes policies by name. Management only.
func (a *ACL) DeletePolicies(args *structs.ACLPolicyDeleteRequest, reply *structs.GenericResponse) error {
	if err := a.srv.aclsEnabled("ACL.DeletePolicies"); err != nil {
		return err
	}
	if err := a.srv.allowScope(args.AuthToken, needManagement); err != nil {
		return err
	}
	if len(args.Names) == 0 || len(args.Names) > maxACLBatch {
		return structs.NewError(structs.CodeBadRequest, "acl policy delete: give 1 to %d policy names, not %d", maxACLBatch, len(args.Names))
	}
	_, index, err := raftApply[any](a.srv, structs.ACLPolicyDeleteRequestType, args)
	if err != nil {
		return err
	}
	reply.Index = index
	return nil
}

// policyReader is who may read which policies: a management token all of
// them, any other token those it holds, an anonymous caller none.
func (a *ACL) policyReader(token string) (all bool, held []string, err error) {
	acls, tok, err := a.srv.resolveToken(token)
	if err != nil {
		return false, nil, err
	}
	if acls.IsManagement() {
		return true, nil, nil
	}
	if tok == nil {
		return false, nil, errPermission("token lacks a management token; an anonymous caller reads no policy")
	}
	return false, tok.Policies, nil
}

// GetPolicy reads one policy; Policy is nil when it does not exist. A
// token that is not management may read only the policies it holds.
func (a *ACL) GetPolicy(args *structs.ACLPolicyGetRequest, reply *structs.ACLPolicyGetResponse) error {
	if err := a.srv.aclsEnabled("ACL.GetPolicy"); err != nil {
		return err
	}
	all, held, err := a.policyReader(args.AuthToken)
	if err != nil {
		return err
	}
	if !all && !slices.Contains(held, args.Name) {
		return errPermission("token lacks a management token, and does not hold policy %q", args.Name)
	}
	return a.srv.blockingQuery(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) error {
		p, err := st.ACLPolicyByName(ws, args.Name)
		if err != nil {
			return err
		}
		reply.Policy = p.Copy()
		reply.Index, err = st.IndexWatch(ws, state.TableACLPolicies)
		return err
	})
}

// ListPolicies lists policies by name prefix: all of them for a
// management token, the ones it holds for any other token.
func (a *ACL) ListPolicies(args *structs.ACLPolicyListRequest, reply *structs.ACLPolicyListResponse) error {
	if err := a.srv.aclsEnabled("ACL.ListPolicies"); err != nil {
		return err
	}
	all, held, err := a.policyReader(args.AuthToken)
	if err != nil {
		return err
	}
	return a.srv.blockingQuery(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) error {
		iter, err := st.ACLPoliciesByNamePrefix(ws, args.Prefix)
		if err != nil {
			return err
		}
		reply.Policies = []*structs.ACLPolicyListStub{}
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			p := raw.(*structs.ACLPolicy)
			if all || slices.Contains(held, p.Name) {
				reply.Policies = append(reply.Policies, p.Stub())
			}
		}
		reply.Index, err = st.IndexWatch(ws, state.TableACLPolicies)
		return err
	})
}
