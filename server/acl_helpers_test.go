package server

import (
	"context"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

// testNodeSecret is the node secret of every node the tests register (a
// client sends its own, from its data dir).
const testNodeSecret = "5ec2e7e5-0000-4000-8000-000000000001"

// withNodeSecret gives a request without a token the test nodes' secret.
func withNodeSecret(args any) {
	if a, ok := args.(authInfo); ok && a.GetAuthToken() == "" {
		a.SetAuthToken(testNodeSecret)
	}
}

// callAs calls s in process with token as the request's AuthToken ("" is
// anonymous).
func callAs(t *testing.T, s *Server, token, method string, args, reply any) error {
	t.Helper()
	a, ok := args.(authInfo)
	must.True(t, ok, must.Sprintf("%s: args %T carry no token", method, args))
	a.SetAuthToken(token)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return s.RPC(ctx, method, args, reply)
}

// aclServer starts a one-server cluster with ACLs on and bootstraps it;
// it returns the server and the management token's secret.
func aclServer(t *testing.T, opts ...func(*Config)) (*Server, string) {
	t.Helper()
	s := testServer(t, append([]func(*Config){func(c *Config) { c.ACLEnabled = true }}, opts...)...)
	var resp structs.ACLTokenUpsertResponse
	must.NoError(t, callAs(t, s, "", "ACL.Bootstrap", &structs.ACLBootstrapRequest{}, &resp))
	must.Len(t, 1, resp.Tokens)
	must.NotEq(t, "", resp.Tokens[0].SecretID)
	return s, resp.Tokens[0].SecretID
}

// makeToken writes policy name with rules and a client token holding it;
// it returns the token's secret.
func makeToken(t *testing.T, s *Server, mgmt, name, rules string) string {
	t.Helper()
	must.NoError(t, callAs(t, s, mgmt, "ACL.UpsertPolicies", &structs.ACLPolicyUpsertRequest{
		Policies: []*structs.ACLPolicy{{Name: name, Rules: rules}}}, &structs.GenericResponse{}))
	var resp structs.ACLTokenUpsertResponse
	must.NoError(t, callAs(t, s, mgmt, "ACL.UpsertTokens", &structs.ACLTokenUpsertRequest{
		Tokens: []*structs.ACLToken{{Name: name, Policies: []string{name}}}}, &resp))
	must.Len(t, 1, resp.Tokens)
	return resp.Tokens[0].SecretID
}

// readOnlyRules reads everything and writes nothing.
const readOnlyRules = `
namespace "*" {
  policy = "read"
}
node {
  policy = "read"
}
plugin {
  policy = "read"
}
operator {
  policy = "read"
}
`
