package structs_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"github.com/ugorji/go/codec"

	"github.com/berth-csi/berth/structs"
)

// The HTTP msgpack shows what the JSON shows and nothing more: no secret,
// mount flag, secret hash, sealed secret or key material, though raft's
// msgpack keeps them.
func TestHTTPMsgpack_HidesWhatJSONHides(t *testing.T) {
	vol := &structs.CSIVolume{ID: "data", Namespace: "default", PluginID: "hp",
		Secrets:          structs.CSISecrets{"token": "volume-secret-XYZ"},
		EncryptedSecrets: &structs.EncryptedSecrets{KeyID: "k1", Ciphertext: []byte("sealed-secret-XYZ")},
		MountOptions:     &structs.CSIMountOptions{FSType: "ext4", MountFlags: []string{"password=flag-secret-XYZ"}, GroupPolicy: "always"},
	}
	node := &structs.Node{ID: "n1", SecretHash: "node-secret-hash-XYZ"}
	key := &structs.RootKey{Meta: &structs.RootKeyMeta{KeyID: "k1"}, Material: []byte("key-material-XYZ")}

	for _, v := range []any{vol, node, key, []*structs.CSIVolume{vol, vol}} {
		var b []byte
		must.NoError(t, codec.NewEncoderBytes(&b, structs.HTTPMsgpackHandle).Encode(v))
		must.False(t, bytes.Contains(b, []byte("XYZ")), must.Sprintf("%T leaks a secret: %q", v, b))
		var raft []byte
		must.NoError(t, codec.NewEncoderBytes(&raft, structs.MsgpackHandle).Encode(v))
		must.True(t, bytes.Contains(raft, []byte("XYZ")), must.Sprintf("raft's msgpack keeps %T whole", v))
	}

	// Decoded, the volume is what the JSON would give.
	var b []byte
	must.NoError(t, codec.NewEncoderBytes(&b, structs.HTTPMsgpackHandle).Encode(vol))
	var fromMsgpack structs.CSIVolume
	must.NoError(t, codec.NewDecoderBytes(b, structs.HTTPMsgpackHandle).Decode(&fromMsgpack))
	js, err := json.Marshal(vol)
	must.NoError(t, err)
	var fromJSON structs.CSIVolume
	must.NoError(t, json.Unmarshal(js, &fromJSON))
	must.Eq(t, fromJSON.Secrets, fromMsgpack.Secrets)
	must.Eq(t, fromJSON.MountOptions, fromMsgpack.MountOptions)
	must.Eq(t, structs.CSISecrets{"token": structs.Redacted}, fromMsgpack.Secrets)
	must.Nil(t, fromMsgpack.EncryptedSecrets)
}

// Times, nil and empty fields and nested lists survive the round trip.
func TestHTTPMsgpack_RoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 28, 4, 0, 0, 123, time.UTC)
	in := []*structs.NodeListStub{{ID: "n1", Name: "one", Status: structs.NodeStatusReady,
		CSINodePlugins: map[string]*structs.CSIInfo{"hp": {PluginID: "hp", Healthy: true, UpdateTime: at}}}, {ID: "n2"}}
	var b []byte
	must.NoError(t, codec.NewEncoderBytes(&b, structs.HTTPMsgpackHandle).Encode(in))
	var out []*structs.NodeListStub
	must.NoError(t, codec.NewDecoderBytes(b, structs.HTTPMsgpackHandle).Decode(&out))
	must.Eq(t, in, out)

	noOpts := &structs.CSIVolume{ID: "v"}
	b = nil
	must.NoError(t, codec.NewEncoderBytes(&b, structs.HTTPMsgpackHandle).Encode(noOpts))
	var got structs.CSIVolume
	must.NoError(t, codec.NewDecoderBytes(b, structs.HTTPMsgpackHandle).Decode(&got))
	must.Nil(t, got.MountOptions)
	must.Nil(t, got.Secrets)
}

// A corrupt answer is an error for the api client that decodes it, never
// a panic, whichever byte is wrong (the extensions' contents included).
func TestHTTPMsgpack_CorruptAnswerIsAnError(t *testing.T) {
	vol := &structs.CSIVolume{ID: "v", Secrets: structs.CSISecrets{"a": "b"},
		MountOptions: &structs.CSIMountOptions{FSType: "ext4", MountFlags: []string{"ro"}}}
	var b []byte
	must.NoError(t, codec.NewEncoderBytes(&b, structs.HTTPMsgpackHandle).Encode(vol))
	failed := 0
	for i := range b {
		c := append([]byte(nil), b...)
		c[i] ^= 0xff
		var out structs.CSIVolume
		var err error
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("byte %d corrupt: a panic, not an error: %v", i, r)
				}
			}()
			err = codec.NewDecoderBytes(c, structs.HTTPMsgpackHandle).Decode(&out)
		}()
		if err != nil {
			failed++
		}
	}
	must.Positive(t, failed, must.Sprint("some corruptions are caught as errors"))
}
