package command

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/fsm"
	"github.com/berth-csi/berth/server/snapshotfile"
	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// bufSink is a raft snapshot sink over a buffer.
type bufSink struct{ bytes.Buffer }

func (s *bufSink) ID() string    { return "fixture" }
func (s *bufSink) Close() error  { return nil }
func (s *bufSink) Cancel() error { return nil }

var _ raft.SnapshotSink = (*bufSink)(nil)

// snapshotFixture is a real snapshot file: an FSM that applied a node
// running hostpath, a volume and an allocation of a job holding its write
// claim, persisted as raft would, wrapped as the servers do.
func snapshotFixture(t *testing.T) ([]byte, structs.SnapshotMeta) {
	t.Helper()
	f, err := fsm.New(nil)
	must.NoError(t, err)
	job := statetest.Job("web")
	alloc := statetest.Alloc(alloc1, node1)
	alloc.JobID = job.ID
	entries := []struct {
		t   structs.MessageType
		msg any
	}{
		{structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: statetest.NodeWithPlugin(node1, "hostpath", false, true, true)}},
		{structs.CSIVolumeRegisterRequestType, &structs.CSIVolumeRegisterRequest{Volumes: []*structs.CSIVolume{statetest.Volume("data", "hostpath")}}},
		{structs.PlanApplyRequestType, &structs.PlanApplyRequest{Job: job, Allocs: []*structs.Allocation{alloc},
			Claims: []structs.CSIVolumeClaimRequest{{VolumeID: "data", AllocationID: alloc1, NodeID: node1,
				Mode: structs.CSIVolumeClaimWrite, State: structs.CSIVolumeClaimStateTaken, Timestamp: fixtureTime}}}},
	}
	for i, e := range entries {
		buf, err := structs.Encode(e.t, e.msg)
		must.NoError(t, err)
		if res, ok := f.ApplyEntry(uint64(i+1), buf).(error); ok {
			t.Fatalf("apply %s: %v", e.t, res)
		}
	}
	snap, err := f.Snapshot()
	must.NoError(t, err)
	var sink bufSink
	must.NoError(t, snap.Persist(&sink))
	meta := structs.SnapshotMeta{ID: "1-3-1772366400000", Index: 3, Term: 1, RaftVersion: 1, Size: int64(sink.Len()), CreateTime: fixtureTime}
	var file bytes.Buffer
	must.NoError(t, snapshotfile.Write(&file, meta, &sink))
	meta.Format = snapshotfile.Format
	return file.Bytes(), meta
}

func writeFile(t *testing.T, name string, b []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	must.NoError(t, os.WriteFile(path, b, 0o600))
	return path
}

func TestOperatorSnapshotInspect(t *testing.T) {
	file, meta := snapshotFixture(t)
	good := writeFile(t, "good.snap", file)

	r := runCLI(t, "http://127.0.0.1:1", "", "operator", "snapshot", "inspect", good)
	must.EqOp(t, 0, r.code, must.Sprint(r.stderr))
	must.StrHasPrefix(t, "ID         = 1-3-1772366400000\n"+
		"Index      = 3\n"+
		"Term       = 1\n"+
		"Saved      = "+formatTime(fixtureTime)+"\n"+
		"Format     = 1\n"+
		"State Size = "+humanBytes(meta.Size)+"\n"+
		"Checksums  = ok (SHA-256)\n\n"+
		"Table ", r.stdout)
	for table, n := range map[string]int{"nodes": 1, "jobs": 1, "allocs": 1, "csi_plugins": 1, "csi_volumes": 1,
		"root_keys": 0, "acl_policies": 0, "acl_tokens": 0} {
		must.RegexMatch(t, regexp.MustCompile(`(?m)^`+table+` +`+strconv.Itoa(n)+`$`), r.stdout)
	}

	r = runCLI(t, "", "", "operator", "snapshot", "inspect", "-json", good)
	must.EqOp(t, 0, r.code, must.Sprint(r.stderr))
	var got snapshotInspection
	must.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	must.Eq(t, meta, *got.Meta)
	must.SliceContains(t, got.Tables, &structs.SnapshotTableCount{Table: "csi_volumes", Rows: 1})

	flipped := append([]byte(nil), file...)
	flipped[len(flipped)/2] ^= 0xff
	bad := []struct {
		name, path, msg string
	}{
		{"truncated", writeFile(t, "cut.snap", file[:len(file)-10]), "cut short or damaged"},
		{"damaged", writeFile(t, "bad.snap", flipped), "inspect a snapshot: "},
		{"not a snapshot", writeFile(t, "job.hcl", []byte(`job "web" {}`)), "not a berth snapshot file"},
		{"missing", filepath.Join(t.TempDir(), "nope.snap"), "no such file or directory"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, "", "", "operator", "snapshot", "inspect", tc.path)
			must.EqOp(t, 1, r.code)
			must.EqOp(t, "", r.stdout)
			must.StrHasPrefix(t, "Error: inspect a snapshot: ", r.stderr)
			must.StrContains(t, r.stderr, tc.msg)
		})
	}
	r = runCLI(t, "", "", "operator", "snapshot", "inspect")
	must.EqOp(t, 2, r.code)
	must.StrContains(t, r.stderr, "this command takes one argument")
}

