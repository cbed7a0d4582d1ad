package server_test

import (
	"sync"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/server"
	"github.com/berth-csi/berth/server/servertest"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// aclCluster starts three servers with ACLs on, bootstraps ACLs, and
// makes a token of one policy (named policy, with rules): it returns the
// cluster and the secrets of the management token and of the new one.
func aclCluster(t *testing.T, policy, rules string) (c *servertest.TestCluster, mgmt, secret string) {
	t.Helper()
	c = servertest.Cluster(t, 3, func(cfg *server.Config) { cfg.ACLEnabled = true })
	leader := c.Leader()
	var boot structs.ACLTokenUpsertResponse
	must.NoError(t, call(t, leader, "ACL.Bootstrap", &structs.ACLBootstrapRequest{}, &boot))
	mgmt = boot.Tokens[0].SecretID
	must.NoError(t, call(t, leader, "ACL.UpsertPolicies", &structs.ACLPolicyUpsertRequest{
		Policies:     []*structs.ACLPolicy{{Name: policy, Rules: rules}},
		WriteRequest: structs.WriteRequest{AuthToken: mgmt}}, &structs.GenericResponse{}))
	var created structs.ACLTokenUpsertResponse
	must.NoError(t, call(t, leader, "ACL.UpsertTokens", &structs.ACLTokenUpsertRequest{
		Tokens:       []*structs.ACLToken{{Name: policy, Policies: []string{policy}}},
		WriteRequest: structs.WriteRequest{AuthToken: mgmt}}, &created))
	return c, mgmt, created.Tokens[0].SecretID
}

// controllerClient is a client agent running a controller instance: it
// records the token each server call brought (a client must get none).
type controllerClient struct {
	mu     sync.Mutex
	tokens []string
}

func (c *controllerClient) ControllerValidateVolume(args *structs.ClientCSIControllerValidateVolumeRequest, reply *structs.ClientCSIControllerValidateVolumeResponse) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tokens = append(c.tokens, args.AuthToken)
	reply.Confirmed = true
	return nil
}

func (c *controllerClient) seen() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.tokens...)
}

// TestACL_Cluster_RelayToAClientOnAnotherServer: with ACLs on and no TLS,
// the leader's controller call for a user's request reaches a client whose
// session is on a follower (the leader relays it with its own token), the
// client gets no token, and the user's token cannot call the relay itself.
func TestACL_Cluster_RelayToAClientOnAnotherServer(t *testing.T) {
	c, _, deploy := aclCluster(t, "deploy", "namespace \"default\" {\n  policy = \"write\"\n}\n")
	leader := c.Leader()
	follower := c.Followers()[0]

	// The client opens its session to a follower, as a client agent does.
	client := &controllerClient{}
	server.ConnectClient(t, follower.RPCAddr(), client)

	// The follower applies the leader's token shortly after the election:
	// until then the relay is refused, and the register fails.
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := call(t, leader, "CSIVolume.Register", &structs.CSIVolumeRegisterRequest{
			Volumes:      []*structs.CSIVolume{statetest.Volume("data", "hostpath")},
			WriteRequest: structs.WriteRequest{AuthToken: deploy}}, &structs.CSIVolumeRegisterResponse{})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("volume register through a follower's client: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	seen := client.seen()
	must.SliceNotEmpty(t, seen)
	for _, tok := range seen {
		must.Eq(t, "", tok, must.Sprint("a client never gets a token"))
	}

	// The user's own token cannot relay a call to a client.
	err := call(t, follower, "ClientCSI.ControllerValidateVolume", &structs.ClientCSIControllerValidateVolumeRequest{
		NodeID: "node-1", QueryOptions: structs.QueryOptions{AuthToken: deploy}}, &structs.ClientCSIControllerValidateVolumeResponse{})
	must.ErrorIs(t, err, structs.ErrPermissionDenied)
}
