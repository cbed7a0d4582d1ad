package api

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

const (
	tokenJSON = `{"AccessorID":"acc-1","SecretID":"sec-1","Name":"deploy","Type":"client","Policies":["deploy"],` +
		`"CreateTime":"2026-03-01T12:00:00Z","CreateIndex":20,"ModifyIndex":20}`
	forbidden = `{"Code":"PermissionDenied","Message":"permission denied: this needs the management token"}`
)

func TestACLBootstrap_ReturnsTheToken(t *testing.T) {
	cs, c := newCannedServer(t, map[string]canned{
		"POST /v1/acl/bootstrap": {index: "10", body: tokenJSON},
	})
	token, wm, err := c.ACLBootstrap()
	must.NoError(t, err)
	must.EqOp(t, uint64(10), wm.LastIndex)
	must.EqOp(t, "acc-1", token.AccessorID)
	must.EqOp(t, "sec-1", token.SecretID)
	must.EqOp(t, time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), token.CreateTime)
	last := cs.last(t)
	must.EqOp(t, "", last.body)
}

func TestACLBootstrap_SecondIsRefused(t *testing.T) {
	_, c := newCannedServer(t, map[string]canned{
		"POST /v1/acl/bootstrap": {status: 400, body: `{"Code":"BadRequest","Message":"ACL bootstrap already done"}`},
	})
	token, wm, err := c.ACLBootstrap()
	must.Nil(t, token)
	must.Nil(t, wm)
	must.ErrorIs(t, err, structs.ErrBadRequest)
	must.EqError(t, err, "ACL bootstrap already done")
}

func TestACLTokens_Create_SendsWhatACallerMaySet(t *testing.T) {
	cs, c := newCannedServer(t, map[string]canned{
		"PUT /v1/acl/token": {index: "21", body: tokenJSON},
	})
	token, wm, err := c.ACLTokens().Create(&structs.ACLToken{Name: "deploy", Type: "client",
		Policies: []string{"deploy", "read"}, ExpirationTTL: time.Hour, CreateIndex: 99})
	must.NoError(t, err)
	must.EqOp(t, uint64(21), wm.LastIndex)
	must.EqOp(t, "sec-1", token.SecretID)
	last := cs.last(t)
	must.EqOp(t, "PUT", last.method)
	must.EqOp(t, `{"Name":"deploy","Type":"client","Policies":["deploy","read"],"ExpirationTTL":3600000000000}`, last.body)
	// The server decodes the body into a structs.ACLToken.
	var got structs.ACLToken
	must.NoError(t, json.Unmarshal([]byte(last.body), &got))
	must.EqOp(t, time.Hour, got.ExpirationTTL)
}

func TestACLTokens_WritesRefusedBeforeSending(t *testing.T) {
	cs, c := newCannedServer(t, map[string]canned{})
	cases := []struct {
		name    string
		call    func() error
		wantMsg string
	}{
		{"create nil", func() error { _, _, err := c.ACLTokens().Create(nil); return err }, "api: create token: no token given"},
		{"create with accessor", func() error {
			_, _, err := c.ACLTokens().Create(&structs.ACLToken{AccessorID: "acc-1"})
			return err
		}, `api: create token: the token has AccessorID "acc-1"; the servers make it`},
		{"create with secret", func() error {
			_, _, err := c.ACLTokens().Create(&structs.ACLToken{SecretID: "s"})
			return err
		}, "api: create token: the token has a SecretID; the servers make it"},
		{"update without accessor", func() error {
			_, _, err := c.ACLTokens().Update(&structs.ACLToken{Name: "x"})
			return err
		}, "api: update token: the token has no AccessorID"},
		{"update with secret", func() error {
			_, _, err := c.ACLTokens().Update(&structs.ACLToken{AccessorID: "acc-1", SecretID: "s"})
			return err
		}, `api: update token "acc-1": the token has a SecretID`},
		{"delete without accessor", func() error { _, err := c.ACLTokens().Delete(""); return err }, "no accessor ID given"},
		{"info without accessor", func() error { _, _, err := c.ACLTokens().Info("", nil); return err }, "no accessor ID given"},
		{"policy without name", func() error { _, err := c.ACLPolicies().Upsert(&structs.ACLPolicy{Rules: "x"}); return err }, "api: write policy: the policy has no Name"},
		{"policy nil", func() error { _, err := c.ACLPolicies().Upsert(nil); return err }, "the policy has no Name"},
		{"policy delete without name", func() error { _, err := c.ACLPolicies().Delete(""); return err }, "no policy name given"},
		{"policy info without name", func() error { _, _, err := c.ACLPolicies().Info("", nil); return err }, "no policy name given"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			must.ErrorContains(t, tc.call(), tc.wantMsg)
			must.Zero(t, cs.count())
		})
	}
}

func TestACLTokens_Update(t *testing.T) {
	cs, c := newCannedServer(t, map[string]canned{
		"PUT /v1/acl/token/a b": {index: "22", body: `{"AccessorID":"a b","Name":"renamed","Type":"management"}`},
	})
	token, wm, err := c.ACLTokens().Update(&structs.ACLToken{AccessorID: "a b", Name: "renamed", Type: "management"})
	must.NoError(t, err)
	must.EqOp(t, uint64(22), wm.LastIndex)
	must.EqOp(t, "renamed", token.Name)
	last := cs.last(t)
	must.EqOp(t, "/v1/acl/token/a%20b", last.rawPath)
	must.EqOp(t, `{"AccessorID":"a b","Name":"renamed","Type":"management"}`, last.body)
}

