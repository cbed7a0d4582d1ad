package rpc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/shoenig/test/must"
)

func TestReadFrame(t *testing.T) {
	good, err := appendFrame(nil, &header{ServiceMethod: "Test.Echo", Seq: 9, Timeout: 5}, mustEncode(t, &EchoArgs{Name: "v"}))
	must.NoError(t, err)
	hdr := mustEncode(t, &header{ServiceMethod: "Test.Echo"})

	cases := []struct {
		name    string
		in      []byte
		wantErr error
	}{
		{name: "round trip", in: good},
		{name: "empty stream", in: nil, wantErr: io.EOF},
		{name: "truncated prefix", in: good[:5], wantErr: io.ErrUnexpectedEOF},
		{name: "truncated header", in: good[:10], wantErr: io.ErrUnexpectedEOF},
		{name: "truncated body", in: good[:len(good)-1], wantErr: io.ErrUnexpectedEOF},
		{name: "zero header", in: rawFrame(nil, nil), wantErr: errMalformedHeader},
		{name: "header too large", in: append([]byte{0, 0x10, 0, 0, 0, 0, 0, 0}, hdr...), wantErr: errFrameTooLarge},
		{name: "body too large", in: append([]byte{0, 0, 0, byte(len(hdr)), 0x7f, 0, 0, 0}, hdr...), wantErr: errFrameTooLarge},
		{name: "60 MiB body declared (issue 11)", in: declared(hdr, 60<<20), wantErr: errFrameTooLarge},
		{name: "one byte over the frame limit", in: declared(hdr, MaxFrameSize-framePrefixLen-len(hdr)+1), wantErr: errFrameTooLarge},
		{name: "body at the frame limit, cut short", in: declared(hdr, MaxFrameSize-framePrefixLen-len(hdr)), wantErr: io.ErrUnexpectedEOF},
		{name: "malformed header before a large body", in: declared([]byte{0xc1}, MaxFrameSize/2), wantErr: errMalformedHeader},
		{name: "malformed header", in: rawFrame([]byte{0xc1}, nil), wantErr: errMalformedHeader},
		{name: "header not a map", in: rawFrame(mustEncode(t, 42), nil), wantErr: errMalformedHeader},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, body, err := readFrame(bytes.NewReader(tc.in))
			if tc.wantErr != nil {
				must.True(t, errors.Is(err, tc.wantErr), must.Sprintf("want %v, got %v", tc.wantErr, err))
				return
			}
			must.NoError(t, err)
			must.Eq(t, header{ServiceMethod: "Test.Echo", Seq: 9, Timeout: 5}, h)
			var args EchoArgs
			must.NoError(t, decodeBody(body, &args))
			must.Eq(t, "v", args.Name)
		})
	}
}

// declared is a frame whose prefix declares a body of n bytes, of which it
// holds none.
func declared(hdr []byte, n int) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(hdr)))
	b = binary.BigEndian.AppendUint32(b, uint32(n))
	return append(b, hdr...)
}

func TestAppendFrame_Limits(t *testing.T) {
	hb := mustEncode(t, &header{})
	fits := MaxFrameSize - framePrefixLen - len(hb)

	frame, err := appendFrame(nil, &header{}, make([]byte, fits))
	must.NoError(t, err)
	must.Eq(t, MaxFrameSize, len(frame), must.Sprint("a frame of exactly MaxFrameSize is sent"))
	_, body, err := readFrame(bytes.NewReader(frame))
	must.NoError(t, err, must.Sprint("and read"))
	must.Eq(t, fits, len(body))

	_, err = appendFrame(nil, &header{}, make([]byte, fits+1))
	must.ErrorIs(t, err, errFrameTooLarge)
}

// TestReadFrame_LyingLength: a peer that declares a large body and sends
// little of it costs the reader about what it sent, not what it declared.
func TestReadFrame_LyingLength(t *testing.T) {
	hdr := mustEncode(t, &header{ServiceMethod: "Test.Echo"})
	in := append(declared(hdr, MaxFrameSize-framePrefixLen-len(hdr)), make([]byte, 1000)...)

	r := &sizingReader{r: bytes.NewReader(in)}
	_, _, err := readFrame(r)
	must.ErrorIs(t, err, io.ErrUnexpectedEOF)
	must.Less(t, 1<<20, r.largest, must.Sprintf("a buffer of %d bytes was read into for 1000 sent", r.largest))
}

// sizingReader records the largest buffer it was asked to fill: what a
// reader allocated for a frame shows there.
type sizingReader struct {
	r       io.Reader
	largest int
}

func (s *sizingReader) Read(p []byte) (int, error) {
	s.largest = max(s.largest, len(p))
	return s.r.Read(p)
}

// FuzzReadFrame feeds readFrame arbitrary bytes (seeds in
// testdata/fuzz/FuzzReadFrame). It must never panic, must fail only with
// the errors it documents, and what it accepts must be a frame within the
// limits that encodes back to what it read.
func FuzzReadFrame(f *testing.F) {
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bytes.NewReader(in)
		h, body, err := readFrame(r)
		if err != nil {
			known := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
				errors.Is(err, errFrameTooLarge) || errors.Is(err, errMalformedHeader)
			must.True(t, known, must.Sprintf("undocumented error %v", err))
			return
		}
		consumed := len(in) - r.Len()
		hlen := int(binary.BigEndian.Uint32(in[0:4]))
		must.Eq(t, framePrefixLen+hlen+len(body), consumed, must.Sprint("reads exactly one frame"))
		must.LessEq(t, MaxFrameSize, consumed)

		// The args or reply of any method: decoding may fail, not panic.
		var args EchoArgs
		_ = decodeBody(body, &args)
		var anything any
		_ = decodeBody(body, &anything)

		// What was read encodes back to a frame that reads the same.
		frame, err := appendFrame(nil, &h, body)
		if errors.Is(err, errFrameTooLarge) {
			return // the header re-encoded grew past its limit
		}
		must.NoError(t, err)
		h2, body2, err := readFrame(bytes.NewReader(frame))
		must.NoError(t, err)
		must.Eq(t, h, h2)
		must.Eq(t, len(body), len(body2))
		must.True(t, bytes.Equal(body, body2))
	})
}
