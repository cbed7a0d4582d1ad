package server

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

// TestACL_ReapExpiredTokens: the leader deletes the tokens expired at the
// time it is given, keeps the others (and its own token, and the
// management token), and does nothing when none has expired.
func TestACL_ReapExpiredTokens(t *testing.T) {
	s, mgmt := aclServer(t)
	makeToken(t, s, mgmt, "readonly", readOnlyRules)
	var created structs.ACLTokenUpsertResponse
	must.NoError(t, callAs(t, s, mgmt, "ACL.UpsertTokens", &structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{
		{Name: "hour", Policies: []string{"readonly"}, ExpirationTTL: time.Hour},
		{Name: "day", Policies: []string{"readonly"}, ExpirationTTL: 24 * time.Hour},
	}}, &created))
	hour, day := created.Tokens[0], created.Tokens[1]

	n, err := s.reapExpiredTokens(time.Now())
	must.NoError(t, err)
	must.Zero(t, n, must.Sprint("nothing has expired yet"))

	n, err = s.reapExpiredTokens(time.Now().Add(2 * time.Hour))
	must.NoError(t, err)
	must.EqOp(t, 1, n)
	gone, err := s.State().ACLTokenByAccessorID(nil, hour.AccessorID)
	must.NoError(t, err)
	must.Nil(t, gone, must.Sprint("the token of an hour is deleted two hours on"))
	kept, err := s.State().ACLTokenByAccessorID(nil, day.AccessorID)
	must.NoError(t, err)
	must.NotNil(t, kept)

	// The management token (no expiry) and the leader's own token stay,
	// whatever the time.
	n, err = s.reapExpiredTokens(time.Now().Add(100 * 365 * 24 * time.Hour))
	must.NoError(t, err)
	must.EqOp(t, 1, n, must.Sprint("only the day token"))
	var self structs.ACLTokenGetResponse
	must.NoError(t, callAs(t, s, mgmt, "ACL.WhoAmI", &structs.ACLTokenGetRequest{}, &self))
	must.NotNil(t, self.Token)
	leader, err := s.State().ACLTokenByAccessorID(nil, leaderTokenAccessor)
	must.NoError(t, err)
	must.NotNil(t, leader)
}
