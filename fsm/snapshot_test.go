package fsm

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// memSink is a raft.SnapshotSink over a buffer.
type memSink struct {
	bytes.Buffer
	cancelled bool
}

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Close() error  { return nil }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }

var _ raft.SnapshotSink = (*memSink)(nil)

func persist(t *testing.T, f *FSM) []byte {
	t.Helper()
	snap, err := f.Snapshot()
	must.NoError(t, err)
	var sink memSink
	must.NoError(t, snap.Persist(&sink))
	must.False(t, sink.cancelled)
	snap.Release()
	return sink.Bytes()
}

func TestFSM_Snapshot_RoundTrip(t *testing.T) {
	for name, entries := range goldenScenarios() {
		t.Run(name, func(t *testing.T) {
			src := newFSM(t)
			applyAll(t, src, entries)
			want := dumpTables(t, src.State())

			dst := newFSM(t)
			old := dst.State()
			must.NoError(t, dst.Restore(io.NopCloser(bytes.NewReader(persist(t, src)))))
			must.Eq(t, string(want), string(dumpTables(t, dst.State())))

			select {
			case <-old.AbandonCh():
			default:
				t.Fatal("restore must abandon the replaced state store so blocked readers retry")
			}
		})
	}
}

func TestFSM_Snapshot_KeepsSecrets(t *testing.T) {
	src := newFSM(t)
	applyAll(t, src, goldenScenarios()["node_plugin_volume_claim"])
	dst := newFSM(t)
	must.NoError(t, dst.Restore(io.NopCloser(bytes.NewReader(persist(t, src)))))
	vol, err := dst.State().CSIVolumeByID(nil, "default", "data")
	must.NoError(t, err)
	must.NotNil(t, vol)
	must.Eq(t, "hunter2", vol.Secrets["token"], must.Sprint("snapshots must carry secrets; only people-facing forms redact"))
}

func TestFSM_Restore_Corrupt(t *testing.T) {
	src := newFSM(t)
	applyAll(t, src, goldenScenarios()["node_plugin_volume_claim"])
	good := persist(t, src)

	cases := map[string][]byte{
		"empty":          {},
		"unknown format": append([]byte{0x09}, good[1:]...),
		"truncated":      good[:len(good)/2],
		"unknown record": append(append([]byte{}, good...), 0x7f, 0x80),
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			dst := newFSM(t)
			applyAll(t, dst, goldenScenarios()["release_and_teardown"][:2])
			before := dumpTables(t, dst.State())
			err := dst.Restore(io.NopCloser(bytes.NewReader(data)))
			must.Error(t, err)
			must.Eq(t, string(before), string(dumpTables(t, dst.State())), must.Sprint("a failed restore must leave the state as it was"))
		})
	}
}

// TestFSM_AppliedIndex: it moves with every command applied, a refused one
// included, and a restore sets it to the last index the tables record.
func TestFSM_AppliedIndex(t *testing.T) {
	src := newFSM(t)
	must.EqOp(t, uint64(0), src.AppliedIndex())
	node := statetest.NodeWithPlugin("node-1", "hostpath", true, true, true)
	applyAll(t, src, []entry{
		{structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: node}},
		{structs.CSIVolumeRegisterRequestType, &structs.CSIVolumeRegisterRequest{Volumes: []*structs.CSIVolume{statetest.Volume("v", "hostpath")}}},
		{structs.CSIVolumeRegisterRequestType, &structs.CSIVolumeRegisterRequest{Volumes: []*structs.CSIVolume{statetest.Volume("x", "nope")}}}, // refused
	})
	must.EqOp(t, uint64(3), src.AppliedIndex())
	must.NoError(t, src.WaitApplied(context.Background(), 3), must.Sprint("an index already applied does not wait"))
	short, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	must.ErrorIs(t, src.WaitApplied(short, 4), context.DeadlineExceeded)
	waited := make(chan error, 1)
	go func() { waited <- src.WaitApplied(context.Background(), 4) }()
	buf, err := structs.Encode(structs.CSIVolumeDeregisterRequestType, &structs.CSIVolumeDeregisterRequest{VolumeIDs: []string{"none"}})
	must.NoError(t, err)
	src.Apply(&raft.Log{Index: 4, Type: raft.LogCommand, Data: buf})
	must.NoError(t, <-waited, must.Sprint("applying index 4 wakes the waiter"))

	dst := newFSM(t)
	must.NoError(t, dst.Restore(io.NopCloser(bytes.NewReader(persist(t, src)))))
	must.EqOp(t, uint64(2), dst.AppliedIndex(), must.Sprint("the last index a table records: the refused entry wrote nothing"))
}
