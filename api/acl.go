package api

import (
	"fmt"
	"net/http"
	"time"

	"github.com/berth-csi/berth/structs"
)

// ACLBootstrap makes the cluster's first management token and returns it
// with its SecretID: the one time it is shown. The servers refuse a
// second bootstrap (409, naming the reset index) unless the leader's
// data dir holds an acl-bootstrap-reset file with that index.
func (c *Client) ACLBootstrap() (*structs.ACLToken, *WriteMeta, error) {
	var out structs.ACLToken
	wm, err := c.write(http.MethodPost, "/v1/acl/bootstrap", nil, nil, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, wm, nil
}

// ACLTokens reads and changes ACL tokens.
type ACLTokens struct{ c *Client }

// ACLTokens returns the token endpoints.
func (c *Client) ACLTokens() *ACLTokens { return &ACLTokens{c} }

// tokenWire is a token as create and update send it: what a caller may
// set. The servers make the accessor, the secret and the times.
type tokenWire struct {
	AccessorID     string        `json:",omitempty"`
	Name           string        `json:",omitempty"`
	Type           string        `json:",omitempty"`
	Policies       []string      `json:",omitempty"`
	ExpirationTime *time.Time    `json:",omitempty"`
	ExpirationTTL  time.Duration `json:",omitempty"`
}

func toTokenWire(t *structs.ACLToken) (*tokenWire, error) {
	if t.SecretID != "" {
		return nil, fmt.Errorf("the token has a SecretID; the servers make it, leave it empty")
	}
	return &tokenWire{AccessorID: t.AccessorID, Name: t.Name, Type: t.Type, Policies: t.Policies,
		ExpirationTime: t.ExpirationTime, ExpirationTTL: t.ExpirationTTL}, nil
}

// Create makes a token of token's Name, Type (client when empty) and
// Policies; ExpirationTTL, if set, makes it expire. token must have no
// AccessorID. It returns the token with its SecretID: the one time it is
// shown.
func (a *ACLTokens) Create(token *structs.ACLToken) (*structs.ACLToken, *WriteMeta, error) {
	if token == nil {
		return nil, nil, fmt.Errorf("api: create token: no token given")
	}
	if token.AccessorID != "" {
		return nil, nil, fmt.Errorf("api: create token: the token has AccessorID %q; the servers make it (update a token with Update)", token.AccessorID)
	}
	body, err := toTokenWire(token)
	if err != nil {
		return nil, nil, fmt.Errorf("api: create token: %w", err)
	}
	var out structs.ACLToken
	wm, err := a.c.write(http.MethodPut, "/v1/acl/token", nil, body, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, wm, nil
}

// Update sets the name, type and policies of the token whose AccessorID
// token names; its secret does not change. It returns the token as
// written, without its secret.
func (a *ACLTokens) Update(token *structs.ACLToken) (*structs.ACLToken, *WriteMeta, error) {
	if token == nil || token.AccessorID == "" {
		return nil, nil, fmt.Errorf("api: update token: the token has no AccessorID")
	}
	body, err := toTokenWire(token)
	if err != nil {
		return nil, nil, fmt.Errorf("api: update token %q: %w", token.AccessorID, err)
	}
	var out structs.ACLToken
	wm, err := a.c.write(http.MethodPut, "/v1/acl/token/"+escape(token.AccessorID), nil, body, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, wm, nil
}

// Delete deletes the token with the full accessor ID accessorID.
func (a *ACLTokens) Delete(accessorID string) (*WriteMeta, error) {
	if accessorID == "" {
		return nil, fmt.Errorf("api: delete token: no accessor ID given")
	}
	return a.c.write(http.MethodDelete, "/v1/acl/token/"+escape(accessorID), nil, nil, nil)
}

// Info returns the token with the full accessor ID accessorID, without
// its secret; a missing token is an error that matches
// structs.ErrNotFound.
func (a *ACLTokens) Info(accessorID string, q *QueryOptions) (*structs.ACLToken, *QueryMeta, error) {
	if accessorID == "" {
		return nil, nil, fmt.Errorf("api: read token: no accessor ID given")
	}
	var out structs.ACLToken
	qm, err := a.c.query("/v1/acl/token/"+escape(accessorID), nil, &out, q)
	if err != nil {
		return nil, nil, err
	}
	return &out, qm, nil
}

// Self returns the token the client sends, without its secret.
func (a *ACLTokens) Self(q *QueryOptions) (*structs.ACLToken, *QueryMeta, error) {
	var out structs.ACLToken
	qm, err := a.c.query("/v1/acl/token/self", nil, &out, q)
	if err != nil {
		return nil, nil, err
	}
	return &out, qm, nil
}

// List returns the tokens (no secrets), filtered by q.Prefix on their
// accessor IDs.
func (a *ACLTokens) List(q *QueryOptions) ([]*structs.ACLTokenListStub, *QueryMeta, error) {
	var out []*structs.ACLTokenListStub
	qm, err := a.c.query("/v1/acl/tokens", nil, &out, q)
	if err != nil {
		return nil, nil, err
	}
	return out, qm, nil
}

// ACLPolicies reads and changes ACL policies.
type ACLPolicies struct{ c *Client }

// ACLPolicies returns the policy endpoints.
func (c *Client) ACLPolicies() *ACLPolicies { return &ACLPolicies{c} }

// policyWire is a policy as upsert sends it.
type policyWire struct {
	Name        string
	Description string `json:",omitempty"`
	Rules       string
}

// Upsert writes policy (its Name, Description and Rules), creating it or
// replacing the one of that name. The servers check the rules.
func (p *ACLPolicies) Upsert(policy *structs.ACLPolicy) (*WriteMeta, error) {
	if policy == nil || policy.Name == "" {
		return nil, fmt.Errorf("api: write policy: the policy has no Name")
	}
	body := policyWire{Name: policy.Name, Description: policy.Description, Rules: policy.Rules}
	return p.c.write(http.MethodPut, "/v1/acl/policy/"+escape(policy.Name), nil, body, nil)
}

// Delete deletes the policy name.
func (p *ACLPolicies) Delete(name string) (*WriteMeta, error) {
	if name == "" {
		return nil, fmt.Errorf("api: delete policy: no policy name given")
	}
	return p.c.write(http.MethodDelete, "/v1/acl/policy/"+escape(name), nil, nil, nil)
}

// Info returns the policy name with its rules; a missing policy is an
// error that matches structs.ErrNotFound.
func (p *ACLPolicies) Info(name string, q *QueryOptions) (*structs.ACLPolicy, *QueryMeta, error) {
	if name == "" {
		return nil, nil, fmt.Errorf("api: read policy: no policy name given")
	}
	var out structs.ACLPolicy
	qm, err := p.c.query("/v1/acl/policy/"+escape(name), nil, &out, q)
	if err != nil {
		return nil, nil, err
	}
	return &out, qm, nil
}

// List returns the policies (names and descriptions, no rules).
func (p *ACLPolicies) List(q *QueryOptions) ([]*structs.ACLPolicyListStub, *QueryMeta, error) {
	var out []*structs.ACLPolicyListStub
	qm, err := p.c.query("/v1/acl/policies", nil, &out, q)
	if err != nil {
		return nil, nil, err
	}
	return out, qm, nil
}
