package fsm

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/state"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// entry is one raft log entry of a golden scenario.
type entry struct {
	t   structs.MessageType
	msg any // or a refusal
}

// refusal is an entry's message that the FSM must refuse with err (and
// write nothing).
type refusal struct {
	msg any
	err error
}

var stamp = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func newFSM(t *testing.T) *FSM {
	t.Helper()
	f, err := New(testlog.Logger(t, "fsm"))
	must.NoError(t, err)
	return f
}

// applyAll applies entries from index 1 and returns what each answered.
func applyAll(t *testing.T, f *FSM, entries []entry) []any {
	t.Helper()
	var out []any
	for i, e := range entries {
		msg := e.msg
		if r, ok := msg.(refusal); ok {
			msg = r.msg
		}
		buf, err := structs.Encode(e.t, msg)
		must.NoError(t, err)
		out = append(out, f.Apply(&raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: buf}))
	}
	return out
}

// dumpTables renders every table, in snapshot order, as indented JSON.
func dumpTables(t *testing.T, st *state.StateStore) []byte {
	t.Helper()
	var tables []map[string]any
	for _, name := range state.Tables {
		iter, err := st.TableRows(name)
		must.NoError(t, err)
		var rows []any
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			rows = append(rows, raw)
		}
		tables = append(tables, map[string]any{"table": name, "rows": rows})
	}
	b, err := json.MarshalIndent(tables, "", "  ")
	must.NoError(t, err)
	return append(b, '\n')
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		must.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	must.NoError(t, err, must.Sprint("run `go test ./fsm -update` to create "+path))
	if !bytes.Equal(want, got) {
		t.Fatalf("tables differ from %s (rerun with -update if the change is intended)\n--- got ---\n%s", path, got)
	}
}

func claimEntry(vol, alloc string, mode structs.CSIVolumeClaimMode, st structs.CSIVolumeClaimState) entry {
	return entry{structs.CSIVolumeClaimRequestType, &structs.CSIVolumeClaimBatchRequest{Claims: []structs.CSIVolumeClaimRequest{{
		VolumeID: vol, AllocationID: alloc, Mode: mode, State: st, Timestamp: stamp,
	}}}}
}

