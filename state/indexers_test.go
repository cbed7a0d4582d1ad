package state

import (
	"testing"

	"github.com/berth-csi/berth/structs"
	"github.com/shoenig/test/must"
)

func TestStringsIndexer_FromObject(t *testing.T) {
	claim := func(alloc, node string) *structs.CSIVolumeClaim {
		return &structs.CSIVolumeClaim{AllocID: alloc, NodeID: node}
	}
	cases := []struct {
		name      string
		vol       *structs.CSIVolume
		wantAlloc []string
		wantNode  []string
	}{
		{
			name: "no claims is not indexed",
			vol:  &structs.CSIVolume{ID: "v"},
		},
		{
			name: "every claim map counts, nodes deduplicated",
			vol: &structs.CSIVolume{
				ID:          "v",
				ReadClaims:  map[string]*structs.CSIVolumeClaim{"a2": claim("a2", "n1")},
				WriteClaims: map[string]*structs.CSIVolumeClaim{"a1": claim("a1", "n1")},
				PastClaims:  map[string]*structs.CSIVolumeClaim{"a3": claim("a3", "n2")},
			},
			wantAlloc: []string{"a1\x00", "a2\x00", "a3\x00"},
			wantNode:  []string{"n1\x00", "n2\x00"},
		},
		{
			name: "empty node id is skipped",
			vol: &structs.CSIVolume{
				ID:         "v",
				PastClaims: map[string]*structs.CSIVolumeClaim{"a1": claim("a1", "")},
			},
			wantAlloc: []string{"a1\x00"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			check := func(x *stringsIndexer, want []string) {
				ok, vals, err := x.FromObject(tc.vol)
				must.NoError(t, err)
				must.Eq(t, len(want) > 0, ok)
				got := make([]string, len(vals))
				for i, v := range vals {
					got[i] = string(v)
				}
				must.SliceEqOp(t, want, got)
			}
			check(volumeClaimAllocIndexer, tc.wantAlloc)
			check(volumeClaimNodeIndexer, tc.wantNode)
		})
	}
}

func TestStringsIndexer_RejectsWrongType(t *testing.T) {
	_, _, err := volumeClaimAllocIndexer.FromObject(&structs.Node{})
	must.Error(t, err)
	_, _, err = jobCSIPluginIndexer.FromObject(&structs.CSIVolume{})
	must.Error(t, err)
}

func TestStringsIndexer_FromArgs(t *testing.T) {
	b, err := volumeClaimNodeIndexer.FromArgs("n1")
	must.NoError(t, err)
	must.Eq(t, "n1\x00", string(b))

	_, err = volumeClaimNodeIndexer.FromArgs("n1", "n2")
	must.Error(t, err)
	_, err = volumeClaimNodeIndexer.FromArgs(42)
	must.Error(t, err)
}

func TestJobCSIPluginIndexer_FromObject(t *testing.T) {
	job := &structs.Job{ID: "j", TaskGroups: []*structs.TaskGroup{{Tasks: []*structs.Task{
		{Name: "a", CSIPluginConfig: &structs.TaskCSIPluginConfig{ID: "p2"}},
		{Name: "b", CSIPluginConfig: &structs.TaskCSIPluginConfig{ID: "p1"}},
		{Name: "c"},
	}}}}
	ok, vals, err := jobCSIPluginIndexer.FromObject(job)
	must.NoError(t, err)
	must.True(t, ok)
	must.SliceLen(t, 2, vals)
	must.Eq(t, "p1\x00", string(vals[0]))
	must.Eq(t, "p2\x00", string(vals[1]))

	ok, _, err = jobCSIPluginIndexer.FromObject(&structs.Job{ID: "plain"})
	must.NoError(t, err)
	must.False(t, ok)
}
