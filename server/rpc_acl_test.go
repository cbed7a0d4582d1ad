package server

import (
	"bytes"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/acl"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

func TestACL_Bootstrap_Once(t *testing.T) {
	s, mgmt := aclServer(t)

	// The servers keep the hash, never the secret.
	tok, err := s.State().ACLTokenBySecretHash(nil, hashSecret(mgmt))
	must.NoError(t, err)
	must.NotNil(t, tok)
	must.Eq(t, structs.ACLTokenTypeManagement, tok.Type)
	must.Eq(t, "", tok.SecretID)

	var again structs.ACLTokenUpsertResponse
	err = callAs(t, s, "", "ACL.Bootstrap", &structs.ACLBootstrapRequest{}, &again)
	must.ErrorIs(t, err, structs.ErrConflict)
	must.StrContains(t, err.Error(), "ACL bootstrap already done (reset index: ")
	must.StrContains(t, err.Error(), "use the management token made then")

	var self structs.ACLTokenGetResponse
	must.NoError(t, callAs(t, s, mgmt, "ACL.WhoAmI", &structs.ACLTokenGetRequest{}, &self))
	must.Eq(t, tok.AccessorID, self.Token.AccessorID)
	must.Eq(t, "", self.Token.SecretID)
	must.Eq(t, "", self.Token.SecretHash)
}

func TestACL_Disabled(t *testing.T) {
	s := testServer(t)
	for _, m := range []string{"ACL.Bootstrap", "ACL.ListTokens"} {
		var args any = &structs.ACLBootstrapRequest{}
		if m == "ACL.ListTokens" {
			args = &structs.ACLTokenListRequest{}
		}
		err := callAs(t, s, "", m, args, nil)
		must.ErrorIs(t, err, structs.ErrBadRequest)
		must.StrContains(t, err.Error(), "ACLs are disabled")
	}
}

func TestACL_Policies(t *testing.T) {
	s, mgmt := aclServer(t)
	reader := makeToken(t, s, mgmt, "readonly", readOnlyRules)
	must.NoError(t, callAs(t, s, mgmt, "ACL.UpsertPolicies", &structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{
		{Name: "deploy", Rules: "namespace \"default\" {\n  policy = \"write\"\n}\n"}}}, &structs.GenericResponse{}))

	cases := []struct {
		name   string
		policy *structs.ACLPolicy
		want   string
	}{
		{"bad rules", &structs.ACLPolicy{Name: "bad", Rules: "namespace \"default\" {\n  capabilities = [\"submit-jobs\"]\n}\n"},
			`policy "bad": policy rules: line 2: namespace "default": unknown capability "submit-jobs" (did you mean "submit-job"?)`},
		{"bad name", &structs.ACLPolicy{Name: "a b", Rules: readOnlyRules}, "policy name"},
		{"no rules", &structs.ACLPolicy{Name: "empty"}, "empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := callAs(t, s, mgmt, "ACL.UpsertPolicies", &structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{tc.policy}}, nil)
			must.ErrorIs(t, err, structs.ErrBadRequest)
			must.StrContains(t, err.Error(), tc.want)
		})
	}

	// A client token reads the policies it holds, and only those.
	var got structs.ACLPolicyGetResponse
	must.NoError(t, callAs(t, s, reader, "ACL.GetPolicy", &structs.ACLPolicyGetRequest{Name: "readonly"}, &got))
	must.Eq(t, readOnlyRules, got.Policy.Rules)
	err := callAs(t, s, reader, "ACL.GetPolicy", &structs.ACLPolicyGetRequest{Name: "deploy"}, &got)
	must.ErrorIs(t, err, structs.ErrPermissionDenied)
	var list structs.ACLPolicyListResponse
	must.NoError(t, callAs(t, s, reader, "ACL.ListPolicies", &structs.ACLPolicyListRequest{}, &list))
	must.Len(t, 1, list.Policies)
	must.Eq(t, "readonly", list.Policies[0].Name)
	must.NoError(t, callAs(t, s, mgmt, "ACL.ListPolicies", &structs.ACLPolicyListRequest{}, &list))
	must.Len(t, 2, list.Policies)

	must.ErrorIs(t, callAs(t, s, reader, "ACL.DeletePolicies", &structs.ACLPolicyDeleteRequest{Names: []string{"deploy"}}, nil),
		structs.ErrPermissionDenied)
	must.NoError(t, callAs(t, s, mgmt, "ACL.DeletePolicies", &structs.ACLPolicyDeleteRequest{Names: []string{"deploy"}}, &structs.GenericResponse{}))
	must.NoError(t, callAs(t, s, mgmt, "ACL.GetPolicy", &structs.ACLPolicyGetRequest{Name: "deploy"}, &got))
	must.Nil(t, got.Policy)
}

