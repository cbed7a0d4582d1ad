package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

var aclTime = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func aclToken(secret string) *structs.ACLToken {
	return &structs.ACLToken{AccessorID: "acc-1", SecretID: secret, Name: "deploy", Type: structs.ACLTokenTypeClient,
		Policies: []string{"deploy"}, CreateTime: aclTime, CreateIndex: 20, ModifyIndex: 21}
}

// aclReplies are canned answers of the ACL endpoints. Every token carries
// a SecretID, as a server slip would: only bootstrap and create may show
// it.
func aclReplies() map[string]any {
	meta := structs.QueryMeta{Index: 42}
	return map[string]any{
		"ACL.Bootstrap": &structs.ACLTokenUpsertResponse{Tokens: []*structs.ACLToken{{
			AccessorID: "acc-0", SecretID: "secret-0", Name: "Bootstrap Token", Type: structs.ACLTokenTypeManagement,
			CreateTime: aclTime}}, WriteMeta: structs.WriteMeta{Index: 10}},
		"ACL.UpsertTokens": &structs.ACLTokenUpsertResponse{Tokens: []*structs.ACLToken{aclToken("secret-1")},
			WriteMeta: structs.WriteMeta{Index: 21}},
		"ACL.DeleteTokens": &structs.GenericResponse{WriteMeta: structs.WriteMeta{Index: 22}},
		"ACL.GetToken":     &structs.ACLTokenGetResponse{Token: aclToken("secret-1"), QueryMeta: meta},
		"ACL.WhoAmI":       &structs.ACLTokenGetResponse{Token: aclToken("secret-1"), QueryMeta: meta},
		"ACL.ListTokens": &structs.ACLTokenListResponse{Tokens: []*structs.ACLTokenListStub{aclToken("").Stub()},
			QueryMeta: meta},
		"ACL.UpsertPolicies": &structs.GenericResponse{WriteMeta: structs.WriteMeta{Index: 23}},
		"ACL.DeletePolicies": &structs.GenericResponse{WriteMeta: structs.WriteMeta{Index: 24}},
		"ACL.GetPolicy": &structs.ACLPolicyGetResponse{Policy: &structs.ACLPolicy{Name: "deploy", Description: "CI",
			Rules: `node { policy = "read" }`}, QueryMeta: meta},
		"ACL.ListPolicies": &structs.ACLPolicyListResponse{Policies: []*structs.ACLPolicyListStub{{Name: "deploy", Description: "CI"}},
			QueryMeta: meta},
		"Operator.SnapshotSave": &structs.SnapshotSaveResponse{Handle: "h-1", Size: 2, WriteMeta: structs.WriteMeta{Index: 42}},
		"Operator.SnapshotRead": &structs.SnapshotReadResponse{Data: []byte{0x1f, 0x8b}, EOF: true},
	}
}

