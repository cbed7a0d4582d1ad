package spec

import (
	"testing"

	"github.com/shoenig/test/must"
)

func TestParseSize_Values(t *testing.T) {
	cases := []struct {
		in      string
		want    int64
		wantErr string
	}{
		{in: "0", want: 0},
		{in: "1073741824", want: 1 << 30},
		{in: "512B", want: 512},
		{in: "1KB", want: 1000},
		{in: "1KiB", want: 1024},
		{in: "500MB", want: 500e6},
		{in: "1MiB", want: 1 << 20},
		{in: "1GiB", want: 1 << 30},
		{in: "1 GiB", want: 1 << 30},
		{in: "2gb", want: 2e9},
		{in: "1.5GiB", want: 3 << 29},
		{in: "1.1KB", want: 1100},
		{in: "1TB", want: 1e12},
		{in: "1TiB", want: 1 << 40},
		{in: "", wantErr: "is not a size"},
		{in: "GiB", wantErr: "is not a size"},
		{in: "1PiB", wantErr: `unknown unit "PiB"`},
		{in: "-1GiB", wantErr: "is negative"},
		{in: "-0", wantErr: "is negative"},
		{in: "0.5B", wantErr: "not a whole number of bytes"},
		{in: "1e9", wantErr: "is not a size"},
		{in: "1/2GiB", wantErr: "is not a size"},
		{in: "99999999TiB", wantErr: "too large"},
		{in: " 10 kb ", want: 10000},
		{in: ".5KB", want: 500},
		{in: "9223372036854775807", want: 1<<63 - 1},
		{in: "9223372036854775808", wantErr: "too large"},
		{in: "8388608TiB", wantErr: "too large"},
		// Go's other number forms, which big.Rat reads, are not sizes.
		{in: "0x10", wantErr: "is not a size"},
		{in: "0b101", wantErr: "is not a size"},
		{in: "0o17KiB", wantErr: "is not a size"},
		{in: "1_000", wantErr: "is not a size"},
		{in: "0x1p4", wantErr: "is not a size"},
		{in: "+5", wantErr: "is not a size"},
		{in: "1.2.3", wantErr: "is not a size"},
		{in: ".", wantErr: "is not a size"},
		{in: "-", wantErr: "is not a size"},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseSize(tc.in)
			if tc.wantErr != "" {
				must.ErrorContains(t, err, tc.wantErr)
				return
			}
			must.NoError(t, err)
			must.EqOp(t, tc.want, got)
		})
	}
}

func TestSuggest_Typos(t *testing.T) {
	known := []string{"access_mode", "attachment_mode"}
	must.EqOp(t, "access_mode", suggest("acess_mode", known))
	must.EqOp(t, "attachment_mode", suggest("attachmentmode", known))
	must.EqOp(t, "access_mode", suggest("Access_Mode", known))
	must.EqOp(t, "", suggest("size", known))
}
