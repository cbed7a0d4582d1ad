package check

import (
	"strings"
	"testing"

	"github.com/shoenig/test/must"
)

func TestWriterFile(t *testing.T) {
	cases := []struct {
		name      string
		file      string
		writers   []string
		malformed int
		want      []string
	}{
		{
			name:    "writers one after another, a torn last line",
			file:    "a 1700000000.1\na 1700000000.2\nb 1700000001.0\nb 1700000001.5\nc 1700000002.0\nc 17",
			writers: []string{"a", "b", "c"},
		},
		{
			name:      "torn line in the middle, empty lines",
			file:      "a 1\n\nb\nb 2\n",
			writers:   []string{"a", "b"},
			malformed: 2,
		},
		{
			name:    "the old writer outlives its stop",
			file:    "a 1\nb 2\na 3\nb 4\na 5\nb 6\n",
			writers: []string{"a", "b"},
			want: []string{
				"alloc a wrote line 3 (3) after alloc b began at line 2 (2): two writers",
				"alloc b wrote line 4 (4) after alloc a began at line 1 (1): two writers",
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := WriterFile("vol-1", strings.NewReader(tc.file))
			must.NoError(t, err)
			must.Eq(t, tc.writers, rep.Writers)
			must.EqOp(t, tc.malformed, rep.Malformed)
			var details []string
			for _, v := range rep.Violations {
				must.EqOp(t, "writer-file", v.Check)
				must.EqOp(t, "vol-1", v.VolumeID)
				details = append(details, v.Detail)
			}
			must.Eq(t, tc.want, details)
		})
	}
}