func TestHandler_ACLRoutes_CallTheirRPC(t *testing.T) {
	testRoutes(t, aclReplies(), []routeCase{
		{"bootstrap post", "POST", "/v1/acl/bootstrap", "", "ACL.Bootstrap", "10", `{"AccessorID":"acc-0","SecretID":"secret-0","Name":"Bootstrap Token","Type":"management"`},
		{"bootstrap put", "PUT", "/v1/acl/bootstrap", "", "ACL.Bootstrap", "10", `"SecretID":"secret-0"`},
		{"token list", "GET", "/v1/acl/tokens", "", "ACL.ListTokens", "42", `[{"AccessorID":"acc-1","Name":"deploy","Type":"client","Policies":["deploy"]`},
		{"token create put", "PUT", "/v1/acl/token", `{"Name":"deploy","Policies":["deploy"]}`, "ACL.UpsertTokens", "21", `{"AccessorID":"acc-1","SecretID":"secret-1"`},
		{"token create post", "POST", "/v1/acl/token", `{"Name":"deploy","Policies":["deploy"]}`, "ACL.UpsertTokens", "21", `"SecretID":"secret-1"`},
		{"token info", "GET", "/v1/acl/token/acc-1", "", "ACL.GetToken", "42", `{"AccessorID":"acc-1","Name":"deploy"`},
		{"token self", "GET", "/v1/acl/token/self", "", "ACL.WhoAmI", "42", `{"AccessorID":"acc-1","Name":"deploy"`},
		{"token update", "PUT", "/v1/acl/token/acc-1", `{"Name":"deploy"}`, "ACL.UpsertTokens", "21", `{"AccessorID":"acc-1","Name":"deploy"`},
		{"token delete", "DELETE", "/v1/acl/token/acc-1", "", "ACL.DeleteTokens", "22", `{"Index":22}`},
		{"policy list", "GET", "/v1/acl/policies", "", "ACL.ListPolicies", "42", `[{"Name":"deploy","Description":"CI"`},
		{"policy info", "GET", "/v1/acl/policy/deploy", "", "ACL.GetPolicy", "42", `{"Name":"deploy","Description":"CI","Rules":"node { policy = \"read\" }"`},
		{"policy apply put", "PUT", "/v1/acl/policy/deploy", `{"Rules":"x"}`, "ACL.UpsertPolicies", "23", `{"Index":23}`},
		{"policy apply post", "POST", "/v1/acl/policy/deploy", `{"Rules":"x"}`, "ACL.UpsertPolicies", "23", `{"Index":23}`},
		{"policy delete", "DELETE", "/v1/acl/policy/deploy", "", "ACL.DeletePolicies", "24", `{"Index":24}`},
	})
}

// TestHandler_ACLTokens_SecretOnlyWhenMade: a token's SecretID is in the
// answers of bootstrap and create only, even if the servers sent it
// elsewhere.
func TestHandler_ACLTokens_SecretOnlyWhenMade(t *testing.T) {
	cases := []struct {
		method, target, body string
		wantSecret           bool
	}{
		{"POST", "/v1/acl/bootstrap", "", true},
		{"POST", "/v1/acl/token", `{"Name":"deploy"}`, true},
		{"POST", "/v1/acl/token/acc-1", `{"Name":"deploy"}`, false},
		{"GET", "/v1/acl/token/acc-1", "", false},
		{"GET", "/v1/acl/token/self", "", false},
		{"GET", "/v1/acl/tokens", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.target, func(t *testing.T) {
			rec := do(t, &fakeBackend{replies: aclReplies()}, tc.method, tc.target, tc.body)
			must.EqOp(t, http.StatusOK, rec.Code, must.Sprint(rec.Body.String()))
			must.EqOp(t, tc.wantSecret, strings.Contains(rec.Body.String(), "SecretID"), must.Sprint(rec.Body.String()))
			must.StrNotContains(t, rec.Body.String(), "SecretHash")
		})
	}
}

func TestHandler_ACLTokenCreate_Body(t *testing.T) {
	t.Run("sends the token as given", func(t *testing.T) {
		b := &fakeBackend{replies: aclReplies()}
		rec := do(t, b, "PUT", "/v1/acl/token", `{"Name":"deploy","Type":"client","Policies":["a","b"],"ExpirationTTL":3600000000000}`)
		must.EqOp(t, http.StatusOK, rec.Code, must.Sprint(rec.Body.String()))
		args := b.last(t).args.(*structs.ACLTokenUpsertRequest)
		must.Len(t, 1, args.Tokens)
		must.Eq(t, &structs.ACLToken{Name: "deploy", Type: "client", Policies: []string{"a", "b"}, ExpirationTTL: time.Hour}, args.Tokens[0])
	})
	cases := []struct {
		name, body, wantMsg string
	}{
		{"accessor", `{"AccessorID":"acc-9","Name":"x"}`, `names AccessorID "acc-9": a new token's accessor is made by the servers; update a token with PUT /v1/acl/token/acc-9`},
		{"secret", `{"SecretID":"mine","Name":"x"}`, "a token's SecretID is made by the servers and cannot be set"},
		{"secret hash", `{"SecretHash":"abc","Name":"x"}`, `unknown field "SecretHash"`},
		{"no body", "", "request body is empty"},
		{"not an object", `[1]`, "request body"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &fakeBackend{}
			mustBadRequest(t, do(t, b, "PUT", "/v1/acl/token", tc.body), b, tc.wantMsg)
		})
	}
}

