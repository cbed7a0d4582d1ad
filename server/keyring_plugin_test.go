package server

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// pluginSecrets is a client that runs a controller instance: it records
// the secrets each controller call would hand to its plugin.
type pluginSecrets struct {
	mu   sync.Mutex
	seen map[string]structs.CSISecrets // by method
}

func (p *pluginSecrets) record(method string, s structs.CSISecrets) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen[method] = s.Copy()
}

func (p *pluginSecrets) got(method string) (structs.CSISecrets, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.seen[method]
	return s, ok
}

func (p *pluginSecrets) ControllerValidateVolume(args *structs.ClientCSIControllerValidateVolumeRequest, reply *structs.ClientCSIControllerValidateVolumeResponse) error {
	p.record("ControllerValidateVolume", args.Secrets)
	reply.Confirmed = true
	return nil
}

func (p *pluginSecrets) ControllerAttachVolume(args *structs.ClientCSIControllerAttachVolumeRequest, reply *structs.ClientCSIControllerAttachVolumeResponse) error {
	p.record("ControllerAttachVolume", args.Secrets)
	reply.PublishContext = map[string]string{"device": "/dev/fake"}
	return nil
}

func (p *pluginSecrets) ControllerDetachVolume(args *structs.ClientCSIControllerDetachVolumeRequest, _ *structs.ClientCSIControllerDetachVolumeResponse) error {
	p.record("ControllerDetachVolume", args.Secrets)
	return nil
}

func (p *pluginSecrets) NodeDetachVolume(_ *structs.ClientCSINodeDetachVolumeRequest, _ *structs.ClientCSINodeDetachVolumeResponse) error {
	return nil
}

// TestKeyring_PluginGetsSecretsInClear: the secrets sealed in state reach
// every controller call in clear, and the claiming client gets them as its
// node secrets, from register to claim to release.
func TestKeyring_PluginGetsSecretsInClear(t *testing.T) {
	s := testServer(t, func(c *Config) { c.HeartbeatTTL = 10 * time.Minute })
	p := &pluginSecrets{seen: map[string]structs.CSISecrets{}}
	ConnectClient(t, s.RPCAddr(), p)
	want := structs.CSISecrets{"token": "plugin-sees-this"}

	vol := statetest.Volume("data", "hostpath")
	vol.Secrets = want.Copy()
	must.NoError(t, rpcCall(t, s, "CSIVolume.Register", &structs.CSIVolumeRegisterRequest{Volumes: []*structs.CSIVolume{vol}},
		&structs.CSIVolumeRegisterResponse{}))
	got, ok := p.got("ControllerValidateVolume")
	must.True(t, ok)
	must.Eq(t, want, got)
	stored, err := s.State().CSIVolumeByID(nil, "default", "data")
	must.NoError(t, err)
	must.MapEmpty(t, stored.Secrets)
	must.NotNil(t, stored.EncryptedSecrets)

	_, _, err = raftApply[any](s, structs.PlanApplyRequestType, &structs.PlanApplyRequest{
		Allocs: []*structs.Allocation{volumeAlloc("alloc-1", "node-1", structs.DefaultNamespace, 0, "data", false)}})
	must.NoError(t, err)
	var claim structs.CSIVolumeClaimResponse
	must.NoError(t, rpcCall(t, s, "CSIVolume.Claim", &structs.CSIVolumeClaimRequest{VolumeID: "data", AllocationID: "alloc-1",
		NodeID: "node-1", Mode: structs.CSIVolumeClaimWrite, State: structs.CSIVolumeClaimStateTaken,
		AccessMode:     structs.CSIVolumeAccessModeSingleNodeWriter,
		AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem}, &claim))
	must.MapEmpty(t, claim.NodeSecrets, must.Sprint("a claim answers no secrets; the client's publish does"))
	must.Nil(t, claim.Volume.Secrets)
	must.Nil(t, claim.Volume.EncryptedSecrets, must.Sprint("replies carry no ciphertext either"))
	got, ok = p.got("ControllerAttachVolume")
	must.True(t, ok)
	must.Eq(t, want, got)

	var publish structs.CSIVolumeClaimResponse
	must.NoError(t, rpcCall(t, s, "CSIVolume.Publish", &structs.CSIVolumePublishRequest{VolumeID: "data", AllocationID: "alloc-1",
		NodeID: "node-1"}, &publish))
	must.Eq(t, want, publish.NodeSecrets)

	// Released, the volumewatcher detaches it through the controller.
	must.NoError(t, rpcCall(t, s, "CSIVolume.Claim", &structs.CSIVolumeClaimRequest{VolumeID: "data", AllocationID: "alloc-1",
		State: structs.CSIVolumeClaimStateUnpublishing}, &structs.CSIVolumeClaimResponse{}))
	deadline := time.Now().Add(30 * time.Second)
	for {
		if got, ok = p.got("ControllerDetachVolume"); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the volumewatcher never detached the volume through the controller")
		}
		time.Sleep(50 * time.Millisecond)
	}
	must.Eq(t, want, got)
}

