package server_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/server"
	"github.com/berth-csi/berth/server/servertest"
	"github.com/berth-csi/berth/structs"
)

// TestACL_Cluster_BootstrapResetReadsTheLeadersFile: a bootstrap sent to
// a follower is decided by the leader, from the reset file in the
// leader's data dir: the follower's own file is not read, and the
// refusal names the leader; with the file on the leader it goes through,
// and every server then knows both management tokens.
func TestACL_Cluster_BootstrapResetReadsTheLeadersFile(t *testing.T) {
	c := servertest.Cluster(t, 3, func(cfg *server.Config) { cfg.ACLEnabled = true })
	leader := c.Leader()
	follower := c.Followers()[0]
	var boot structs.ACLTokenUpsertResponse
	must.NoError(t, call(t, follower, "ACL.Bootstrap", &structs.ACLBootstrapRequest{}, &boot))
	first := boot.Tokens[0]
	reset := boot.Index

	writeReset := func(s *servertest.TestServer) {
		must.NoError(t, os.WriteFile(filepath.Join(s.Config.DataDir, server.ACLBootstrapResetFile), fmt.Appendf(nil, "%d\n", reset), 0o600))
	}
	writeReset(follower)
	err := call(t, follower, "ACL.Bootstrap", &structs.ACLBootstrapRequest{}, &structs.ACLTokenUpsertResponse{})
	must.ErrorIs(t, err, structs.ErrConflict)
	must.StrContains(t, err.Error(), fmt.Sprintf("ACL bootstrap already done (reset index: %d)", reset))
	must.StrContains(t, err.Error(), "the leader, server "+leader.Config.NodeName)

	writeReset(leader)
	var again structs.ACLTokenUpsertResponse
	must.NoError(t, call(t, follower, "ACL.Bootstrap", &structs.ACLBootstrapRequest{}, &again))
	second := again.Tokens[0]
	must.NotEq(t, first.AccessorID, second.AccessorID)

	for _, s := range c.Servers {
		for _, tok := range []*structs.ACLToken{first, second} {
			var self structs.ACLTokenGetResponse
			must.NoError(t, call(t, s, "ACL.WhoAmI", &structs.ACLTokenGetRequest{
				QueryOptions: structs.QueryOptions{AuthToken: tok.SecretID}}, &self))
			must.NotNil(t, self.Token, must.Sprintf("server %s does not know token %s", s.Config.NodeName, tok.AccessorID))
			must.Eq(t, tok.AccessorID, self.Token.AccessorID)
		}
	}
}
