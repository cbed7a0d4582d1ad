package structs

import "time"

// ACL token types.
const (
	ACLTokenTypeClient     = "client"     // allowed what its policies allow
	ACLTokenTypeManagement = "management" // allowed everything
)

// AnonymousPolicyName is the policy that applies to a request with no token
// or an unknown one. It does not exist until an operator writes it: then
// anonymous callers may do nothing.
const AnonymousPolicyName = "anonymous"

// ACLPolicy is a named set of rules in the policy language (HCL), stored as
// the operator wrote them.
type ACLPolicy struct {
	Name        string
	Description string
	Rules       string

	CreateIndex uint64
	ModifyIndex uint64
}

// Copy returns a copy.
func (p *ACLPolicy) Copy() *ACLPolicy {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}

// Stub returns the list form of the policy.
func (p *ACLPolicy) Stub() *ACLPolicyListStub {
	return &ACLPolicyListStub{Name: p.Name, Description: p.Description,
		CreateIndex: p.CreateIndex, ModifyIndex: p.ModifyIndex}
}

// ACLPolicyListStub is a policy in a list.
type ACLPolicyListStub struct {
	Name        string
	Description string
	CreateIndex uint64
	ModifyIndex uint64
}

// ACLToken is a caller's credential. AccessorID names it in lists and
// commands; SecretID is what the caller sends (X-Berth-Token), and it is
// shown once, in the answer that creates the token: the servers keep only
// its SHA-256 (SecretHash), which never leaves them.
type ACLToken struct {
	AccessorID string
	SecretID   string `codec:"SecretID" json:",omitempty"`
	SecretHash string `codec:"SecretHash" json:"-"`
	Name       string
	Type       string // ACLTokenTypeClient or ACLTokenTypeManagement
	Policies   []string

	CreateTime     time.Time
	ExpirationTime *time.Time    `json:",omitempty"` // nil: never expires
	ExpirationTTL  time.Duration `json:",omitempty"` // on create: sets ExpirationTime

	CreateIndex uint64
	ModifyIndex uint64
}

// Copy returns a deep copy.
func (t *ACLToken) Copy() *ACLToken {
	if t == nil {
		return nil
	}
	c := *t
	c.Policies = append([]string(nil), t.Policies...)
	if t.ExpirationTime != nil {
		e := *t.ExpirationTime
		c.ExpirationTime = &e
	}
	return &c
}

// Expired reports whether the token has expired at now.
func (t *ACLToken) Expired(now time.Time) bool {
	return t.ExpirationTime != nil && !now.Before(*t.ExpirationTime)
}

// Stub returns the list form of the token (no secret).
func (t *ACLToken) Stub() *ACLTokenListStub {
	c := t.Copy()
	return &ACLTokenListStub{AccessorID: c.AccessorID, Name: c.Name, Type: c.Type,
		Policies: c.Policies, CreateTime: c.CreateTime, ExpirationTime: c.ExpirationTime,
		CreateIndex: c.CreateIndex, ModifyIndex: c.ModifyIndex}
}

// ACLTokenListStub is a token in a list.
type ACLTokenListStub struct {
	AccessorID     string
	Name           string
	Type           string
	Policies       []string
	CreateTime     time.Time
	ExpirationTime *time.Time `json:",omitempty"`
	CreateIndex    uint64
	ModifyIndex    uint64
}

// ACLBootstrapRequest makes a management token: the cluster's first, or
// one more after a reset. The endpoint stamps Token (accessor, secret
// hash, time) and ResetIndex before the raft write, whatever the caller
// sent. ResetIndex is the reset index (the raft index of the latest
// bootstrap) the write expects: 0 for the first bootstrap, the one read
// from the leader's acl-bootstrap-reset file for a reset. The write is
// refused unless the state's reset index is ResetIndex.
type ACLBootstrapRequest struct {
	Token      *ACLToken
	ResetIndex uint64
	WriteRequest
}

// ACLTokenUpsertRequest creates tokens (no AccessorID) or updates them
// (AccessorID set: name, policies and type change; the secret does not).
type ACLTokenUpsertRequest struct {
	Tokens []*ACLToken
	WriteRequest
}

// ACLTokenUpsertResponse returns the tokens written; a created token
// carries its SecretID, this once.
type ACLTokenUpsertResponse struct {
	Tokens []*ACLToken
	WriteMeta
}

// ACLTokenDeleteRequest deletes tokens by accessor ID.
type ACLTokenDeleteRequest struct {
	AccessorIDs []string
	WriteRequest
}

// ACLTokenGetRequest reads one token by accessor ID (or, for WhoAmI, the
// caller's own token: AccessorID empty).
type ACLTokenGetRequest struct {
	AccessorID string
	QueryOptions
}

// ACLTokenGetResponse answers ACLTokenGetRequest.
type ACLTokenGetResponse struct {
	Token *ACLToken
	QueryMeta
}

// ACLTokenListRequest lists tokens.
type ACLTokenListRequest struct {
	QueryOptions
}

// ACLTokenListResponse answers ACLTokenListRequest.
type ACLTokenListResponse struct {
	Tokens []*ACLTokenListStub
	QueryMeta
}

// ACLPolicyUpsertRequest writes policies, each checked by the policy
// parser first.
type ACLPolicyUpsertRequest struct {
	Policies []*ACLPolicy
	WriteRequest
}

// ACLPolicyDeleteRequest deletes policies by name.
type ACLPolicyDeleteRequest struct {
	Names []string
	WriteRequest
}

// ACLPolicyGetRequest reads one policy.
type ACLPolicyGetRequest struct {
	Name string
	QueryOptions
}

// ACLPolicyGetResponse answers ACLPolicyGetRequest.
type ACLPolicyGetResponse struct {
	Policy *ACLPolicy
	QueryMeta
}

// ACLPolicyListRequest lists policies.
type ACLPolicyListRequest struct {
	QueryOptions
}

// ACLPolicyListResponse answers ACLPolicyListRequest.
type ACLPolicyListResponse struct {
	Policies []*ACLPolicyListStub
	QueryMeta
}