func TestHandler_ACLTokenUpdate_AccessorFromURL(t *testing.T) {
	cases := []struct {
		name, body string
	}{
		{"none in the body", `{"Name":"renamed","Policies":["p"]}`},
		{"the same in the body", `{"AccessorID":"acc-1","Name":"renamed","Policies":["p"]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &fakeBackend{replies: aclReplies()}
			rec := do(t, b, "POST", "/v1/acl/token/acc-1", tc.body)
			must.EqOp(t, http.StatusOK, rec.Code, must.Sprint(rec.Body.String()))
			args := b.last(t).args.(*structs.ACLTokenUpsertRequest)
			must.Eq(t, &structs.ACLToken{AccessorID: "acc-1", Name: "renamed", Policies: []string{"p"}}, args.Tokens[0])
		})
	}
	t.Run("another in the body", func(t *testing.T) {
		b := &fakeBackend{}
		mustBadRequest(t, do(t, b, "PUT", "/v1/acl/token/acc-1", `{"AccessorID":"acc-2"}`), b,
			`token AccessorID "acc-2" in the request body does not match "acc-1" in the URL`)
	})
	t.Run("a secret in the body", func(t *testing.T) {
		b := &fakeBackend{}
		mustBadRequest(t, do(t, b, "PUT", "/v1/acl/token/acc-1", `{"SecretID":"s"}`), b, "SecretID is made by the servers")
	})
}

func TestHandler_ACLTokenDelete_Args(t *testing.T) {
	b := &fakeBackend{replies: aclReplies()}
	rec := do(t, b, "DELETE", "/v1/acl/token/acc-1", "")
	must.EqOp(t, http.StatusOK, rec.Code)
	must.Eq(t, []string{"acc-1"}, b.last(t).args.(*structs.ACLTokenDeleteRequest).AccessorIDs)
}

func TestHandler_ACLTokenSelf_AsksWhoAmI(t *testing.T) {
	b := &fakeBackend{replies: aclReplies()}
	rec := do(t, b, "GET", "/v1/acl/token/self?stale", "")
	must.EqOp(t, http.StatusOK, rec.Code)
	call := b.last(t)
	must.EqOp(t, "ACL.WhoAmI", call.method)
	args := call.args.(*structs.ACLTokenGetRequest)
	must.EqOp(t, "", args.AccessorID)
	must.True(t, args.AllowStale)
}

func TestHandler_ACLPolicyUpsert_Body(t *testing.T) {
	cases := []struct {
		name, body string
	}{
		{"no name", `{"Description":"CI","Rules":"node { policy = \"read\" }"}`},
		{"the URL's name", `{"Name":"deploy","Description":"CI","Rules":"node { policy = \"read\" }"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &fakeBackend{replies: aclReplies()}
			rec := do(t, b, "PUT", "/v1/acl/policy/deploy", tc.body)
			must.EqOp(t, http.StatusOK, rec.Code, must.Sprint(rec.Body.String()))
			args := b.last(t).args.(*structs.ACLPolicyUpsertRequest)
			must.Eq(t, []*structs.ACLPolicy{{Name: "deploy", Description: "CI", Rules: `node { policy = "read" }`}}, args.Policies)
		})
	}
	bad := []struct {
		name, body, wantMsg string
	}{
		{"another name", `{"Name":"ops"}`, `policy Name "ops" in the request body does not match "deploy" in the URL`},
		{"unknown field", `{"Rule":"x"}`, `unknown field "Rule"; did you mean "Rules"?`},
		{"no body", "", "request body is empty; want a JSON policy object"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			b := &fakeBackend{}
			mustBadRequest(t, do(t, b, "PUT", "/v1/acl/policy/deploy", tc.body), b, tc.wantMsg)
		})
	}
	t.Run("too large", func(t *testing.T) {
		b := &fakeBackend{}
		body := `{"Rules":"` + strings.Repeat("x", maxBodyBytes) + `"}`
		rec := do(t, b, "PUT", "/v1/acl/policy/deploy", body)
		must.EqOp(t, http.StatusRequestEntityTooLarge, rec.Code)
		must.EqOp(t, structs.CodeBadRequest, decodeError(t, rec).Code)
		must.Zero(t, b.count())
	})
}

