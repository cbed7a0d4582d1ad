package structs

import (
	"reflect"

	"github.com/ugorji/go/codec"
)

// MediaTypeMsgpack is the media type of HTTPMsgpackHandle's answers: a
// client that sends "Accept: application/msgpack" (the Go api client
// does) gets its answers in it; every other client gets JSON.
const MediaTypeMsgpack = "application/msgpack"

// HTTPMsgpackHandle is the msgpack the HTTP API answers in, for a client
// that asks for it. It shows exactly what the JSON shows: it reads only
// json tags, so a field JSON hides (json:"-": a node's secret hash, a
// volume's sealed secrets, a root key's material) is hidden here too,
// however the codec tag keeps it for raft; and CSI secrets and mount
// flags are redacted as their MarshalJSON redacts them. It is cheaper to
// encode and decode than JSON: a list of thousands of volumes is decoded
// in a fraction of the time.
var HTTPMsgpackHandle = newHTTPMsgpackHandle()

// Extension tags of HTTPMsgpackHandle.
const (
	extSecrets      = 1
	extMountOptions = 2
)

func newHTTPMsgpackHandle() *codec.MsgpackHandle {
	h := newMsgpackHandle()
	h.TypeInfos = codec.NewTypeInfos([]string{"json"})
	if err := h.SetBytesExt(reflect.TypeOf(CSISecrets(nil)), extSecrets, secretsExt{}); err != nil {
		panic("structs: HTTP msgpack: " + err.Error())
	}
	if err := h.SetBytesExt(reflect.TypeOf(CSIMountOptions{}), extMountOptions, mountOptionsExt{}); err != nil {
		panic("structs: HTTP msgpack: " + err.Error())
	}
	return h
}

// plainHandle encodes the extensions' contents: the raft handle, which
// has no extension of its own for these types.
var plainHandle = MsgpackHandle

// secretsExt writes secrets redacted (every value Redacted), as JSON does.
type secretsExt struct{}

func (secretsExt) WriteExt(v any) []byte {
	var s CSISecrets
	switch x := v.(type) {
	case CSISecrets:
		s = x
	case *CSISecrets:
		s = *x
	}
	r := make(map[string]string, len(s))
	for k := range s {
		r[k] = Redacted
	}
	var b []byte
	if err := codec.NewEncoderBytes(&b, plainHandle).Encode(r); err != nil {
		panic("structs: HTTP msgpack: encode secrets: " + err.Error())
	}
	return b
}

func (secretsExt) ReadExt(dst any, src []byte) {
	var m map[string]string
	if err := codec.NewDecoderBytes(src, plainHandle).Decode(&m); err != nil {
		panic("structs: HTTP msgpack: decode secrets: " + err.Error())
	}
	*dst.(*CSISecrets) = m
}

// mountOptionsExt writes mount options with their flags redacted, as
// JSON does.
type mountOptionsExt struct{}

// plainMountOptions is CSIMountOptions without the extension.
type plainMountOptions CSIMountOptions

func (mountOptionsExt) WriteExt(v any) []byte {
	o, _ := v.(*CSIMountOptions)
	var b []byte
	if err := codec.NewEncoderBytes(&b, plainHandle).Encode((*plainMountOptions)(o.Redacted())); err != nil {
		panic("structs: HTTP msgpack: encode mount options: " + err.Error())
	}
	return b
}

func (mountOptionsExt) ReadExt(dst any, src []byte) {
	if err := codec.NewDecoderBytes(src, plainHandle).Decode((*plainMountOptions)(dst.(*CSIMountOptions))); err != nil {
		panic("structs: HTTP msgpack: decode mount options: " + err.Error())
	}
}
