package command

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/berth-csi/berth/structs"
)

// The ACL fixture answers the ACL routes as the handlers shape them, with
// three tokens and two policies, and records the writes. It is a server
// of its own, beside the main fixture, whose writes it shares.

const (
	tokenBoot   = "0b7f1c2e-1111-4c4c-8888-0000000000a1"
	tokenDeploy = "0b7f9d00-2222-4c4c-8888-0000000000a2"
	tokenRead   = "c11e0003-3333-4c4c-8888-0000000000a3"
	tokenNew    = "9e770004-4444-4c4c-8888-0000000000a4"
	secretNew   = "5ec7e700-5555-4c4c-8888-0000000000a5"
	// secretDeploy is the deploy token's secret, the one self knows.
	secretDeploy = "5ec7e701-6666-4c4c-8888-0000000000a6"

	readonlyRules = "namespace \"default\" {\n  policy = \"read\"\n}\n\nnode {\n  policy = \"read\"\n}\n"
)

func fixtureTokens() []*structs.ACLToken {
	expiry := fixtureTime.Add(24 * time.Hour)
	return []*structs.ACLToken{
		{AccessorID: tokenBoot, Name: "Bootstrap Token", Type: structs.ACLTokenTypeManagement,
			CreateTime: fixtureTime, CreateIndex: 5, ModifyIndex: 5},
		{AccessorID: tokenDeploy, Name: "deploy", Type: structs.ACLTokenTypeClient, Policies: []string{"deploy", "readonly"},
			CreateTime: fixtureTime.Add(time.Hour), ExpirationTime: &expiry, CreateIndex: 7, ModifyIndex: 9},
		{AccessorID: tokenRead, Name: "dashboard", Type: structs.ACLTokenTypeClient, Policies: []string{"readonly"},
			CreateTime: fixtureTime.Add(2 * time.Hour), CreateIndex: 8, ModifyIndex: 8},
	}
}

func fixturePolicies() []*structs.ACLPolicy {
	return []*structs.ACLPolicy{
		{Name: "readonly", Rules: readonlyRules, CreateIndex: 3, ModifyIndex: 3},
		{Name: "deploy", Description: "CI deploys\njobs and volumes", Rules: "namespace \"default\" {\n  policy = \"write\"\n}\n",
			CreateIndex: 4, ModifyIndex: 6},
	}
}

// newACLServer serves the ACL routes; f records the writes. A bootstrap
// succeeds once; token self knows the deploy token's secret only.
func (f *fixture) newACLServer(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	bootstrapped := false
	mux.HandleFunc("POST /v1/acl/bootstrap", func(w http.ResponseWriter, r *http.Request) {
		f.record(r)
		f.mu.Lock()
		again := bootstrapped
		bootstrapped = true
		f.mu.Unlock()
		if again {
			replyError(w, 400, "BadRequest", "ACL bootstrap already done: use the management token it returned")
			return
		}
		token := fixtureTokens()[0]
		token.SecretID = secretNew
		reply(w, 10, token)
	})
	accessor := func(t *structs.ACLToken) string { return t.AccessorID }
	mux.HandleFunc("GET /v1/acl/tokens", listRoute(20, fixtureTokens, accessor, (*structs.ACLToken).Stub))
	mux.HandleFunc("GET /v1/acl/token/self", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Berth-Token") != secretDeploy {
			replyError(w, 404, "NotFound", "no token: the request carried no X-Berth-Token header, or the servers do not know its token")
			return
		}
		reply(w, 20, fixtureTokens()[1])
	})
	mux.HandleFunc("GET /v1/acl/token/{id}", getRoute(20, "token", fixtureTokens, accessor))
	mux.HandleFunc("PUT /v1/acl/token", func(w http.ResponseWriter, r *http.Request) {
		var token structs.ACLToken
		if err := json.Unmarshal(f.record(r), &token); err != nil {
			replyError(w, 400, "BadRequest", "fixture: bad token body")
			return
		}
		token.AccessorID, token.SecretID = tokenNew, secretNew
		token.CreateTime, token.CreateIndex, token.ModifyIndex = fixtureTime, 30, 30
		if token.ExpirationTTL > 0 {
			expiry := fixtureTime.Add(token.ExpirationTTL)
			token.ExpirationTime = &expiry
		}
		reply(w, 30, &token)
	})
	mux.HandleFunc("PUT /v1/acl/token/{id}", func(w http.ResponseWriter, r *http.Request) {
		var token structs.ACLToken
		if err := json.Unmarshal(f.record(r), &token); err != nil || token.AccessorID != r.PathValue("id") {
			replyError(w, 400, "BadRequest", "fixture: bad token body")
			return
		}
		token.ModifyIndex = 31
		reply(w, 31, &token)
	})
	mux.HandleFunc("DELETE /v1/acl/token/{id}", func(w http.ResponseWriter, r *http.Request) {
		f.record(r)
		reply(w, 32, &structs.GenericResponse{WriteMeta: structs.WriteMeta{Index: 32}})
	})
	name := func(p *structs.ACLPolicy) string { return p.Name }
	mux.HandleFunc("GET /v1/acl/policies", listRoute(40, fixturePolicies, name, (*structs.ACLPolicy).Stub))
	mux.HandleFunc("GET /v1/acl/policy/{id}", getRoute(40, "policy", fixturePolicies, name))
	mux.HandleFunc("PUT /v1/acl/policy/{id}", func(w http.ResponseWriter, r *http.Request) {
		f.record(r)
		if r.PathValue("id") == "bad" {
			replyError(w, 400, "BadRequest", `policy "bad": rules line 1: unknown block "nod"; see the policy language in the documentation`)
			return
		}
		reply(w, 41, &structs.GenericResponse{WriteMeta: structs.WriteMeta{Index: 41}})
	})
	mux.HandleFunc("DELETE /v1/acl/policy/{id}", func(w http.ResponseWriter, r *http.Request) {
		f.record(r)
		if r.PathValue("id") == "nope" {
			replyError(w, 404, "NotFound", `policy "nope" not found`)
			return
		}
		reply(w, 42, &structs.GenericResponse{WriteMeta: structs.WriteMeta{Index: 42}})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		replyError(w, 404, "NotFound", "no such API route: "+r.Method+" "+r.URL.Path)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}
