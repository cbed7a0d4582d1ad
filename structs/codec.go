package structs

import (
	"bytes"
	"fmt"
	"reflect"

	"github.com/ugorji/go/codec"
)

// MsgpackHandle is the one msgpack handle for raft entries, snapshots and
// RPC bodies. Maps decode as map[string]any so decoded values round-trip
// through JSON.
var MsgpackHandle = newMsgpackHandle()

// canonicalHandle is MsgpackHandle with map keys written in order, so that
// equal values encode to equal bytes (sameSpec).
var canonicalHandle = func() *codec.MsgpackHandle {
	h := newMsgpackHandle()
	h.Canonical = true
	return h
}()

func newMsgpackHandle() *codec.MsgpackHandle {
	h := &codec.MsgpackHandle{}
	h.RawToString = true
	h.WriteExt = true
	h.MapType = reflect.TypeOf(map[string]any(nil))
	return h
}

// Encode writes a raft log entry: one MessageType byte, then msg in msgpack.
func Encode(t MessageType, msg any) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte(uint8(t))
	if err := codec.NewEncoder(&buf, MsgpackHandle).Encode(msg); err != nil {
		return nil, fmt.Errorf("structs: encode %s: %w", t, err)
	}
	return buf.Bytes(), nil
}

// Decode reads msgpack bytes into out. A malformed buffer is an error,
// never a panic.
func Decode(buf []byte, out any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("structs: decode: malformed msgpack: %v", r)
		}
	}()
	return codec.NewDecoderBytes(buf, MsgpackHandle).Decode(out)
}
