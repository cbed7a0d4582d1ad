package rpc

import (
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
	// MaxFrameSize bounds one message on the wire, length prefix, header
	// and body together: the largest request or reply either side sends
	// or accepts. A peer that declares more is cut off before any of it
	// is read. 16 MiB is four times gRPC's default message limit, which
	// already bounds anything a CSI plugin returns, and leaves room for a
	// node with many plugins or a long list.
	MaxFrameSize = 16 << 20

	framePrefixLen = 8
	maxHeaderLen   = 64 << 10
	// eagerReadLen: bodies up to this size are read into one allocation;
	// larger ones grow as bytes arrive, so a lying length costs the reader
	// the bytes the peer sent, not the bytes it declared.
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
	if err := checkFrameLen(uint64(len(hb)), uint64(len(body))); err != nil {
		return dst, err
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(hb)))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(body)))
	dst = append(dst, hb...)
	return append(dst, body...), nil
}

// checkFrameLen refuses a frame whose header or whole length is over the
// limits.
func checkFrameLen(hlen, blen uint64) error {
	if hlen > maxHeaderLen {
		return fmt.Errorf("%w: header of %d bytes, limit %d", errFrameTooLarge, hlen, maxHeaderLen)
	}
	if n := framePrefixLen + hlen + blen; n > MaxFrameSize {
		return fmt.Errorf("%w: %d bytes, limit %d", errFrameTooLarge, n, MaxFrameSize)
	}
	return nil
}

// readFrame reads one message. It returns io.EOF when r ends cleanly between
// messages, io.ErrUnexpectedEOF when it ends inside one, errFrameTooLarge or
// errMalformedHeader when the bytes are not a frame; after any error the
// stream is out of step and must be closed. The lengths are checked before
// anything is allocated, and the header is decoded before the body is read.
// (A server reads the same three parts with its frame budget between them:
// frame_read.go.)
func readFrame(r io.Reader) (header, []byte, error) {
	hlen, blen, err := readPrefix(r)
	if err != nil {
		return header{}, nil, err
	}
	h, err := readHeader(r, hlen)
	if err != nil {
		return h, nil, err
	}
	body, err := readN(r, blen)
	if err != nil {
		return h, nil, err
	}
	return h, body, nil
}

// readPrefix reads a frame's length prefix and checks the lengths it
// declares: its header's and its body's.
func readPrefix(r io.Reader) (hlen, blen int, err error) {
	var prefix [framePrefixLen]byte
	if _, err := io.ReadFull(r, prefix[:]); err != nil {
		return 0, 0, err
	}
	h := binary.BigEndian.Uint32(prefix[0:4])
	b := binary.BigEndian.Uint32(prefix[4:8])
	if h == 0 {
		return 0, 0, fmt.Errorf("%w: empty header", errMalformedHeader)
	}
	if err := checkFrameLen(uint64(h), uint64(b)); err != nil {
		return 0, 0, err
	}
	return int(h), int(b), nil
}

// readHeader reads and decodes a frame's header of hlen bytes.
func readHeader(r io.Reader, hlen int) (header, error) {
	var h header
	hb, err := readN(r, hlen)
	if err != nil {
		return h, err
	}
	if err := structs.Decode(hb, &h); err != nil {
		return h, fmt.Errorf("%w: %v", errMalformedHeader, err)
	}
	return h, nil
}

// skipN reads n bytes and drops them, holding none; running out early is
// io.ErrUnexpectedEOF.
func skipN(r io.Reader, n int) error {
	if _, err := io.CopyN(io.Discard, r, int64(n)); err != nil {
		return inFrame(err)
	}
	return nil
}

// readN reads exactly n bytes; running out early is io.ErrUnexpectedEOF.
// The buffer starts at eagerReadLen at most and doubles, never past n, as
// bytes arrive: a lying length costs what was sent. (A server reads
// request bodies with readReserved instead.)
func readN(r io.Reader, n int) ([]byte, error) {
	if n == 0 {
		return nil, nil
	}
	buf := make([]byte, 0, min(n, eagerReadLen)) // more only as bytes arrive: a length may lie
	for len(buf) < n {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(2*cap(buf), n))
			copy(grown, buf)
			buf = grown
		}
		m, err := io.ReadFull(r, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err != nil {
			return nil, inFrame(err)
		}
	}
	return buf, nil
}

// readReserved reads exactly n bytes whose room is reserved (a request body
// within the frame budget): once the first eagerReadLen of them have
// arrived, into one buffer of n bytes. So the body holds no more than its
// reservation (and, while its first bytes arrive, eagerReadLen besides),
// and no byte is copied twice.
func readReserved(r io.Reader, n int) ([]byte, error) {
	if n <= eagerReadLen {
		return readN(r, n)
	}
	first := make([]byte, eagerReadLen)
	if _, err := io.ReadFull(r, first); err != nil {
		return nil, inFrame(err)
	}
	buf := make([]byte, n)
	copy(buf, first)
	if _, err := io.ReadFull(r, buf[eagerReadLen:]); err != nil {
		return nil, inFrame(err)
	}
	return buf, nil
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