func TestACL_Tokens(t *testing.T) {
	s, mgmt := aclServer(t)
	reader := makeToken(t, s, mgmt, "readonly", readOnlyRules)

	refused := []struct {
		name  string
		token *structs.ACLToken
		want  string
	}{
		{"client without policy", &structs.ACLToken{Name: "x"}, "needs at least one policy"},
		{"unknown policy", &structs.ACLToken{Name: "x", Policies: []string{"nope"}}, `policy "nope" does not exist`},
		{"management with policy", &structs.ACLToken{Type: structs.ACLTokenTypeManagement, Policies: []string{"readonly"}}, "takes no policies"},
		{"secret given", &structs.ACLToken{SecretID: "mine", Policies: []string{"readonly"}}, "cannot be set"},
		{"bad type", &structs.ACLToken{Type: "root", Policies: []string{"readonly"}}, "not client or management"},
		{"negative ttl", &structs.ACLToken{Policies: []string{"readonly"}, ExpirationTTL: -time.Second}, "negative"},
		{"unknown accessor", &structs.ACLToken{AccessorID: "missing", Policies: []string{"readonly"}}, "not found"},
		{"leader token", &structs.ACLToken{AccessorID: leaderTokenAccessor, Type: structs.ACLTokenTypeManagement}, "servers' own"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			err := callAs(t, s, mgmt, "ACL.UpsertTokens", &structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{tc.token}}, nil)
			must.Error(t, err)
			must.StrContains(t, err.Error(), tc.want)
		})
	}

	// Create: the secret is answered once, with an expiry from the TTL.
	var created structs.ACLTokenUpsertResponse
	must.NoError(t, callAs(t, s, mgmt, "ACL.UpsertTokens", &structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{
		{Name: "ci", Policies: []string{"readonly"}, ExpirationTTL: time.Hour}}}, &created))
	ci := created.Tokens[0]
	must.NotEq(t, "", ci.SecretID)
	must.NotEq(t, "", ci.AccessorID)
	must.Eq(t, "", ci.SecretHash)
	must.NotNil(t, ci.ExpirationTime)
	must.True(t, ci.ExpirationTime.After(time.Now().Add(59*time.Minute)))

	// Update by accessor: name and policies change, the secret does not.
	var updated structs.ACLTokenUpsertResponse
	must.NoError(t, callAs(t, s, mgmt, "ACL.UpsertTokens", &structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{
		{AccessorID: ci.AccessorID, Name: "ci-renamed", Policies: []string{"readonly"}}}}, &updated))
	must.Eq(t, "", updated.Tokens[0].SecretID)
	must.Eq(t, "ci-renamed", updated.Tokens[0].Name)
	must.Eq(t, *ci.ExpirationTime, *updated.Tokens[0].ExpirationTime)
	var self structs.ACLTokenGetResponse
	must.NoError(t, callAs(t, s, ci.SecretID, "ACL.WhoAmI", &structs.ACLTokenGetRequest{}, &self))
	must.Eq(t, "ci-renamed", self.Token.Name)

	// A token reads itself; only management reads others and lists.
	must.NoError(t, callAs(t, s, ci.SecretID, "ACL.GetToken", &structs.ACLTokenGetRequest{AccessorID: ci.AccessorID}, &self))
	must.Eq(t, ci.AccessorID, self.Token.AccessorID)
	must.ErrorIs(t, callAs(t, s, reader, "ACL.GetToken", &structs.ACLTokenGetRequest{AccessorID: ci.AccessorID}, &self),
		structs.ErrPermissionDenied)
	must.ErrorIs(t, callAs(t, s, reader, "ACL.ListTokens", &structs.ACLTokenListRequest{}, nil), structs.ErrPermissionDenied)
	var list structs.ACLTokenListResponse
	must.NoError(t, callAs(t, s, mgmt, "ACL.ListTokens", &structs.ACLTokenListRequest{}, &list))
	must.Len(t, 3, list.Tokens, must.Sprint("bootstrap, readonly and ci; the leader's own token is not listed"))
	for _, stub := range list.Tokens {
		must.NotEq(t, leaderTokenAccessor, stub.AccessorID)
	}

	// Deleted, the token is anonymous: it may read nothing.
	must.ErrorIs(t, callAs(t, s, mgmt, "ACL.DeleteTokens", &structs.ACLTokenDeleteRequest{AccessorIDs: []string{leaderTokenAccessor}}, nil),
		structs.ErrBadRequest)
	must.NoError(t, callAs(t, s, mgmt, "ACL.DeleteTokens", &structs.ACLTokenDeleteRequest{AccessorIDs: []string{ci.AccessorID}}, &structs.GenericResponse{}))
	must.ErrorIs(t, callAs(t, s, ci.SecretID, "Node.List", &structs.NodeListRequest{}, nil), structs.ErrPermissionDenied)
	must.NoError(t, callAs(t, s, ci.SecretID, "ACL.WhoAmI", &structs.ACLTokenGetRequest{}, &self))
	must.Nil(t, self.Token)
}

