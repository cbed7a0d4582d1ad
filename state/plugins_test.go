package state_test

import (
	"fmt"
	"testing"

	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
	"github.com/shoenig/test/must"
)

func TestStateStore_DeleteCSIPlugin(t *testing.T) {
	volumes := func(n int) []any {
		rows := make([]any, n)
		for i := range rows {
			v := statetest.Volume(fmt.Sprintf("vol-%d", i), plugID)
			v.ReadClaims, v.WriteClaims, v.PastClaims = map[string]*structs.CSIVolumeClaim{}, map[string]*structs.CSIVolumeClaim{}, map[string]*structs.CSIVolumeClaim{}
			rows[i] = v
		}
		return rows
	}
	withInstance := statetest.NodeWithPlugin("n1", plugID, false, true, true)
	stopped := statetest.PluginJob("old", plugID)
	stopped.Stop = true

	cases := []struct {
		name string
		rows map[string][]any
		id   string
		want error
	}{
		{
			name: "unused plugin",
			rows: map[string][]any{state.TableCSIPlugins: {structs.NewCSIPlugin(plugID, 1)}},
			id:   plugID,
		},
		{
			name: "unknown plugin",
			rows: map[string][]any{state.TableCSIPlugins: {structs.NewCSIPlugin(plugID, 1)}},
			id:   "nope",
			want: structs.ErrNotFound,
		},
		{
			name: "instance remains",
			rows: map[string][]any{state.TableCSIPlugins: {structs.NewCSIPlugin(plugID, 1)}, state.TableNodes: {withInstance}},
			id:   plugID,
			want: structs.ErrConflict,
		},
		{
			name: "a job runs it",
			rows: map[string][]any{
				state.TableCSIPlugins: {structs.NewCSIPlugin(plugID, 1)},
				state.TableJobs:       {statetest.PluginJob("plug-job", plugID)},
			},
			id:   plugID,
			want: structs.ErrConflict,
		},
		{
			name: "a stopped job does not hold it",
			rows: map[string][]any{
				state.TableCSIPlugins: {structs.NewCSIPlugin(plugID, 1)},
				state.TableJobs:       {stopped},
			},
			id: plugID,
		},
		{
			name: "a volume uses it",
			rows: map[string][]any{
				state.TableCSIPlugins: {structs.NewCSIPlugin(plugID, 1)},
				state.TableCSIVolumes: volumes(1),
			},
			id:   plugID,
			want: structs.ErrConflict,
		},
		{
			name: "many volumes use it",
			rows: map[string][]any{
				state.TableCSIPlugins: {structs.NewCSIPlugin(plugID, 1)},
				state.TableCSIVolumes: volumes(7),
			},
			id:   plugID,
			want: structs.ErrConflict,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := restored(t, tc.rows)
			mustCode(t, tc.want, s.DeleteCSIPlugin(10, tc.id))
			plug, err := s.CSIPluginByID(nil, plugID)
			must.NoError(t, err)
			if tc.want != nil {
				must.NotNil(t, plug)
				must.Eq(t, uint64(0), mustIndex(t, s, state.TableCSIPlugins))
				return
			}
			must.Nil(t, plug)
			must.Eq(t, uint64(10), mustIndex(t, s, state.TableCSIPlugins))
		})
	}
}

func TestStateStore_CSIPlugins(t *testing.T) {
	s := statetest.New(t)
	upsertNodes(t, s, 10, withPlugins("n1", true, "aws-ebs", "aws-efs", "hostpath"))

	ids := func(plugs []*structs.CSIPlugin) []string {
		out := []string{}
		for _, p := range plugs {
			out = append(out, p.ID)
		}
		return out
	}
	all := collect[structs.CSIPlugin](t)
	cases := []struct {
		name string
		got  []*structs.CSIPlugin
		want []string
	}{
		{"all", all(s.CSIPlugins(nil)), []string{"aws-ebs", "aws-efs", "hostpath"}},
		{"prefix", all(s.CSIPluginsByIDPrefix(nil, "aws-")), []string{"aws-ebs", "aws-efs"}},
		{"no match", all(s.CSIPluginsByIDPrefix(nil, "gce")), []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			must.Eq(t, tc.want, ids(tc.got))
			for _, p := range tc.got {
				must.Eq(t, 1, p.NodesHealthy, must.Sprint("list rows hold their counts"))
				must.Nil(t, p.Nodes, must.Sprint("list rows hold no instances"))
			}
		})
	}
}

func TestStateStore_CSIPluginByID_Absent(t *testing.T) {
	s := statetest.New(t)
	plug, err := s.CSIPluginByID(nil, "nope")
	must.NoError(t, err)
	must.Nil(t, plug)
}