// goldenScenarios are raft histories whose resulting tables are pinned in
// testdata/. They cover every message type.
func goldenScenarios() map[string][]entry {
	node := statetest.NodeWithPlugin("node-1", "hostpath", true, true, true)
	node.StatusUpdatedAt = stamp.UnixNano()
	for _, m := range []map[string]*structs.CSIInfo{node.CSIControllerPlugins, node.CSINodePlugins} {
		for _, info := range m {
			info.UpdateTime = stamp
		}
	}
	otherInfo := statetest.NodeWithPlugin("node-1", "other", false, true, true).CSINodePlugins["other"]
	otherInfo.UpdateTime = stamp
	vol := statetest.Volume("data", "hostpath")
	vol.Secrets = structs.CSISecrets{"token": "hunter2"}
	alloc := statetest.Alloc("alloc-1", "node-1")
	job := &structs.Job{ID: "plugin-job", Type: structs.JobTypeSystem, TaskGroups: []*structs.TaskGroup{{
		Name: "plugin", Count: 1, Tasks: []*structs.Task{{Name: "plugin", Driver: "exec",
			CSIPluginConfig: &structs.TaskCSIPluginConfig{ID: "other", Type: structs.CSIPluginTypeNode}}},
	}}}
	placed := alloc.Copy()
	placed.ClientStatus = structs.AllocClientStatusPending
	placed.JobID = job.ID
	batchVol := func(id string) *structs.CSIVolume { return statetest.Volume(id, "hostpath") }
	gcEverything := &structs.GCRequest{Cutoffs: structs.GCCutoffs{Alloc: 1 << 62, Job: 1 << 62, Node: 1 << 62},
		Allocs: []string{"alloc-1"}, Jobs: []structs.GCJobKey{{ID: "plugin-job"}}}
	return map[string][]entry{
		"register_batch": {
			{structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: node}},
			{structs.CSIVolumeRegisterBatchRequestType, &structs.CSIVolumeRegisterBatchRequest{Registers: []structs.CSIVolumeRegisterRequest{
				{Volumes: []*structs.CSIVolume{batchVol("b1")}},
				{Volumes: []*structs.CSIVolume{batchVol("b2"), batchVol("b3")}},
			}}},
		},
		"node_plugin_volume_claim": {
			{structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: node}},
			{structs.CSIVolumeRegisterRequestType, &structs.CSIVolumeRegisterRequest{Volumes: []*structs.CSIVolume{vol}}},
			{structs.PlanApplyRequestType, &structs.PlanApplyRequest{Allocs: []*structs.Allocation{alloc}}},
			claimEntry("data", "alloc-1", structs.CSIVolumeClaimWrite, structs.CSIVolumeClaimStateTaken),
			{structs.NodeUpdateStatusRequestType, &structs.NodeUpdateStatusRequest{NodeID: "node-1", Status: structs.NodeStatusDown,
				UpdatedAt: stamp.UnixNano(), Event: &structs.NodeEvent{Message: "missed heartbeat", Subsystem: "heartbeat", Timestamp: stamp}}},
		},
		"fingerprint_delta": {
			{structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: node}},
			{structs.NodeFingerprintRequestType, &structs.NodeFingerprintRequest{NodeID: "node-1", Plugins: []*structs.NodePluginUpdate{
				{PluginID: "hostpath", Node: node.CSINodePlugins["hostpath"]}, // controller side gone
				{PluginID: "other", Node: otherInfo},
			}, Events: []*structs.NodeEvent{{Message: `plugin "other" became healthy`, Subsystem: "CSI", Timestamp: stamp}}}},
			// A plugin row goes by itself once nothing uses it; a delete
			// of one in use is refused and changes nothing.
			{structs.CSIPluginDeleteRequestType, refusal{&structs.CSIPluginDeleteRequest{ID: "hostpath"}, structs.ErrConflict}},
		},
		"plan_then_client_completes": {
			{structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: node}},
			{structs.CSIVolumeRegisterRequestType, &structs.CSIVolumeRegisterRequest{Volumes: []*structs.CSIVolume{vol}}},
			{structs.PlanApplyRequestType, &structs.PlanApplyRequest{Job: job, Allocs: []*structs.Allocation{placed},
				Claims: []structs.CSIVolumeClaimRequest{{VolumeID: "data", AllocationID: "alloc-1", NodeID: "node-1",
					Mode: structs.CSIVolumeClaimWrite, State: structs.CSIVolumeClaimStateTaken, Timestamp: stamp}}}},
			{structs.AllocClientUpdateRequestType, &structs.AllocClientUpdateRequest{Timestamp: stamp.UnixNano(),
				Allocs: []*structs.Allocation{{ID: "alloc-1", ClientStatus: structs.AllocClientStatusComplete,
					TaskStates: map[string]*structs.TaskState{"web": {State: structs.TaskStateDead, FinishedAt: stamp}}}}}},
		},
		// The leader's coalesced client writes: each report and delta of
		// an entry applied as if alone, in order.
		"client_batches": {
			{structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: node}},
			{structs.CSIVolumeRegisterRequestType, &structs.CSIVolumeRegisterRequest{Volumes: []*structs.CSIVolume{vol}}},
			{structs.PlanApplyRequestType, &structs.PlanApplyRequest{Allocs: []*structs.Allocation{placed},
				Claims: []structs.CSIVolumeClaimRequest{{VolumeID: "data", AllocationID: "alloc-1", NodeID: "node-1",
					Mode: structs.CSIVolumeClaimWrite, State: structs.CSIVolumeClaimStateTaken, Timestamp: stamp}}}},
			{structs.NodeFingerprintBatchRequestType, &structs.NodeFingerprintBatchRequest{Fingerprints: []structs.NodeFingerprintRequest{
				{NodeID: "node-1", Plugins: []*structs.NodePluginUpdate{{PluginID: "other", Node: otherInfo}},
					Events: []*structs.NodeEvent{{Message: `plugin "other" became healthy`, Subsystem: "CSI", Timestamp: stamp}}},
				{NodeID: "node-1", Plugins: []*structs.NodePluginUpdate{{PluginID: "hostpath", Node: node.CSINodePlugins["hostpath"]}}},
			}}},
			{structs.AllocClientUpdateBatchRequestType, &structs.AllocClientUpdateBatchRequest{Updates: []structs.AllocClientUpdateRequest{
				{Timestamp: stamp.UnixNano(), Allocs: []*structs.Allocation{{ID: "alloc-1", ClientStatus: structs.AllocClientStatusRunning,
					TaskStates: map[string]*structs.TaskState{"web": {State: structs.TaskStateRunning, StartedAt: stamp}}}}},
				// The task ends: the claim starts releasing, stamped with
				// this report's time.
				{Timestamp: stamp.Add(time.Minute).UnixNano(), Allocs: []*structs.Allocation{{ID: "alloc-1", ClientStatus: structs.AllocClientStatusComplete,
					TaskStates: map[string]*structs.TaskState{"web": {State: structs.TaskStateDead, StartedAt: stamp, FinishedAt: stamp.Add(time.Minute)}}}}},
			}}},
		},
		"root_keys": {
			{structs.RootKeyUpsertRequestType, &structs.RootKeyUpsertRequest{Key: &structs.RootKeyMeta{
				KeyID: "11111111-1111-4111-8111-111111111111", CreateTime: stamp, State: structs.RootKeyStateActive}}},
			// A rotation: the new active key demotes the first.
			{structs.RootKeyUpsertRequestType, &structs.RootKeyUpsertRequest{Key: &structs.RootKeyMeta{
				KeyID: "22222222-2222-4222-8222-222222222222", CreateTime: stamp.Add(time.Hour), State: structs.RootKeyStateActive}}},
			{structs.RootKeyUpsertRequestType, refusal{&structs.RootKeyUpsertRequest{}, structs.ErrBadRequest}},
		},
		"acl": {
			{structs.ACLPolicyUpsertRequestType, &structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{
				{Name: "readonly", Rules: "node {\n  policy = \"read\"\n}\n"},
				{Name: "deploy", Rules: "namespace \"default\" {\n  policy = \"write\"\n}\n"}}}},
			{structs.ACLBootstrapRequestType, &structs.ACLBootstrapRequest{Token: &structs.ACLToken{
				AccessorID: "aaaaaaaa-0000-4000-8000-000000000001", SecretHash: "hash-of-root", Name: "Bootstrap Token",
				Type: structs.ACLTokenTypeManagement, CreateTime: stamp}}},
			// Bootstrap happens once.
			{structs.ACLBootstrapRequestType, refusal{&structs.ACLBootstrapRequest{Token: &structs.ACLToken{
				AccessorID: "aaaaaaaa-0000-4000-8000-000000000002", SecretHash: "hash-of-second", Name: "Bootstrap Token",
				Type: structs.ACLTokenTypeManagement, CreateTime: stamp}}, structs.ErrConflict}},
			// A reset: a bootstrap that expects the reset index (2, the
			// first bootstrap's) makes one more management token; another
			// against the same index, as a concurrent reset would send, is
			// refused: the index moved on.
			{structs.ACLBootstrapRequestType, &structs.ACLBootstrapRequest{ResetIndex: 2, Token: &structs.ACLToken{
				AccessorID: "aaaaaaaa-0000-4000-8000-000000000004", SecretHash: "hash-of-reset", Name: "Bootstrap Token",
				Type: structs.ACLTokenTypeManagement, CreateTime: stamp}}},
			{structs.ACLBootstrapRequestType, refusal{&structs.ACLBootstrapRequest{ResetIndex: 2, Token: &structs.ACLToken{
				AccessorID: "aaaaaaaa-0000-4000-8000-000000000005", SecretHash: "hash-of-racer", Name: "Bootstrap Token",
				Type: structs.ACLTokenTypeManagement, CreateTime: stamp}}, structs.ErrConflict}},
			{structs.ACLTokenUpsertRequestType, &structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{{
				AccessorID: "aaaaaaaa-0000-4000-8000-000000000003", SecretHash: "hash-of-deployer", Name: "deployer",
				Type: structs.ACLTokenTypeClient, Policies: []string{"deploy"}, CreateTime: stamp}}}},
			{structs.ACLTokenDeleteRequestType, &structs.ACLTokenDeleteRequest{AccessorIDs: []string{"aaaaaaaa-0000-4000-8000-000000000003"}}},
			{structs.ACLPolicyDeleteRequestType, &structs.ACLPolicyDeleteRequest{Names: []string{"deploy"}}},
		},
		// Garbage collection deletes only what is still collectable at
		// its apply: not an alloc whose claim is releasing, nor its job.
		"gc": {
			{structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: node}},
			{structs.CSIVolumeRegisterRequestType, &structs.CSIVolumeRegisterRequest{Volumes: []*structs.CSIVolume{vol}}},
			{structs.PlanApplyRequestType, &structs.PlanApplyRequest{Job: job, Allocs: []*structs.Allocation{placed},
				Claims: []structs.CSIVolumeClaimRequest{{VolumeID: "data", AllocationID: "alloc-1", NodeID: "node-1",
					Mode: structs.CSIVolumeClaimWrite, State: structs.CSIVolumeClaimStateTaken, Timestamp: stamp}}}},
			{structs.JobDeregisterRequestType, &structs.JobDeregisterRequest{JobID: "plugin-job", Timestamp: stamp.UnixNano()}},
			{structs.AllocClientUpdateRequestType, &structs.AllocClientUpdateRequest{Timestamp: stamp.UnixNano(),
				Allocs: []*structs.Allocation{{ID: "alloc-1", ClientStatus: structs.AllocClientStatusComplete}}}},
			{structs.GCRequestType, gcEverything},
			claimEntry("data", "alloc-1", structs.CSIVolumeClaimWrite, structs.CSIVolumeClaimStateFreed),
			{structs.GCRequestType, gcEverything},
		},
		// A drain: the node ineligible, then draining; the drainer's
		// steps stop its allocation and complete it; eligibility cannot
		// come back while it drains, nor a step of another drain apply.
		// A second drain is left under way.
		"node_drain": {
			{structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: node}},
			{structs.PlanApplyRequestType, &structs.PlanApplyRequest{Allocs: []*structs.Allocation{alloc}}},
			{structs.NodeUpdateEligibilityRequestType, &structs.NodeUpdateEligibilityRequest{NodeID: "node-1",
				Eligibility: structs.NodeSchedulingIneligible, UpdatedAt: stamp.UnixNano(),
				Event: &structs.NodeEvent{Message: "node marked ineligible for scheduling", Subsystem: "Cluster", Timestamp: stamp}}},
			{structs.NodeUpdateDrainRequestType, &structs.NodeUpdateDrainRequest{NodeID: "node-1", UpdatedAt: stamp.UnixNano(),
				DrainStrategy: structs.NewDrainStrategy(structs.DrainSpec{Deadline: time.Hour}, stamp),
				Events:        []*structs.NodeEvent{{Message: "drain started: deadline 1h0m0s", Subsystem: structs.NodeEventSubsystemDrain, Timestamp: stamp}}}},
			{structs.NodeUpdateEligibilityRequestType, refusal{&structs.NodeUpdateEligibilityRequest{NodeID: "node-1",
				Eligibility: structs.NodeSchedulingEligible}, structs.ErrConflict}},
			{structs.NodeUpdateDrainRequestType, refusal{&structs.NodeUpdateDrainRequest{NodeID: "node-1",
				Step: &structs.DrainStep{StartedAt: stamp.Add(-time.Hour), StopAllocs: []string{"alloc-1"}}}, structs.ErrConflict}},
			{structs.NodeUpdateDrainRequestType, &structs.NodeUpdateDrainRequest{NodeID: "node-1", UpdatedAt: stamp.UnixNano(),
				Step:   &structs.DrainStep{StartedAt: stamp, StopAllocs: []string{"alloc-1"}},
				Events: []*structs.NodeEvent{{Message: "stopping 1 allocation", Subsystem: structs.NodeEventSubsystemDrain, Timestamp: stamp}}}},
			{structs.NodeUpdateDrainRequestType, &structs.NodeUpdateDrainRequest{NodeID: "node-1", UpdatedAt: stamp.UnixNano(),
				Step:   &structs.DrainStep{StartedAt: stamp, Complete: true},
				Events: []*structs.NodeEvent{{Message: "drain complete", Subsystem: structs.NodeEventSubsystemDrain, Timestamp: stamp}}}},
			{structs.NodeUpdateDrainRequestType, &structs.NodeUpdateDrainRequest{NodeID: "node-1", UpdatedAt: stamp.UnixNano(),
				DrainStrategy: structs.NewDrainStrategy(structs.DrainSpec{Deadline: time.Minute, IgnoreSystemJobs: true}, stamp.Add(time.Hour))}},
		},
		"release_and_teardown": {
			{structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: node}},
			{structs.CSIVolumeRegisterRequestType, &structs.CSIVolumeRegisterRequest{Volumes: []*structs.CSIVolume{vol}}},
			{structs.PlanApplyRequestType, &structs.PlanApplyRequest{Allocs: []*structs.Allocation{alloc}}},
			claimEntry("data", "alloc-1", structs.CSIVolumeClaimWrite, structs.CSIVolumeClaimStateTaken),
			// The client reports the alloc complete: its claim starts
			// releasing (unpublishing) in the same write.
			{structs.AllocClientUpdateRequestType, &structs.AllocClientUpdateRequest{Timestamp: stamp.UnixNano(),
				Allocs: []*structs.Allocation{{ID: "alloc-1", ClientStatus: structs.AllocClientStatusComplete}}}},
			claimEntry("data", "alloc-1", structs.CSIVolumeClaimWrite, structs.CSIVolumeClaimStateNodeDetached),
			claimEntry("data", "alloc-1", structs.CSIVolumeClaimWrite, structs.CSIVolumeClaimStateFreed),
			{structs.PlanApplyRequestType, &structs.PlanApplyRequest{Job: job}},
			{structs.JobDeregisterRequestType, &structs.JobDeregisterRequest{JobID: "plugin-job"}},
			{structs.NodeDeregisterRequestType, &structs.NodeDeregisterRequest{NodeIDs: []string{"node-1"}}},
			{structs.CSIVolumeDeregisterRequestType, &structs.CSIVolumeDeregisterRequest{VolumeIDs: []string{"data"}}},
		},
	}
}