func TestACL_ResolveToken(t *testing.T) {
	s, mgmt := aclServer(t)
	a, tok, err := s.resolveToken("")
	must.NoError(t, err)
	must.Nil(t, tok)
	must.False(t, a.AllowNodeRead(), must.Sprint("no anonymous policy: anonymous callers may do nothing"))
	a, _, err = s.resolveToken("not-a-token")
	must.NoError(t, err)
	must.False(t, a.AllowNamespaceOperation("default", acl.CapReadJob))

	// The anonymous policy applies to callers without a known token, and
	// a rewritten policy takes effect at once.
	must.NoError(t, callAs(t, s, mgmt, "ACL.UpsertPolicies", &structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{
		{Name: structs.AnonymousPolicyName, Rules: "node {\n  policy = \"read\"\n}\n"}}}, &structs.GenericResponse{}))
	a, _, err = s.resolveToken("not-a-token")
	must.NoError(t, err)
	must.True(t, a.AllowNodeRead())
	must.NoError(t, callAs(t, s, "", "Node.List", &structs.NodeListRequest{}, &structs.NodeListResponse{}))
	must.NoError(t, callAs(t, s, mgmt, "ACL.UpsertPolicies", &structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{
		{Name: structs.AnonymousPolicyName, Rules: "node {\n  policy = \"deny\"\n}\n"}}}, &structs.GenericResponse{}))
	must.ErrorIs(t, callAs(t, s, "", "Node.List", &structs.NodeListRequest{}, nil), structs.ErrPermissionDenied)

	// An expired token is refused, saying so.
	past := time.Now().Add(-time.Minute)
	_, _, err = raftApply[any](s, structs.ACLTokenUpsertRequestType, &structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{{
		AccessorID: "expired", SecretHash: hashSecret("expired-secret"), Type: structs.ACLTokenTypeManagement, ExpirationTime: &past}}})
	must.NoError(t, err)
	err = callAs(t, s, "expired-secret", "Node.List", &structs.NodeListRequest{}, nil)
	must.ErrorIs(t, err, structs.ErrPermissionDenied)
	must.StrContains(t, err.Error(), "ACL token expired")

	// The refusal names the capability, never a token.
	reader := makeToken(t, s, mgmt, "readonly", readOnlyRules)
	err = callAs(t, s, reader, "Job.Deregister", &structs.JobDeregisterRequest{JobID: "x"}, nil)
	must.EqError(t, err, `Permission denied: token lacks capability "submit-job" in namespace "default"`)
}

