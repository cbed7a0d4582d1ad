package httpapi

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

func TestSuggestField(t *testing.T) {
	var job structs.JobRegisterRequest
	var vols structs.CSIVolumeRegisterRequest
	cases := []struct {
		name string
		v    any
		want string
	}{
		{"Counts", &job, "Count"},
		{"counts", &job, "Count"},
		{"TaskGroup", &job, "TaskGroups"},
		{"Priority", &job, ""},
		{"CapacityMax", &vols, "RequestedCapacityMax"},
		{"Capabilities", &vols, "RequestedCapabilities"},
		{"", &job, ""},
	}
	for _, tc := range cases {
		must.EqOp(t, tc.want, suggestField(tc.name, tc.v), must.Sprint(tc.name))
	}
}

func TestEditDistance(t *testing.T) {
	must.EqOp(t, 0, editDistance("count", "count"))
	must.EqOp(t, 1, editDistance("counts", "count"))
	must.EqOp(t, 2, editDistance("ab", ""))
	must.EqOp(t, 3, editDistance("kitten", "sitting"))
}