func TestFSM_Apply_Golden(t *testing.T) {
	for name, entries := range goldenScenarios() {
		t.Run(name, func(t *testing.T) {
			f := newFSM(t)
			for i, res := range applyAll(t, f, entries) {
				if r, ok := entries[i].msg.(refusal); ok {
					err, _ := res.(error)
					must.ErrorIs(t, err, r.err, must.Sprintf("entry %d (%s)", i+1, entries[i].t))
					continue
				}
				switch r := res.(type) {
				case error:
					t.Fatalf("entry %d (%s): %v", i+1, entries[i].t, r)
				case []error:
					for _, err := range r {
						must.NoError(t, err, must.Sprintf("entry %d (%s)", i+1, entries[i].t))
					}
				}
			}
			checkGolden(t, name, dumpTables(t, f.State()))
		})
	}
}

// TestFSM_Apply_GoldenCoversEveryMessageType walks the dispatch table: a
// message type added without a golden scenario fails here.
func TestFSM_Apply_GoldenCoversEveryMessageType(t *testing.T) {
	covered := map[structs.MessageType]bool{}
	for _, entries := range goldenScenarios() {
		for _, e := range entries {
			covered[e.t] = true
		}
	}
	for mt := range dispatch {
		must.True(t, covered[mt], must.Sprintf("message type %s (%d) has no entry in goldenScenarios", mt, mt))
	}
	for mt := range covered {
		must.MapContainsKey(t, dispatch, mt, must.Sprintf("golden entry of type %s, which the FSM does not apply", mt))
	}
}