func TestACL_LeaderToken(t *testing.T) {
	s, _ := aclServer(t)
	deadline := time.Now().Add(20 * time.Second)
	for s.leaderSecret.Load() == nil {
		if time.Now().After(deadline) {
			t.Fatal("the leader never wrote its token")
		}
		time.Sleep(10 * time.Millisecond)
	}
	secret := *s.leaderSecret.Load()
	must.True(t, s.isManagementToken(secret))
	tok, err := s.State().ACLTokenByAccessorID(nil, leaderTokenAccessor)
	must.NoError(t, err)
	must.Eq(t, hashSecret(secret), tok.SecretHash)

	// A relay carries the caller's token, or the leader's for a call of
	// its own; a client gets none.
	own := &structs.ClientCSINodeDetachVolumeRequest{}
	s.relayToken(own)
	must.Eq(t, secret, own.AuthToken)
	users := &structs.ClientAllocLogsRequest{QueryOptions: structs.QueryOptions{AuthToken: "user"}}
	s.relayToken(users)
	must.Eq(t, "user", users.AuthToken)
	stripToken(users)
	must.Eq(t, "", users.AuthToken)

	// Only a server relay passes the relay check: a management token (the
	// leader's), not a read-only one.
	must.NoError(t, s.allowServerOnly(t.Context(), "ClientCSI.NodeDetachVolume", secret))
	must.ErrorIs(t, s.allowServerOnly(t.Context(), "ClientCSI.NodeDetachVolume", ""), structs.ErrPermissionDenied)
}

func TestRaftApply_NoTokensInTheLog(t *testing.T) {
	batch := &structs.CSIVolumeClaimBatchRequest{Claims: []structs.CSIVolumeClaimRequest{
		{VolumeID: "v", WriteRequest: structs.WriteRequest{AuthToken: "a"}}}}
	withoutTokens(batch)
	must.Eq(t, "", batch.Claims[0].AuthToken)
	plan := &structs.PlanApplyRequest{Claims: []structs.CSIVolumeClaimRequest{{WriteRequest: structs.WriteRequest{AuthToken: "b"}}},
		WriteRequest: structs.WriteRequest{AuthToken: "c"}}
	withoutTokens(plan)
	must.Eq(t, "", plan.Claims[0].AuthToken)
	must.Eq(t, "", plan.AuthToken)
	prints := &structs.NodeFingerprintBatchRequest{Fingerprints: []structs.NodeFingerprintRequest{
		{NodeID: "n", WriteRequest: structs.WriteRequest{AuthToken: "d"}}}}
	withoutTokens(prints)
	must.Eq(t, "", prints.Fingerprints[0].AuthToken)
}

// TestACL_RaftLogHoldsNoSecrets: tokens' and nodes' secrets, and the
// tokens callers send, never reach the raft log: only hashes do.
func TestACL_RaftLogHoldsNoSecrets(t *testing.T) {
	s, mgmt := aclServer(t)
	reader := makeToken(t, s, mgmt, "readonly", readOnlyRules)
	must.NoError(t, callAs(t, s, testNodeSecret, "Node.Register", &structs.NodeRegisterRequest{
		Node: statetest.NodeWithPlugin("node-1", "hostpath", false, true, true)}, &structs.NodeUpdateResponse{}))
	must.NoError(t, callAs(t, s, mgmt, "CSIVolume.Register", &structs.CSIVolumeRegisterRequest{
		Volumes: []*structs.CSIVolume{statetest.Volume("data", "hostpath")}}, &structs.CSIVolumeRegisterResponse{}))
	placeAllocs(t, s, volumeAlloc("a1", "node-1", structs.DefaultNamespace, 0, "data", false))
	must.NoError(t, callAs(t, s, mgmt, "CSIVolume.Claim", takeClaim("data", structs.DefaultNamespace, "a1", "node-1"), nil))
	must.NoError(t, callAs(t, s, testNodeSecret, "Node.UpdateStatus", &structs.NodeUpdateStatusRequest{
		NodeID: "node-1", Status: structs.NodeStatusDown}, &structs.NodeUpdateResponse{}))

	first, err := s.raftStore.FirstIndex()
	must.NoError(t, err)
	last, err := s.raftStore.LastIndex()
	must.NoError(t, err)
	must.Positive(t, last)
	hashes := 0
	for i := first; i <= last; i++ {
		var entry raft.Log
		must.NoError(t, s.raftStore.GetLog(i, &entry))
		for name, secret := range map[string]string{"management": mgmt, "read-only": reader, "node": testNodeSecret} {
			must.False(t, bytes.Contains(entry.Data, []byte(secret)), must.Sprintf("raft entry %d holds the %s secret", i, name))
			if bytes.Contains(entry.Data, []byte(hashSecret(secret))) {
				hashes++
			}
		}
	}
	must.Eq(t, 3, hashes, must.Sprint("the bootstrap, the token create and the node register each write one hash"))
}
