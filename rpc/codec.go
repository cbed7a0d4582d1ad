package rpc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/ugorji/go/codec"

	"github.com/berth-csi/berth/structs"
)

// Wire format of one RPC message, request or response, after the
// connection's type byte:
//
//	uint32 header length | uint32 body length | header | body
//
// lengths are big-endian; header is a msgpack header, body the msgpack args
// or reply (structs.MsgpackHandle). The length prefix keeps the stream in
// step when a body does not decode, so a bad body costs one error response,
// not the connection.
const (
	framePrefixLen = 8
	maxHeaderLen   = 64 << 10
	// maxBodyLen bounds one request or reply body.
	maxBodyLen = 64 << 20
	// eagerReadLen: bodies up to this size are read into one allocation;
	// larger ones grow as bytes arrive, so a lying length cannot make the
	// reader allocate memory the peer never sends.
	eagerReadLen = 64 << 10
)

// header is the envelope of every request and response. Fields are encoded
// by name: add fields, never rename them.
type header struct {
	ServiceMethod string // "Service.Method"
	Seq           uint64 // chosen by the caller, echoed by the server
	Timeout       int64  // request: nanoseconds the caller will wait; 0 = no deadline
	Error         string // response: the error message; "" on success
	Code          string // response: the structs.ErrorCode of Error
}

// appendFrame appends one encoded message to dst.
func appendFrame(dst []byte, h *header, body []byte) ([]byte, error) {
	hb, err := encode(h)
	if err != nil {
		return dst, fmt.Errorf("rpc: encode header: %w", err)
	}
	if len(hb) > maxHeaderLen {
		return dst, fmt.Errorf("%w: header of %d bytes", errFrameTooLarge, len(hb))
	}
	if len(body) > maxBodyLen {
		return dst, fmt.Errorf("%w: body of %d bytes, limit %d", errFrameTooLarge, len(body), maxBodyLen)
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(hb)))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(body)))
	dst = append(dst, hb...)
	return append(dst, body...), nil
}

// readFrame reads one message. It returns io.EOF when r ends cleanly between
// messages, io.ErrUnexpectedEOF when it ends inside one, errFrameTooLarge or
// errMalformedHeader when the bytes are not a frame; after any error the
// stream is out of step and must be closed.
func readFrame(r io.Reader) (header, []byte, error) {
	var h header
	var prefix [framePrefixLen]byte
	if _, err := io.ReadFull(r, prefix[:]); err != nil {
		return h, nil, err
	}
	hlen := binary.BigEndian.Uint32(prefix[0:4])
	blen := binary.BigEndian.Uint32(prefix[4:8])
	if hlen == 0 {
		return h, nil, fmt.Errorf("%w: empty header", errMalformedHeader)
	}
	if hlen > maxHeaderLen {
		return h, nil, fmt.Errorf("%w: header of %d bytes", errFrameTooLarge, hlen)
	}
	if blen > maxBodyLen {
		return h, nil, fmt.Errorf("%w: body of %d bytes, limit %d", errFrameTooLarge, blen, maxBodyLen)
	}
	hb, err := readN(r, hlen)
	if err != nil {
		return h, nil, err
	}
	body, err := readN(r, blen)
	if err != nil {
		return h, nil, err
	}
	if err := structs.Decode(hb, &h); err != nil {
		return h, nil, fmt.Errorf("%w: %v", errMalformedHeader, err)
	}
	return h, body, nil
}

// readN reads exactly n bytes; running out early is io.ErrUnexpectedEOF.
func readN(r io.Reader, n uint32) ([]byte, error) {
	if n == 0 {
		return nil, nil
	}
	if n <= eagerReadLen {
		b := make([]byte, n)
		_, err := io.ReadFull(r, b)
		return b, inFrame(err)
	}
	var buf bytes.Buffer
	_, err := io.CopyN(&buf, r, int64(n))
	return buf.Bytes(), inFrame(err)
}

// inFrame turns io.EOF inside a frame into io.ErrUnexpectedEOF.
func inFrame(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// encode writes v as msgpack. An unencodable value is an error, never a
// panic.
func encode(v any) (b []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("msgpack encode panicked: %v", r)
		}
	}()
	err = codec.NewEncoderBytes(&b, structs.MsgpackHandle).Encode(v)
	return b, err
}

// decodeBody decodes a body into out; an empty body leaves out untouched.
func decodeBody(body []byte, out any) error {
	if len(body) == 0 {
		return nil
	}
	return structs.Decode(body, out)
}