// TestFSM_Apply_RegisterBatch_EachOnItsOwn: a refused request of a
// register batch writes nothing of its own and leaves the others applied,
// each answered with its own error.
func TestFSM_Apply_RegisterBatch_EachOnItsOwn(t *testing.T) {
	f := newFSM(t)
	node := statetest.NodeWithPlugin("node-1", "hostpath", true, true, true)
	bad := statetest.Volume("x2", "no-such-plugin")
	res := applyAll(t, f, []entry{
		{structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: node}},
		{structs.CSIVolumeRegisterBatchRequestType, &structs.CSIVolumeRegisterBatchRequest{Registers: []structs.CSIVolumeRegisterRequest{
			{Volumes: []*structs.CSIVolume{statetest.Volume("x1", "hostpath")}},
			{Volumes: []*structs.CSIVolume{statetest.Volume("x3", "hostpath"), bad}}, // all or nothing: x3 is not written
			{Volumes: []*structs.CSIVolume{statetest.Volume("x4", "hostpath")}},
		}}},
	})
	errs, ok := res[1].([]error)
	must.True(t, ok, must.Sprintf("a batch answers []error, got %T", res[1]))
	must.SliceLen(t, 3, errs)
	must.NoError(t, errs[0])
	must.ErrorIs(t, errs[1], structs.ErrBadRequest)
	must.StrContains(t, errs[1].Error(), `"no-such-plugin"`)
	must.NoError(t, errs[2])
	for id, want := range map[string]bool{"x1": true, "x3": false, "x2": false, "x4": true} {
		vol, err := f.State().CSIVolumeByID(nil, structs.DefaultNamespace, id)
		must.NoError(t, err)
		must.EqOp(t, want, vol != nil, must.Sprintf("volume %s", id))
	}
}