// TestKeyring_MissingKeyIsLost: a volume sealed under a key no server has
// (this one is alone) is a plain error once the server has looked for the
// key, never a panic or a plaintext fallback. While another server might
// still have the key it is Unavailable (TestCluster_KeyLost).
func TestKeyring_MissingKeyIsLost(t *testing.T) {
	s := testServer(t, func(c *Config) { c.HeartbeatTTL = 10 * time.Minute })
	p := &pluginSecrets{seen: map[string]structs.CSISecrets{}}
	ConnectClient(t, s.RPCAddr(), p)

	const elsewhere = "99999999-9999-4999-8999-999999999999"
	_, _, err := raftApply[int](s, structs.RootKeyUpsertRequestType, &structs.RootKeyUpsertRequest{
		Key: &structs.RootKeyMeta{KeyID: elsewhere, State: structs.RootKeyStateInactive, CreateTime: time.Now()}})
	must.NoError(t, err)
	vol := statetest.Volume("data", "hostpath")
	vol.EncryptedSecrets = &structs.EncryptedSecrets{KeyID: elsewhere, Nonce: make([]byte, 12), Ciphertext: []byte("sealed elsewhere")}
	_, _, err = raftApply[any](s, structs.CSIVolumeRegisterRequestType, &structs.CSIVolumeRegisterRequest{Volumes: []*structs.CSIVolume{vol}})
	must.NoError(t, err)
	_, _, err = raftApply[any](s, structs.PlanApplyRequestType, &structs.PlanApplyRequest{
		Allocs: []*structs.Allocation{volumeAlloc("alloc-1", "node-1", structs.DefaultNamespace, 0, "data", false)}})
	must.NoError(t, err)

	for deadline := time.Now().Add(10 * time.Second); !s.keys.isLost(elsewhere); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the server did not find the root key lost: it asks the other servers, and there are none")
		}
	}
	err = rpcCall(t, s, "CSIVolume.Claim", &structs.CSIVolumeClaimRequest{VolumeID: "data", AllocationID: "alloc-1",
		NodeID: "node-1", Mode: structs.CSIVolumeClaimWrite, State: structs.CSIVolumeClaimStateTaken,
		AccessMode:     structs.CSIVolumeAccessModeSingleNodeWriter,
		AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem}, &structs.CSIVolumeClaimResponse{})
	must.ErrorIs(t, err, structs.ErrInternal)
	must.ErrorContains(t, err, "root key "+elsewhere+" is lost: no server has its material; volumes sealed under it must be registered again with their secrets")
	must.StrNotContains(t, err.Error(), "retry")
	_, called := p.got("ControllerAttachVolume")
	must.False(t, called, must.Sprint("no plugin call without the secrets"))
}

