package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

// bootstrap calls ACL.Bootstrap anonymously; it returns the token made.
func bootstrap(t *testing.T, s *Server) (*structs.ACLToken, error) {
	t.Helper()
	var resp structs.ACLTokenUpsertResponse
	if err := callAs(t, s, "", "ACL.Bootstrap", &structs.ACLBootstrapRequest{}, &resp); err != nil {
		return nil, err
	}
	must.Len(t, 1, resp.Tokens)
	must.EqOp(t, resp.Index, resp.Tokens[0].CreateIndex)
	return resp.Tokens[0], nil
}

// writeResetFile writes content as s's acl-bootstrap-reset file.
func writeResetFile(t *testing.T, s *Server, content string) {
	t.Helper()
	must.NoError(t, os.WriteFile(filepath.Join(s.config.DataDir, ACLBootstrapResetFile), []byte(content), 0o600))
}

func resetIndexOf(t *testing.T, s *Server) uint64 {
	t.Helper()
	idx, err := s.State().ACLBootstrapIndex()
	must.NoError(t, err)
	return idx
}

// whoAmI is the accessor of token's secret, failing the test if the
// servers do not know it.
func whoAmI(t *testing.T, s *Server, secret string) string {
	t.Helper()
	var self structs.ACLTokenGetResponse
	must.NoError(t, callAs(t, s, secret, "ACL.WhoAmI", &structs.ACLTokenGetRequest{}, &self))
	must.NotNil(t, self.Token, must.Sprint("the token is unknown to the servers"))
	return self.Token.AccessorID
}

// TestACL_Bootstrap_Reset walks the lost-token procedure on one server: a
// second bootstrap is refused naming the reset index; a reset file that
// is not an index, or holds another one, is refused naming the index to
// write; the right one makes a new management token once, the first one
// still works, and the same file cannot be used again.
func TestACL_Bootstrap_Reset(t *testing.T) {
	s, first := aclServer(t)
	firstAccessor := whoAmI(t, s, first)
	reset := resetIndexOf(t, s)
	must.Positive(t, reset)

	_, err := bootstrap(t, s)
	must.ErrorIs(t, err, structs.ErrConflict)
	must.StrContains(t, err.Error(), fmt.Sprintf("ACL bootstrap already done (reset index: %d)", reset))
	must.StrContains(t, err.Error(), fmt.Sprintf("write %d into the file acl-bootstrap-reset in the server data dir of the leader, server solo", reset))

	writeResetFile(t, s, "seven\n")
	_, err = bootstrap(t, s)
	must.ErrorIs(t, err, structs.ErrBadRequest)
	must.StrContains(t, err.Error(), `the acl-bootstrap-reset file cannot be used: it holds "seven", not a raft index`)
	must.StrContains(t, err.Error(), fmt.Sprintf("write the reset index %d into it", reset))

	writeResetFile(t, s, fmt.Sprintf("%d\n", reset+100))
	_, err = bootstrap(t, s)
	must.ErrorIs(t, err, structs.ErrConflict)
	must.StrContains(t, err.Error(), fmt.Sprintf("holds index %d, but the reset index is %d; write %d into it", reset+100, reset, reset))
	must.EqOp(t, reset, resetIndexOf(t, s), must.Sprint("a refused reset changes nothing"))

	writeResetFile(t, s, fmt.Sprintf("%d\n", reset)) // as `echo 7 > acl-bootstrap-reset` writes it
	second, err := bootstrap(t, s)
	must.NoError(t, err)
	must.Eq(t, structs.ACLTokenTypeManagement, second.Type)
	must.NotEq(t, firstAccessor, second.AccessorID)
	must.EqOp(t, second.CreateIndex, resetIndexOf(t, s), must.Sprint("the reset index moves to the new bootstrap's"))
	must.EqOp(t, second.AccessorID, whoAmI(t, s, second.SecretID))

	// Both management tokens work: the reset adds one, it revokes none.
	for _, secret := range []string{first, second.SecretID} {
		var list structs.ACLTokenListResponse
		must.NoError(t, callAs(t, s, secret, "ACL.ListTokens", &structs.ACLTokenListRequest{}, &list))
		must.SliceLen(t, 2, list.Tokens)
	}

	// The same file again: its index is stale now.
	_, err = bootstrap(t, s)
	must.ErrorIs(t, err, structs.ErrConflict)
	must.StrContains(t, err.Error(), fmt.Sprintf("holds index %d, but the reset index is %d", reset, second.CreateIndex))

	// A caller cannot pass the reset index itself: only the file counts.
	must.NoError(t, os.Remove(filepath.Join(s.config.DataDir, ACLBootstrapResetFile)))
	err = callAs(t, s, "", "ACL.Bootstrap", &structs.ACLBootstrapRequest{ResetIndex: second.CreateIndex}, &structs.ACLTokenUpsertResponse{})
	must.ErrorIs(t, err, structs.ErrConflict)
	must.StrContains(t, err.Error(), fmt.Sprintf("ACL bootstrap already done (reset index: %d)", second.CreateIndex))
}

// TestACL_Bootstrap_ResetOnce: several bootstraps sent at once against
// one reset file make one token between them; the others are refused.
func TestACL_Bootstrap_ResetOnce(t *testing.T) {
	s, _ := aclServer(t)
	writeResetFile(t, s, fmt.Sprint(resetIndexOf(t, s)))
	const n = 4
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		// s.RPC, not bootstrap: no test assertion off the test's goroutine.
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			errs[i] = s.RPC(ctx, "ACL.Bootstrap", &structs.ACLBootstrapRequest{}, &structs.ACLTokenUpsertResponse{})
		})
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
			continue
		}
		must.ErrorIs(t, err, structs.ErrConflict)
	}
	must.EqOp(t, 1, won, must.Sprintf("bootstraps that made a token: %v", errs))
	iter, err := s.State().ACLTokensByAccessorPrefix(nil, "")
	must.NoError(t, err)
	mgmt := 0
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if tok := raw.(*structs.ACLToken); !isLeaderToken(tok.AccessorID) {
			mgmt++
		}
	}
	must.EqOp(t, 2, mgmt, must.Sprint("the first bootstrap's token and one reset's"))
}