func TestFSM_Apply_BadEntries(t *testing.T) {
	f := newFSM(t)
	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, ErrEmptyEntry},
		{"unknown type", []byte{200, 0x80}, ErrUnknownMessage},
		{"retired JobRegister (7)", []byte{7, 0x80}, ErrUnknownMessage},
		{"retired AllocUpsert (9)", []byte{9, 0x80}, ErrUnknownMessage},
		{"garbage body", []byte{byte(structs.CSIVolumeRegisterRequestType), 0xc1, 0xff, 0x00}, ErrMalformedEntry},
		{"truncated body", []byte{byte(structs.NodeRegisterRequestType), 0x82, 0xa4}, ErrMalformedEntry},
		{"wrong shape", append([]byte{byte(structs.CSIVolumeDeregisterRequestType)}, mustEncode(t, []int{1, 2, 3})...), ErrMalformedEntry},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := f.Apply(&raft.Log{Index: 7, Type: raft.LogCommand, Data: tc.data})
			err, ok := res.(error)
			must.True(t, ok, must.Sprintf("Apply returned %T, want an error", res))
			must.ErrorIs(t, err, tc.want)
		})
	}
	idx, err := f.State().LatestIndex()
	must.NoError(t, err)
	must.Eq(t, 0, idx, must.Sprint("a rejected entry must write nothing"))
}