// opSnapshotServer serves the snapshot route: GET answers body with the
// given Content-Length (cut short when it is larger), PUT records the
// body and answers a restore.
type opSnapshotServer struct {
	body   []byte
	length int
	status int // of GET; 0 is 200

	mu  sync.Mutex
	put [][]byte
}

func (o *opSnapshotServer) start(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/operator/snapshot", func(w http.ResponseWriter, r *http.Request) {
		if o.status != 0 {
			replyError(w, o.status, "PermissionDenied", "Permission denied: token lacks a management token")
			return
		}
		w.Header().Set("Content-Type", "application/gzip")
		w.Header().Set("Content-Length", strconv.Itoa(o.length))
		w.Header().Set("X-Berth-Index", "3")
		_, _ = w.Write(o.body)
	})
	mux.HandleFunc("PUT /v1/operator/snapshot", func(w http.ResponseWriter, r *http.Request) {
		var f fixture
		body := f.record(r)
		o.mu.Lock()
		o.put = append(o.put, body)
		o.mu.Unlock()
		reply(w, 9, &structs.SnapshotRestoreResponse{
			Meta:            &structs.SnapshotMeta{Format: 1, Index: 3, Term: 1, CreateTime: fixtureTime},
			Tables:          []*structs.SnapshotTableCount{{Table: "nodes", Rows: 1}, {Table: "csi_volumes", Rows: 12}},
			MissingRootKeys: []string{keyOld},
			WriteMeta:       structs.WriteMeta{Index: 9},
		})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestOperatorSnapshotSave(t *testing.T) {
	file, _ := snapshotFixture(t)
	flipped := append([]byte(nil), file...)
	flipped[len(flipped)-12] ^= 0xff // in the gzip data's end: its CRC fails
	cases := []struct {
		name     string
		o        *opSnapshotServer
		wantCode int
		stdout   string
		stderr   string
	}{
		{name: "saved", o: &opSnapshotServer{body: file, length: len(file)},
			stdout: "Saved snapshot of index 3 (term 1, " + humanBytes(int64(len(file))) + ") to "},
		{name: "cut short", o: &opSnapshotServer{body: file[:len(file)/2], length: len(file)}, wantCode: 1,
			stderr: "Error: save a snapshot: the download was cut short after"},
		{name: "damaged", o: &opSnapshotServer{body: flipped, length: len(flipped)}, wantCode: 1,
			stderr: "Error: save a snapshot: the downloaded file does not check: snapshotfile:"},
		{name: "refused", o: &opSnapshotServer{status: http.StatusForbidden}, wantCode: 1,
			stderr: "Error: Permission denied: token lacks a management token\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := tc.o.start(t)
			dir := t.TempDir()
			path := filepath.Join(dir, "backup.snap")
			r := runCLI(t, srv.URL, "", "operator", "snapshot", "save", path)
			must.EqOp(t, tc.wantCode, r.code, must.Sprint(r.stderr))
			must.StrContains(t, r.stderr, tc.stderr)
			entries, err := os.ReadDir(dir)
			must.NoError(t, err)
			if tc.wantCode != 0 {
				must.SliceEmpty(t, entries, must.Sprint("a failed save leaves no file behind"))
				if tc.o.status == 0 {
					must.StrContains(t, r.stderr, "nothing was written to "+path)
				}
				return
			}
			must.EqOp(t, tc.stdout+path+"\n", r.stdout)
			must.SliceLen(t, 1, entries)
			saved, err := os.ReadFile(path)
			must.NoError(t, err)
			must.True(t, bytes.Equal(file, saved))
			fi, err := os.Stat(path)
			must.NoError(t, err)
			must.EqOp(t, os.FileMode(0o600), fi.Mode().Perm(), must.Sprint("the file holds the whole state"))
		})
	}
}

func TestOperatorSnapshotRestore(t *testing.T) {
	file, _ := snapshotFixture(t)
	o := &opSnapshotServer{}
	srv := o.start(t)

	r := runCLI(t, srv.URL, "", "operator", "snapshot", "restore", writeFile(t, "good.snap", file))
	must.EqOp(t, 0, r.code, must.Sprint(r.stderr))
	must.EqOp(t, "Restored the snapshot of index 3 (saved "+formatTime(fixtureTime)+") at raft index 9\n\n"+
		"Table        Rows\n"+
		"nodes        1\n"+
		"csi_volumes  12\n", r.stdout)
	must.StrContains(t, r.stderr, "Warning: the leader lacks the material of root key "+keyOld)
	must.StrContains(t, r.stderr, "copy keystore/"+keyOld+".json")
	must.SliceLen(t, 1, o.put)
	must.True(t, bytes.Equal(file, o.put[0]), must.Sprint("the file is sent as it is"))

	r = runCLI(t, srv.URL, "", "operator", "snapshot", "restore", "-json", writeFile(t, "good.snap", file))
	must.EqOp(t, 0, r.code, must.Sprint(r.stderr))
	must.StrContains(t, r.stdout, `"MissingRootKeys": [`)

	// A file that does not check is refused here: nothing is sent.
	r = runCLI(t, srv.URL, "", "operator", "snapshot", "restore", writeFile(t, "cut.snap", file[:len(file)/2]))
	must.EqOp(t, 1, r.code)
	must.StrContains(t, r.stderr, "cut.snap is refused: snapshotfile: the snapshot file is cut short or damaged")
	must.StrContains(t, r.stderr, "nothing was sent")
	must.SliceLen(t, 2, o.put)
}
