package rpc

import (
	"bytes"
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

func TestAppendFrame_Limits(t *testing.T) {
	_, err := appendFrame(nil, &header{}, make([]byte, maxBodyLen+1))
	must.ErrorIs(t, err, errFrameTooLarge)
}
