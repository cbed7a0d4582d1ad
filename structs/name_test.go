package structs

import (
	"strings"
	"testing"

	"github.com/shoenig/test/must"
)

// TestValidateName: one rule for every ID and name; IDs in use today
// (per_alloc volume IDs included) stay valid.
func TestValidateName(t *testing.T) {
	for _, ok := range []struct {
		kind NameKind
		s    string
	}{
		{NameJobID, "web"}, {NameJobID, "db-1.prod"}, {NameJobID, "job_é"},
		{NameVolumeID, "data"}, {NameVolumeID, "vol-0001"}, {NameVolumeID, "data[0]"}, {NameVolumeID, "data[12]"},
		{NamePluginID, "hostpath"}, {NameTask, "server"}, {NameGroup, "db"}, {NameNamespace, "default"},
		{NameTask, strings.Repeat("t", MaxNameLength)},
	} {
		must.NoError(t, ValidateName(ok.kind, ok.s), must.Sprintf("%s %q", ok.kind, ok.s))
	}
	cases := []struct {
		name string
		kind NameKind
		s    string
		want string
	}{
		{"empty", NameTask, "", "task name is missing"},
		{"dot", NameTask, ".", `task name "." must not start with '.'`},
		{"dot-dot", NameGroup, "..", `group name ".." must not start with '.'`},
		{"slash", NameTask, "a/b", `task name "a/b" must not contain '/'`},
		{"space", NameJobID, "my web", `job ID "my web" must not contain ' '`},
		{"NUL", NameJobID, "a\x00b", `job ID "a\x00b" must not contain '\x00'`},
		{"CR", NameJobID, "a\rb", `job ID "a\rb" must not contain '\r'`},
		{"zero-width", NamePluginID, "a\u200bb", `must not contain '\u200b'`},
		{"emoji", NameJobID, "😀", `job ID "😀" must not contain '😀'`},
		{"backslash", NameTask, `a\b`, `must not contain '\\'`},
		{"combining mark", NameVolumeID, "a\u0301", `must not contain '́'`},
		{"bad UTF-8", NameVolumeID, "a\xffb", `volume ID "a\xffb" is not valid UTF-8`},
		{"bracket in a job ID", NameJobID, "web[1]", `job ID "web[1]" must not contain '[' or ']'`},
		{"bracket in a group", NameGroup, "g]", `group name "g]" must not contain '[' or ']'`},
		{"too long", NameJobID, strings.Repeat("a", MaxNameLength+1), "is 129 bytes long; the most is 128"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateName(tc.kind, tc.s)
			must.ErrorIs(t, err, ErrBadRequest)
			must.StrContains(t, err.Error(), tc.want)
		})
	}
}

// TestValidateName_HugeNameIsNotEchoed: a 1 MiB ID makes a short error.
func TestValidateName_HugeNameIsNotEchoed(t *testing.T) {
	err := ValidateName(NameJobID, strings.Repeat("x", 1<<20))
	must.ErrorIs(t, err, ErrBadRequest)
	must.StrContains(t, err.Error(), "(1048576 bytes) is 1048576 bytes long; the most is 128")
	must.Less(t, 200, len(err.Error()))
}