func TestHandler_ACLPolicyDelete_Args(t *testing.T) {
	b := &fakeBackend{replies: aclReplies()}
	rec := do(t, b, "DELETE", "/v1/acl/policy/deploy", "")
	must.EqOp(t, http.StatusOK, rec.Code)
	must.Eq(t, []string{"deploy"}, b.last(t).args.(*structs.ACLPolicyDeleteRequest).Names)
}

func TestHandler_ACL_NilObjectIs404(t *testing.T) {
	testNilObjects(t, []nilObjectCase{
		{"token", "/v1/acl/token/acc-1", "ACL.GetToken", &structs.ACLTokenGetResponse{QueryMeta: structs.QueryMeta{Index: 9}},
			`token "acc-1" not found; list tokens with GET /v1/acl/tokens`},
		{"self", "/v1/acl/token/self", "ACL.WhoAmI", &structs.ACLTokenGetResponse{QueryMeta: structs.QueryMeta{Index: 9}},
			"no token: the request carried no X-Berth-Token header, or the servers do not know its token"},
		{"policy", "/v1/acl/policy/deploy", "ACL.GetPolicy", &structs.ACLPolicyGetResponse{QueryMeta: structs.QueryMeta{Index: 9}},
			`policy "deploy" not found; list policies with GET /v1/acl/policies`},
	})
}

func TestHandler_ACL_EmptyListsAreArrays(t *testing.T) {
	for _, target := range []string{"/v1/acl/tokens", "/v1/acl/policies"} {
		t.Run(target, func(t *testing.T) {
			rec := do(t, &fakeBackend{}, "GET", target, "")
			must.EqOp(t, http.StatusOK, rec.Code)
			must.EqOp(t, "[]\n", rec.Body.String())
		})
	}
}

// TestHandler_ACLUpsert_NoTokenAnswered: a write that answers without the
// one token it made is a 500, not an empty 200.
func TestHandler_ACLUpsert_NoTokenAnswered(t *testing.T) {
	for _, target := range []string{"/v1/acl/bootstrap", "/v1/acl/token"} {
		t.Run(target, func(t *testing.T) {
			body := ""
			if target == "/v1/acl/token" {
				body = `{"Name":"x"}`
			}
			rec := do(t, &fakeBackend{}, "POST", target, body)
			must.EqOp(t, http.StatusInternalServerError, rec.Code)
			must.StrContains(t, decodeError(t, rec).Message, "with 0 tokens, want 1")
		})
	}
}

func TestHandler_ACLRoutes_WrongMethod(t *testing.T) {
	cases := []struct {
		method, target, wantAllow string
	}{
		{"GET", "/v1/acl/bootstrap", "POST, PUT"},
		{"DELETE", "/v1/acl/tokens", "GET"},
		{"GET", "/v1/acl/token", "POST, PUT"},
		{"PUT", "/v1/acl/token/self", "GET"},
		{"DELETE", "/v1/acl/token/self", "GET"},
		{"PATCH", "/v1/acl/token/acc-1", "DELETE, GET, POST, PUT"},
		{"PUT", "/v1/acl/policies", "GET"},
		{"PATCH", "/v1/acl/policy/deploy", "DELETE, GET, POST, PUT"},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.target, func(t *testing.T) {
			mustNotAllowed(t, tc.method, tc.target, tc.wantAllow)
		})
	}
}

// TestHandler_ACLBootstrap_Refused: the servers' refusal of a second
// bootstrap reaches the caller as it was coded.
func TestHandler_ACLBootstrap_Refused(t *testing.T) {
	msg := "ACL bootstrap already done; use the management token it returned, or reset ACLs"
	rec := do(t, &fakeBackend{err: structs.NewError(structs.CodeBadRequest, "%s", msg)}, "POST", "/v1/acl/bootstrap", "")
	must.EqOp(t, http.StatusBadRequest, rec.Code)
	var e errorBody
	must.NoError(t, json.Unmarshal(rec.Body.Bytes(), &e))
	must.Eq(t, errorBody{Code: structs.CodeBadRequest, Message: msg}, e)
}