func TestFSM_Apply_NilPayloads(t *testing.T) {
	f := newFSM(t)
	res := applyAll(t, f, []entry{
		{structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{}},
		{structs.PlanApplyRequestType, &structs.PlanApplyRequest{Allocs: []*structs.Allocation{nil}}},
	})
	for _, r := range res {
		err, ok := r.(error)
		must.True(t, ok)
		must.ErrorIs(t, err, structs.ErrBadRequest)
	}
}

func TestFSM_Apply_StateErrorsPassThrough(t *testing.T) {
	f := newFSM(t)
	res := applyAll(t, f, []entry{
		{structs.CSIVolumeRegisterRequestType, &structs.CSIVolumeRegisterRequest{Volumes: []*structs.CSIVolume{statetest.Volume("v", "nope")}}},
		{structs.CSIVolumeDeregisterRequestType, &structs.CSIVolumeDeregisterRequest{VolumeIDs: []string{"missing"}}},
	})
	var e *structs.Error
	must.True(t, errors.As(res[0].(error), &e))
	must.ErrorIs(t, res[0].(error), structs.ErrBadRequest)
	must.ErrorIs(t, res[1].(error), structs.ErrNotFound)
}

func mustEncode(t *testing.T, v any) []byte {
	t.Helper()
	buf, err := structs.Encode(0, v)
	must.NoError(t, err)
	return buf[1:]
}