func TestACLTokens_Reads(t *testing.T) {
	cs, c := newCannedServer(t, map[string]canned{
		"GET /v1/acl/tokens":       {index: "30", body: `[{"AccessorID":"acc-1","Name":"deploy","Type":"client","Policies":["deploy"]}]`},
		"GET /v1/acl/token/acc-1":  {index: "31", body: tokenJSON},
		"GET /v1/acl/token/self":   {index: "32", body: tokenJSON},
		"GET /v1/acl/token/acc-99": {status: 404, body: `{"Code":"NotFound","Message":"token \"acc-99\" not found"}`},
	})
	t.Run("list by prefix", func(t *testing.T) {
		tokens, qm, err := c.ACLTokens().List(&QueryOptions{Prefix: "acc"})
		must.NoError(t, err)
		must.EqOp(t, uint64(30), qm.LastIndex)
		must.True(t, qm.KnownLeader)
		must.Len(t, 1, tokens)
		must.Eq(t, []string{"deploy"}, tokens[0].Policies)
		must.EqOp(t, "prefix=acc", cs.last(t).query)
	})
	t.Run("info", func(t *testing.T) {
		token, qm, err := c.ACLTokens().Info("acc-1", &QueryOptions{WaitIndex: 5, WaitTime: time.Second})
		must.NoError(t, err)
		must.EqOp(t, uint64(31), qm.LastIndex)
		must.EqOp(t, "deploy", token.Name)
		must.EqOp(t, "index=5&wait=1s", cs.last(t).query)
	})
	t.Run("self", func(t *testing.T) {
		token, _, err := c.ACLTokens().Self(nil)
		must.NoError(t, err)
		must.EqOp(t, "acc-1", token.AccessorID)
	})
	t.Run("missing", func(t *testing.T) {
		_, _, err := c.ACLTokens().Info("acc-99", nil)
		must.ErrorIs(t, err, structs.ErrNotFound)
	})
}

func TestACLTokens_Delete(t *testing.T) {
	cs, c := newCannedServer(t, map[string]canned{
		"DELETE /v1/acl/token/acc-1": {index: "40", body: `{"Index":40}`},
		"DELETE /v1/acl/token/acc-2": {status: 403, body: forbidden},
	})
	wm, err := c.ACLTokens().Delete("acc-1")
	must.NoError(t, err)
	must.EqOp(t, uint64(40), wm.LastIndex)
	must.EqOp(t, "DELETE", cs.last(t).method)
	_, err = c.ACLTokens().Delete("acc-2")
	must.ErrorIs(t, err, structs.ErrPermissionDenied)
	must.EqError(t, err, "permission denied: this needs the management token")
}

func TestACLPolicies_UpsertAndDelete(t *testing.T) {
	cs, c := newCannedServer(t, map[string]canned{
		"PUT /v1/acl/policy/deploy":    {index: "50", body: `{"Index":50}`},
		"DELETE /v1/acl/policy/deploy": {index: "51", body: `{"Index":51}`},
		"PUT /v1/acl/policy/bad":       {status: 400, body: `{"Code":"BadRequest","Message":"policy \"bad\": line 1: unknown block \"nod\""}`},
	})
	rules := "node {\n  policy = \"read\"\n}\n"
	wm, err := c.ACLPolicies().Upsert(&structs.ACLPolicy{Name: "deploy", Description: "CI", Rules: rules, ModifyIndex: 9})
	must.NoError(t, err)
	must.EqOp(t, uint64(50), wm.LastIndex)
	var got structs.ACLPolicy
	must.NoError(t, json.Unmarshal([]byte(cs.last(t).body), &got))
	must.Eq(t, structs.ACLPolicy{Name: "deploy", Description: "CI", Rules: rules}, got)

	wm, err = c.ACLPolicies().Delete("deploy")
	must.NoError(t, err)
	must.EqOp(t, uint64(51), wm.LastIndex)

	_, err = c.ACLPolicies().Upsert(&structs.ACLPolicy{Name: "bad", Rules: "nod {}"})
	must.ErrorIs(t, err, structs.ErrBadRequest)
	must.EqError(t, err, `policy "bad": line 1: unknown block "nod"`)
}

func TestACLPolicies_Reads(t *testing.T) {
	_, c := newCannedServer(t, map[string]canned{
		"GET /v1/acl/policies":      {index: "60", body: `[{"Name":"deploy","Description":"CI","CreateIndex":5,"ModifyIndex":6}]`},
		"GET /v1/acl/policy/deploy": {index: "61", body: `{"Name":"deploy","Description":"CI","Rules":"node {}","CreateIndex":5,"ModifyIndex":6}`},
		"GET /v1/acl/policy/nope":   {status: 404, body: `{"Code":"NotFound","Message":"policy \"nope\" not found"}`},
	})
	policies, qm, err := c.ACLPolicies().List(nil)
	must.NoError(t, err)
	must.EqOp(t, uint64(60), qm.LastIndex)
	must.Eq(t, []*structs.ACLPolicyListStub{{Name: "deploy", Description: "CI", CreateIndex: 5, ModifyIndex: 6}}, policies)

	policy, _, err := c.ACLPolicies().Info("deploy", nil)
	must.NoError(t, err)
	must.EqOp(t, "node {}", policy.Rules)

	_, _, err = c.ACLPolicies().Info("nope", nil)
	must.ErrorIs(t, err, structs.ErrNotFound)
}
