package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

var snapshotFixture = &structs.CSISnapshot{
	ID: "snap-1", PluginID: "hp", Name: "nightly", SourceVolumeID: "data", ExternalSourceVolumeID: "vol-1",
	SizeBytes: 1 << 30, CreateTime: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), IsReady: true,
}

func TestHandler_SnapshotCreate_Body(t *testing.T) {
	cases := []struct {
		name       string
		target     string
		body       string
		header     []string
		wantStatus int
		wantMsg    string
		check      func(t *testing.T, args *structs.CSISnapshotCreateRequest)
	}{
		{
			name:       "fields and header secrets reach the RPC",
			target:     "/v1/volumes/snapshot?namespace=prod",
			body:       `{"VolumeID":"data","Name":"nightly","Parameters":{"tier":"cold"}}`,
			header:     []string{"token=s3cret,user=admin"},
			wantStatus: http.StatusOK,
			check: func(t *testing.T, args *structs.CSISnapshotCreateRequest) {
				must.EqOp(t, "data", args.VolumeID)
				must.EqOp(t, "nightly", args.Name)
				must.Eq(t, map[string]string{"tier": "cold"}, args.Parameters)
				must.Eq(t, structs.CSISecrets{"token": "s3cret", "user": "admin"}, args.Secrets)
				must.EqOp(t, "prod", args.Namespace)
			},
		},
		{
			name:       "no name, no parameters, no secrets",
			target:     "/v1/volumes/snapshot",
			body:       `{"VolumeID":"data"}`,
			wantStatus: http.StatusOK,
			check: func(t *testing.T, args *structs.CSISnapshotCreateRequest) {
				must.EqOp(t, "data", args.VolumeID)
				must.EqOp(t, "", args.Name)
				must.Nil(t, args.Parameters)
				must.Nil(t, args.Secrets)
			},
		},
		{
			name:       "forwarded flag in the body is refused, never forwarded",
			target:     "/v1/volumes/snapshot",
			body:       `{"VolumeID":"data","Forwarded":true}`,
			wantStatus: http.StatusBadRequest,
			wantMsg:    `request body: unknown field "Forwarded"`,
		},
		{
			name:       "no volume ID",
			target:     "/v1/volumes/snapshot",
			body:       `{"Name":"nightly"}`,
			wantStatus: http.StatusBadRequest,
			wantMsg:    "request body has no VolumeID",
		},
		{
			name:       "secrets in the body are refused, not dropped",
			target:     "/v1/volumes/snapshot",
			body:       `{"VolumeID":"data","Secrets":{"token":"s3cret"}}`,
			wantStatus: http.StatusBadRequest,
			wantMsg:    "send them in the X-Berth-CSI-Secrets header",
		},
		{
			name:       "empty body",
			target:     "/v1/volumes/snapshot",
			wantStatus: http.StatusBadRequest,
			wantMsg:    "request body is empty",
		},
		{
			name:       "wrong type",
			target:     "/v1/volumes/snapshot",
			body:       `{"VolumeID":"data","Parameters":["a"]}`,
			wantStatus: http.StatusBadRequest,
			wantMsg:    "field Parameters must be map[string]string, not a JSON array",
		},
		{
			name:       "bad secrets header",
			target:     "/v1/volumes/snapshot",
			body:       `{"VolumeID":"data"}`,
			header:     []string{"token=s3cret,hunter2"},
			wantStatus: http.StatusBadRequest,
			wantMsg:    "header X-Berth-CSI-Secrets: entry 2 has no '='",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &fakeBackend{replies: map[string]any{
				"CSIVolume.CreateSnapshot": &structs.CSISnapshotCreateResponse{
					Snapshot: snapshotFixture, WriteMeta: structs.WriteMeta{Index: 50}},
			}}
			rec, logs := serveWithSecrets(t, b, "POST", tc.target, tc.body, tc.header...)
			for _, secret := range []string{"s3cret", "hunter2", "admin"} {
				must.StrNotContains(t, rec.Body.String(), secret)
				must.StrNotContains(t, logs, secret)
			}
			must.EqOp(t, tc.wantStatus, rec.Code, must.Sprint(rec.Body.String()))
			if tc.wantStatus != http.StatusOK {
				mustBadRequest(t, rec, b, tc.wantMsg)
				return
			}
			must.EqOp(t, "50", rec.Header().Get(headerIndex))
			var got struct {
				Snapshot *structs.CSISnapshot
				Index    uint64
			}
			must.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
			must.Eq(t, snapshotFixture, got.Snapshot)
			must.EqOp(t, uint64(50), got.Index)
			call := b.last(t)
			must.EqOp(t, "CSIVolume.CreateSnapshot", call.method)
			tc.check(t, call.args.(*structs.CSISnapshotCreateRequest))
		})
	}
}

