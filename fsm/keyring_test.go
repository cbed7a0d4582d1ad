package fsm

import (
	"bytes"
	"io"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// TestFSM_EncryptedSecrets_RoundTrip: the sealed secrets of a volume go
// through a raft entry and a snapshot unchanged (msgpack keeps the field
// that JSON drops), and the root keys' metadata is restored with them.
func TestFSM_EncryptedSecrets_RoundTrip(t *testing.T) {
	node := statetest.NodeWithPlugin("node-1", "hostpath", true, true, true)
	vol := statetest.Volume("data", "hostpath")
	vol.EncryptedSecrets = &structs.EncryptedSecrets{KeyID: "11111111-1111-4111-8111-111111111111",
		Nonce: bytes.Repeat([]byte{1}, 12), Ciphertext: []byte("sealed-bytes")}
	src := newFSM(t)
	res := applyAll(t, src, append([]entry{
		{structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: node}},
		{structs.CSIVolumeRegisterRequestType, &structs.CSIVolumeRegisterRequest{Volumes: []*structs.CSIVolume{vol}}},
	}, goldenScenarios()["root_keys"][:2]...))
	for i, r := range res {
		if err, ok := r.(error); ok {
			t.Fatalf("entry %d: %v", i+1, err)
		}
	}

	dst := newFSM(t)
	must.NoError(t, dst.Restore(io.NopCloser(bytes.NewReader(persist(t, src)))))
	got, err := dst.State().CSIVolumeByID(nil, "default", "data")
	must.NoError(t, err)
	must.Eq(t, vol.EncryptedSecrets, got.EncryptedSecrets)
	must.MapEmpty(t, got.Secrets)
	keys, err := dst.State().RootKeyMetas(nil)
	must.NoError(t, err)
	must.SliceLen(t, 2, keys)
	active, err := dst.State().ActiveRootKeyMeta(nil)
	must.NoError(t, err)
	must.Eq(t, "22222222-2222-4222-8222-222222222222", active.KeyID)
}