// TestKeyring_SecretsStoredInClearStillOpenAndGetSealed: a volume stored
// in clear by an older version still serves its secrets, and the leader
// seals them.
func TestKeyring_SecretsStoredInClearStillOpenAndGetSealed(t *testing.T) {
	s := testServer(t)
	must.NoError(t, rpcCall(t, s, "Node.Register", &structs.NodeRegisterRequest{
		Node:         statetest.NodeWithPlugin("node-1", "hostpath", false, true, true),
		WriteRequest: structs.WriteRequest{AuthToken: testNodeSecret}}, &structs.NodeUpdateResponse{}))
	vol := statetest.Volume("legacy", "hostpath")
	vol.Secrets = structs.CSISecrets{"token": "from-before"}
	secrets, err := s.volumeSecrets(vol)
	must.NoError(t, err)
	must.Eq(t, "from-before", secrets["token"], must.Sprint("secrets stored in clear still open"))

	_, _, err = raftApply[any](s, structs.CSIVolumeRegisterRequestType, &structs.CSIVolumeRegisterRequest{Volumes: []*structs.CSIVolume{vol}})
	must.NoError(t, err)
	// The leader seals them when it takes office, or here, whichever
	// comes after the write.
	n, err := s.rekeyVolumes(context.Background(), false)
	must.NoError(t, err)
	must.LessEq(t, 1, n)
	stored, err := s.State().CSIVolumeByID(nil, "default", "legacy")
	must.NoError(t, err)
	must.MapEmpty(t, stored.Secrets)
	must.NotNil(t, stored.EncryptedSecrets)
	secrets, err = s.VolumeSecrets("default", "legacy")
	must.NoError(t, err)
	must.Eq(t, "from-before", secrets["token"])
	n, err = s.rekeyVolumes(context.Background(), false)
	must.NoError(t, err)
	must.Zero(t, n, must.Sprint("sealed volumes stay as they are"))

	// A ciphertext moved onto another volume does not open there.
	moved := statetest.Volume("thief", "hostpath")
	moved.EncryptedSecrets = stored.EncryptedSecrets.Copy()
	_, err = s.volumeSecrets(moved)
	must.ErrorIs(t, err, structs.ErrInternal)
	must.ErrorContains(t, err, `volume "thief"`)
}

// TestKeyring_GetKey_OnlyServers: without TLS and ACLs a peer may fetch a
// key; with ACLs on and no TLS, no token but a management one may. (Over
// TLS: TestCluster_KeyringOverTLS.)
func TestKeyring_GetKey_OnlyServers(t *testing.T) {
	for _, acls := range []bool{false, true} {
		s := testServer(t, func(c *Config) { c.ACLEnabled = acls })
		active, err := s.activeRootKey()
		must.NoError(t, err)
		var reply structs.KeyringGetKeyResponse
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = s.pool.Call(ctx, s.RPCAddr(), "Keyring.GetKey", &structs.KeyringGetKeyRequest{KeyID: active}, &reply)
		cancel()
		if acls {
			must.ErrorIs(t, err, structs.ErrPermissionDenied)
			var boot structs.ACLTokenUpsertResponse
			must.NoError(t, rpcCall(t, s, "ACL.Bootstrap", &structs.ACLBootstrapRequest{}, &boot))
			err = rpcCall(t, s, "Keyring.GetKey", &structs.KeyringGetKeyRequest{KeyID: active,
				QueryOptions: structs.QueryOptions{AuthToken: boot.Tokens[0].SecretID}}, &reply)
			must.NoError(t, err, must.Sprint("a management token may"))
			must.Eq(t, active, reply.Key.Meta.KeyID)
			continue
		}
		must.NoError(t, err)
		must.Eq(t, active, reply.Key.Meta.KeyID)
		must.SliceLen(t, structs.RootKeyMaterialSize, reply.Key.Material)

		err = rpcCall(t, s, "Keyring.GetKey", &structs.KeyringGetKeyRequest{KeyID: "../../etc/passwd"}, &reply)
		must.ErrorIs(t, err, structs.ErrBadRequest)
		err = rpcCall(t, s, "Keyring.GetKey", &structs.KeyringGetKeyRequest{KeyID: "99999999-9999-4999-8999-999999999999"}, &reply)
		must.ErrorIs(t, err, structs.ErrNotFound)
	}
}