func TestHandler_SnapshotDelete_Params(t *testing.T) {
	cases := []struct {
		name    string
		target  string
		header  []string
		wantMsg string // for a 400
	}{
		{name: "both", target: "/v1/volumes/snapshot?plugin_id=hp&snapshot_id=snap-1", header: []string{"token=s3cret"}},
		{name: "no plugin_id", target: "/v1/volumes/snapshot?snapshot_id=snap-1",
			wantMsg: "query parameter plugin_id is required: the ID of the plugin that holds the snapshot"},
		{name: "empty plugin_id", target: "/v1/volumes/snapshot?plugin_id=&snapshot_id=snap-1",
			wantMsg: "query parameter plugin_id is required"},
		{name: "no snapshot_id", target: "/v1/volumes/snapshot?plugin_id=hp",
			wantMsg: "query parameter snapshot_id is required: the plugin's ID of the snapshot"},
		{name: "neither names plugin_id first", target: "/v1/volumes/snapshot",
			wantMsg: "query parameter plugin_id is required"},
		{name: "bad secrets header", target: "/v1/volumes/snapshot?plugin_id=hp&snapshot_id=snap-1", header: []string{"=s3cret"},
			wantMsg: "header X-Berth-CSI-Secrets: entry 1 has no key before '='"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &fakeBackend{replies: map[string]any{
				"CSIVolume.DeleteSnapshot": &structs.CSISnapshotDeleteResponse{WriteMeta: structs.WriteMeta{Index: 51}}}}
			rec, logs := serveWithSecrets(t, b, "DELETE", tc.target, "", tc.header...)
			must.StrNotContains(t, rec.Body.String()+logs, "s3cret")
			if tc.wantMsg != "" {
				mustBadRequest(t, rec, b, tc.wantMsg)
				return
			}
			must.EqOp(t, http.StatusOK, rec.Code, must.Sprint(rec.Body.String()))
			must.EqOp(t, "51", rec.Header().Get(headerIndex))
			must.EqOp(t, `{"Index":51}`+"\n", rec.Body.String())
			args := b.last(t).args.(*structs.CSISnapshotDeleteRequest)
			must.EqOp(t, "hp", args.PluginID)
			must.EqOp(t, "snap-1", args.SnapshotID)
			must.Eq(t, structs.CSISecrets{"token": "s3cret"}, args.Secrets)
		})
	}
}

func TestHandler_SnapshotList_Params(t *testing.T) {
	cases := []struct {
		name          string
		target        string
		header        []string
		wantPluginID  string
		wantPerPage   int32
		wantNextToken string
		wantSecrets   structs.CSISecrets
	}{
		{name: "every plugin", target: "/v1/volumes/snapshot"},
		{name: "one plugin, paged", target: "/v1/volumes/snapshot?plugin_id=hp&per_page=2&next_token=t%2F2",
			wantPluginID: "hp", wantPerPage: 2, wantNextToken: "t/2"},
		{name: "per_page 0 lets the plugin choose", target: "/v1/volumes/snapshot?per_page=0"},
		{name: "largest per_page", target: "/v1/volumes/snapshot?per_page=2147483647", wantPerPage: 2147483647},
		{name: "secrets", target: "/v1/volumes/snapshot?plugin_id=hp", header: []string{"token=s3cret"},
			wantPluginID: "hp", wantSecrets: structs.CSISecrets{"token": "s3cret"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &fakeBackend{}
			rec, logs := serveWithSecrets(t, b, "GET", tc.target, "", tc.header...)
			must.EqOp(t, http.StatusOK, rec.Code, must.Sprint(rec.Body.String()))
			must.StrNotContains(t, rec.Body.String()+logs, "s3cret")
			args := b.last(t).args.(*structs.CSISnapshotListRequest)
			must.EqOp(t, tc.wantPluginID, args.PluginID)
			must.EqOp(t, tc.wantPerPage, args.PerPage)
			must.EqOp(t, tc.wantNextToken, args.NextToken)
			must.Eq(t, tc.wantSecrets, args.Secrets)
		})
	}
}

func TestHandler_SnapshotList_Answer(t *testing.T) {
	t.Run("a page", func(t *testing.T) {
		b := &fakeBackend{replies: map[string]any{
			"CSIVolume.ListSnapshots": &structs.CSISnapshotListResponse{
				Snapshots: []*structs.CSISnapshot{snapshotFixture}, NextToken: "t2",
				QueryMeta: structs.QueryMeta{Index: 52, KnownLeader: true}},
		}}
		rec := do(t, b, "GET", "/v1/volumes/snapshot?plugin_id=hp", "")
		must.EqOp(t, http.StatusOK, rec.Code)
		must.EqOp(t, "52", rec.Header().Get(headerIndex))
		must.EqOp(t, "true", rec.Header().Get(headerKnownLeader))
		var got struct {
			Snapshots []*structs.CSISnapshot
			NextToken string
		}
		must.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
		must.Eq(t, []*structs.CSISnapshot{snapshotFixture}, got.Snapshots)
		must.EqOp(t, "t2", got.NextToken)
		// The meta is in the headers, not the body.
		must.StrNotContains(t, rec.Body.String(), `"Index"`)
	})
	t.Run("none is an empty array", func(t *testing.T) {
		rec := do(t, &fakeBackend{}, "GET", "/v1/volumes/snapshot", "")
		must.EqOp(t, http.StatusOK, rec.Code)
		must.EqOp(t, `{"Snapshots":[],"NextToken":""}`+"\n", rec.Body.String())
		must.EqOp(t, "0", rec.Header().Get(headerIndex))
	})
}

func TestHandler_ExternalVolumeList(t *testing.T) {
	t.Run("a page, unknown volumes keep an empty VolumeID", func(t *testing.T) {
		vols := []*structs.CSIExternalVolume{
			{ExternalID: "vol-1", VolumeID: "data", CapacityBytes: 1 << 30, PublishedExternalNodeIDs: []string{"hp-node"}},
			{ExternalID: "vol-x", IsAbnormal: true, Status: "disk gone"},
		}
		b := &fakeBackend{replies: map[string]any{
			"CSIVolume.ListExternal": &structs.CSIVolumeExternalListResponse{
				Volumes: vols, NextToken: "t2", QueryMeta: structs.QueryMeta{Index: 53}},
		}}
		rec := do(t, b, "GET", "/v1/volumes/external?plugin_id=hp&per_page=2&next_token=t1&stale", "")
		must.EqOp(t, http.StatusOK, rec.Code, must.Sprint(rec.Body.String()))
		must.EqOp(t, "53", rec.Header().Get(headerIndex))
		var got struct {
			Volumes   []*structs.CSIExternalVolume
			NextToken string
		}
		must.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
		must.Eq(t, vols, got.Volumes)
		must.EqOp(t, "t2", got.NextToken)

		call := b.last(t)
		must.EqOp(t, "CSIVolume.ListExternal", call.method)
		args := call.args.(*structs.CSIVolumeExternalListRequest)
		must.EqOp(t, "hp", args.PluginID)
		must.EqOp(t, int32(2), args.PerPage)
		must.EqOp(t, "t1", args.NextToken)
		must.True(t, args.AllowStale)
	})
	t.Run("none is an empty array", func(t *testing.T) {
		rec := do(t, &fakeBackend{}, "GET", "/v1/volumes/external?plugin_id=hp", "")
		must.EqOp(t, http.StatusOK, rec.Code)
		must.EqOp(t, `{"Volumes":[],"NextToken":""}`+"\n", rec.Body.String())
	})
	t.Run("plugin that cannot list", func(t *testing.T) {
		msg := `plugin "hp" cannot list its volumes (no LIST_VOLUMES capability)`
		rec := do(t, &fakeBackend{err: structs.NewError(structs.CodeBadRequest, "%s", msg)}, "GET", "/v1/volumes/external?plugin_id=hp", "")
		must.EqOp(t, http.StatusBadRequest, rec.Code)
		must.EqOp(t, msg, decodeError(t, rec).Message)
	})
}

func TestHandler_PagedLists_BadParamsAre400(t *testing.T) {
	cases := []struct {
		name, method, target, wantMsg string
	}{
		{"external without plugin_id", "GET", "/v1/volumes/external",
			"query parameter plugin_id is required: the ID of the plugin whose volumes to list"},
		{"external with empty plugin_id", "GET", "/v1/volumes/external?plugin_id=&per_page=2", "query parameter plugin_id is required"},
		{"per_page not a number", "GET", "/v1/volumes/snapshot?per_page=ten", `query parameter per_page="ten" must be a non-negative integer`},
		{"per_page negative", "GET", "/v1/volumes/snapshot?per_page=-1", `per_page="-1" must be a non-negative integer`},
		{"per_page fraction", "GET", "/v1/volumes/external?plugin_id=hp&per_page=1.5", `per_page="1.5" must be a non-negative integer`},
		{"per_page too large", "GET", "/v1/volumes/external?plugin_id=hp&per_page=2147483648", `per_page="2147483648" must be a non-negative integer below 2^31`},
		{"index not a number", "GET", "/v1/volumes/external?plugin_id=hp&index=x", `index="x"`},
		{"snapshot list secrets header", "GET", "/v1/volumes/snapshot", "header X-Berth-CSI-Secrets"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &fakeBackend{}
			var header []string
			if strings.Contains(tc.name, "secrets header") {
				header = []string{"nokey"}
			}
			rec, _ := serveWithSecrets(t, b, tc.method, tc.target, "", header...)
			mustBadRequest(t, rec, b, tc.wantMsg)
		})
	}
}

func TestHandler_SnapshotRoutes_WrongMethod(t *testing.T) {
	cases := []struct {
		method, target, wantAllow string
	}{
		{"PUT", "/v1/volumes/snapshot", "DELETE, GET, POST"},
		{"POST", "/v1/volumes/external?plugin_id=hp", "GET"},
		{"DELETE", "/v1/volumes/external?plugin_id=hp", "GET"},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.target, func(t *testing.T) {
			mustNotAllowed(t, tc.method, tc.target, tc.wantAllow)
		})
	}
}
