package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

func TestHandler_VolumeList_Filters(t *testing.T) {
	b := &fakeBackend{}
	rec := do(t, b, "GET", "/v1/volumes?type=csi&plugin_id=hp&node_id=n1&prefix=da&index=5", "")
	must.EqOp(t, http.StatusOK, rec.Code)
	args := b.last(t).args.(*structs.CSIVolumeListRequest)
	must.EqOp(t, "hp", args.PluginID)
	must.EqOp(t, "n1", args.NodeID)
	must.EqOp(t, "da", args.Prefix)
	must.EqOp(t, uint64(5), args.MinQueryIndex)
}

// volumeWrite is what register and create requests share.
type volumeWrite struct {
	Volumes []*structs.CSIVolume
	structs.WriteRequest
}

// volumeWriteRoutes are the routes that take a {"Volumes": [...]} body.
var volumeWriteRoutes = []struct {
	name, suffix, rpc string
	args              func(any) volumeWrite
}{
	{"register", "", "CSIVolume.Register", func(a any) volumeWrite {
		r := a.(*structs.CSIVolumeRegisterRequest)
		return volumeWrite{r.Volumes, r.WriteRequest}
	}},
	{"create", "/create", "CSIVolume.Create", func(a any) volumeWrite {
		r := a.(*structs.CSIVolumeCreateRequest)
		return volumeWrite{r.Volumes, r.WriteRequest}
	}},
}

// withSuffix puts suffix at the end of target's path.
func withSuffix(target, suffix string) string {
	path, query, found := strings.Cut(target, "?")
	if found {
		return path + suffix + "?" + query
	}
	return path + suffix
}

func TestHandler_VolumeRegisterAndCreate_Body(t *testing.T) {
	cases := []struct {
		name       string
		target     string
		body       string
		wantStatus int
		wantMsg    string
		check      func(t *testing.T, args volumeWrite)
	}{
		{
			name:       "id defaults to the URL's",
			target:     "/v1/volume/csi/data",
			body:       `{"Volumes":[{"PluginID":"hp","ExternalID":"x"}]}`,
			wantStatus: http.StatusOK,
			check: func(t *testing.T, args volumeWrite) {
				must.EqOp(t, "data", args.Volumes[0].ID)
			},
		},
		{
			name:       "secrets and mount flags reach the RPC unredacted",
			target:     "/v1/volume/csi/data?namespace=prod",
			body:       `{"Volumes":[{"ID":"data","Secrets":{"token":"s3cret"},"MountOptions":{"FSType":"ext4","MountFlags":["uid=1000"]}}]}`,
			wantStatus: http.StatusOK,
			check: func(t *testing.T, args volumeWrite) {
				v := args.Volumes[0]
				must.EqOp(t, "s3cret", v.Secrets["token"])
				must.Eq(t, []string{"uid=1000"}, v.MountOptions.MountFlags)
				must.EqOp(t, "prod", v.Namespace)
				must.EqOp(t, "prod", args.Namespace)
			},
		},
		{
			name:       "forwarded flag from the body is dropped",
			target:     "/v1/volume/csi/data",
			body:       `{"Volumes":[{"ID":"data"}],"Forwarded":true}`,
			wantStatus: http.StatusOK,
			check: func(t *testing.T, args volumeWrite) {
				must.False(t, args.Forwarded)
			},
		},
		{
			name:       "id differs from the URL",
			target:     "/v1/volume/csi/data",
			body:       `{"Volumes":[{"ID":"other"}]}`,
			wantStatus: http.StatusBadRequest,
			wantMsg:    `volume ID "other" in the request body does not match "data" in the URL`,
		},
		{
			name:       "malformed JSON",
			target:     "/v1/volume/csi/data",
			body:       `{"Volumes":[{"ID":"data",}]}`,
			wantStatus: http.StatusBadRequest,
			wantMsg:    "malformed JSON at byte",
		},
		{
			name:       "wrong type",
			target:     "/v1/volume/csi/data",
			body:       `{"Volumes":[{"ID":"data","RequestedCapacityMin":"1GiB"}]}`,
			wantStatus: http.StatusBadRequest,
			wantMsg:    "field Volumes.RequestedCapacityMin must be int64, not a JSON string",
		},
		{
			name:       "empty body",
			target:     "/v1/volume/csi/data",
			body:       ``,
			wantStatus: http.StatusBadRequest,
			wantMsg:    "request body is empty",
		},
		{
			name:       "truncated body",
			target:     "/v1/volume/csi/data",
			body:       `{"Volumes":[`,
			wantStatus: http.StatusBadRequest,
			wantMsg:    "ends early",
		},
		{
			name:       "no volumes",
			target:     "/v1/volume/csi/data",
			body:       `{"Volumes":[]}`,
			wantStatus: http.StatusBadRequest,
			wantMsg:    "request body has no volumes",
		},
		{
			name:       "null volume",
			target:     "/v1/volume/csi/data",
			body:       `{"Volumes":[null]}`,
			wantStatus: http.StatusBadRequest,
			wantMsg:    "Volumes[0] is null",
		},
		{
			name:       "trailing data",
			target:     "/v1/volume/csi/data",
			body:       `{"Volumes":[{"ID":"data"}]} {}`,
			wantStatus: http.StatusBadRequest,
			wantMsg:    "found more data after it",
		},
	}
	for _, route := range volumeWriteRoutes {
		for _, tc := range cases {
			t.Run(route.name+"/"+tc.name, func(t *testing.T) {
				b := &fakeBackend{}
				rec := do(t, b, "PUT", withSuffix(tc.target, route.suffix), tc.body)
				must.EqOp(t, tc.wantStatus, rec.Code, must.Sprint(rec.Body.String()))
				if tc.wantStatus != http.StatusOK {
					mustBadRequest(t, rec, b, tc.wantMsg)
					return
				}
				must.EqOp(t, route.rpc, b.last(t).method)
				tc.check(t, route.args(b.last(t).args))
			})
		}
	}
}

func TestHandler_VolumeCreate_MismatchNamesCreate(t *testing.T) {
	b := &fakeBackend{}
	rec := do(t, b, "PUT", "/v1/volume/csi/data/create", `{"Volumes":[{"ID":"other"}]}`)
	must.EqOp(t, http.StatusBadRequest, rec.Code)
	must.EqOp(t, `volume ID "other" in the request body does not match "data" in the URL; create each volume at its own URL`,
		decodeError(t, rec).Message)
	must.Zero(t, b.count())
}

func TestHandler_VolumeCreate_AnswersSanitizedVolumes(t *testing.T) {
	b := &fakeBackend{replies: map[string]any{
		"CSIVolume.Create": &structs.CSIVolumeCreateResponse{
			Volumes: []*structs.CSIVolume{{
				ID: "data", ExternalID: "vol-1", PluginID: "hp", Capacity: 1 << 30,
				// As if the server forgot to sanitize.
				Secrets:      structs.CSISecrets{"token": "s3cret"},
				MountOptions: &structs.CSIMountOptions{FSType: "ext4", MountFlags: []string{"password=hunter2"}},
			}, nil},
			WriteMeta: structs.WriteMeta{Index: 47},
		},
	}}
	rec := do(t, b, "PUT", "/v1/volume/csi/data/create",
		`{"Volumes":[{"PluginID":"hp","Secrets":{"token":"s3cret"},"RequestedCapacityMin":1073741824,"SnapshotID":"snap-1"}]}`)
	must.EqOp(t, http.StatusOK, rec.Code, must.Sprint(rec.Body.String()))
	must.EqOp(t, "47", rec.Header().Get(headerIndex))
	must.StrNotContains(t, rec.Body.String(), "s3cret")
	must.StrNotContains(t, rec.Body.String(), "hunter2")
	must.StrNotContains(t, rec.Body.String(), `"Secrets"`)

	var got []*structs.CSIVolume
	must.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
	must.Len(t, 1, got)
	must.EqOp(t, "vol-1", got[0].ExternalID)
	must.EqOp(t, int64(1<<30), got[0].Capacity)

	args := b.last(t).args.(*structs.CSIVolumeCreateRequest)
	must.EqOp(t, "s3cret", args.Volumes[0].Secrets["token"])
	must.EqOp(t, int64(1<<30), args.Volumes[0].RequestedCapacityMin)
	must.EqOp(t, "snap-1", args.Volumes[0].SnapshotID)
}

func TestHandler_VolumeCreate_NoVolumesIsEmptyArray(t *testing.T) {
	b := &fakeBackend{replies: map[string]any{
		"CSIVolume.Create": &structs.CSIVolumeCreateResponse{WriteMeta: structs.WriteMeta{Index: 5}},
	}}
	rec := do(t, b, "PUT", "/v1/volume/csi/data/create", `{"Volumes":[{"PluginID":"hp"}]}`)
	must.EqOp(t, http.StatusOK, rec.Code)
	must.EqOp(t, "[]\n", rec.Body.String())
}

func TestHandler_VolumeCreate_ServerErrorPassesThrough(t *testing.T) {
	msg := `volume "data": no healthy controller of plugin "hp"; check "berth plugin status hp"`
	b := &fakeBackend{err: structs.NewError(structs.CodeUnavailable, "%s", msg)}
	rec := do(t, b, "PUT", "/v1/volume/csi/data/create", `{"Volumes":[{"PluginID":"hp"}]}`)
	must.EqOp(t, http.StatusServiceUnavailable, rec.Code)
	e := decodeError(t, rec)
	must.EqOp(t, structs.CodeUnavailable, e.Code)
	must.EqOp(t, msg, e.Message)
}

func TestHandler_VolumeDelete_Secrets(t *testing.T) {
	cases := []struct {
		name        string
		header      []string // values of X-Berth-CSI-Secrets; nil for none
		target      string
		wantSecrets structs.CSISecrets
		wantMsg     string // for a 400
	}{
		{name: "no header", wantSecrets: nil},
		{name: "empty header", header: []string{""}, wantSecrets: nil},
		{name: "one", header: []string{"token=s3cret"}, wantSecrets: structs.CSISecrets{"token": "s3cret"}},
		{name: "several", header: []string{"token=s3cret,user=admin"},
			wantSecrets: structs.CSISecrets{"token": "s3cret", "user": "admin"}},
		{name: "value holds '='", header: []string{"token=YWJj==,dsn=user=a;pass=b"},
			wantSecrets: structs.CSISecrets{"token": "YWJj==", "dsn": "user=a;pass=b"}},
		{name: "empty value", header: []string{"token="}, wantSecrets: structs.CSISecrets{"token": ""}},
		{name: "spaces around keys", header: []string{"token=s3cret, user=admin"},
			wantSecrets: structs.CSISecrets{"token": "s3cret", "user": "admin"}},
		{name: "several header lines", header: []string{"token=s3cret", "user=admin"},
			wantSecrets: structs.CSISecrets{"token": "s3cret", "user": "admin"}},
		{name: "namespace", target: "/v1/volume/csi/data/delete?namespace=prod", header: []string{"token=s3cret"},
			wantSecrets: structs.CSISecrets{"token": "s3cret"}},
		{name: "no '='", header: []string{"token=s3cret,hunter2"},
			wantMsg: "header X-Berth-CSI-Secrets: entry 2 has no '='; send key=value pairs separated by commas"},
		{name: "no key", header: []string{"=hunter2"},
			wantMsg: "header X-Berth-CSI-Secrets: entry 1 has no key before '='"},
		{name: "trailing comma", header: []string{"token=hunter2,"},
			wantMsg: "header X-Berth-CSI-Secrets: entry 2 has no '='"},
		{name: "key twice", header: []string{"token=hunter2,token=hunter3"},
			wantMsg: `header X-Berth-CSI-Secrets: key "token" is given twice`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			target := tc.target
			if target == "" {
				target = "/v1/volume/csi/data/delete"
			}
			b := &fakeBackend{replies: map[string]any{
				"CSIVolume.Delete": &structs.CSIVolumeDeleteResponse{WriteMeta: structs.WriteMeta{Index: 48}}}}
			rec, logs := serveWithSecrets(t, b, "DELETE", target, "", tc.header...)

			// Secrets never come back, in the answer or the logs.
			for _, secret := range []string{"s3cret", "hunter2", "hunter3", "admin", "YWJj", "pass=b"} {
				must.StrNotContains(t, rec.Body.String(), secret)
				must.StrNotContains(t, logs, secret)
			}
			if tc.wantMsg != "" {
				mustBadRequest(t, rec, b, tc.wantMsg)
				return
			}
			must.EqOp(t, http.StatusOK, rec.Code, must.Sprint(rec.Body.String()))
			must.EqOp(t, "48", rec.Header().Get(headerIndex))
			must.EqOp(t, `{"Index":48}`+"\n", rec.Body.String())
			call := b.last(t)
			must.EqOp(t, "CSIVolume.Delete", call.method)
			args := call.args.(*structs.CSIVolumeDeleteRequest)
			must.Eq(t, []string{"data"}, args.VolumeIDs)
			must.Eq(t, tc.wantSecrets, args.Secrets)
			if tc.target != "" {
				must.EqOp(t, "prod", args.Namespace)
			}
		})
	}
}

func TestHandler_VolumeDelete_FailureLogsNoSecrets(t *testing.T) {
	b := &fakeBackend{err: structs.NewError(structs.CodeInternal, `volume "data": controller delete failed: rpc error`)}
	rec, logs := serveWithSecrets(t, b, "DELETE", "/v1/volume/csi/data/delete", "", "token=s3cret")
	must.EqOp(t, http.StatusInternalServerError, rec.Code)
	must.StrContains(t, logs, "request failed")
	must.StrNotContains(t, logs, "s3cret")
	must.StrNotContains(t, rec.Body.String(), "s3cret")
}

func TestHandler_VolumeRegister_BodyTooLarge(t *testing.T) {
	b := &fakeBackend{}
	body := `{"Volumes":[{"ID":"data","Name":"` + strings.Repeat("x", maxBodyBytes) + `"}]}`
	rec := do(t, b, "PUT", "/v1/volume/csi/data", body)
	must.EqOp(t, http.StatusRequestEntityTooLarge, rec.Code)
	must.StrContains(t, decodeError(t, rec).Message, "larger than 8 MiB")
	must.Zero(t, b.count())
}

func TestHandler_VolumeDeregister_Force(t *testing.T) {
	cases := []struct {
		target    string
		wantForce bool
	}{
		{"/v1/volume/csi/data", false},
		{"/v1/volume/csi/data?force=true", true},
		{"/v1/volume/csi/data?force", true},
		{"/v1/volume/csi/data?force=false", false},
	}
	for _, tc := range cases {
		t.Run(tc.target, func(t *testing.T) {
			b := &fakeBackend{}
			rec := do(t, b, "DELETE", tc.target, "")
			must.EqOp(t, http.StatusOK, rec.Code)
			args := b.last(t).args.(*structs.CSIVolumeDeregisterRequest)
			must.Eq(t, []string{"data"}, args.VolumeIDs)
			must.EqOp(t, tc.wantForce, args.Force)
		})
	}
}

func TestHandler_VolumeClaim_Body(t *testing.T) {
	cases := []struct {
		name       string
		body       string
		wantStatus int
		wantMsg    string
	}{
		{"volume id from URL", `{"AllocationID":"a1","NodeID":"n1","Mode":"write","State":"taken"}`, http.StatusOK, ""},
		{"volume id mismatch", `{"VolumeID":"other","AllocationID":"a1"}`, http.StatusBadRequest, `VolumeID "other" does not match volume "data"`},
		{"bad state", `{"AllocationID":"a1","State":"gone"}`, http.StatusBadRequest, `unknown state "gone"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &fakeBackend{}
			rec := do(t, b, "POST", "/v1/volume/csi/data/claim", tc.body)
			must.EqOp(t, tc.wantStatus, rec.Code, must.Sprint(rec.Body.String()))
			if tc.wantStatus != http.StatusOK {
				mustBadRequest(t, rec, b, tc.wantMsg)
				return
			}
			args := b.last(t).args.(*structs.CSIVolumeClaimRequest)
			must.EqOp(t, "data", args.VolumeID)
			must.EqOp(t, "a1", args.AllocationID)
			must.EqOp(t, structs.CSIVolumeClaimWrite, args.Mode)
		})
	}
}

// TestHandler_VolumeClaim_NoNodeSecrets: the secrets a claim answers with
// are for the claiming client's node calls; the HTTP API drops them, keys
// included.
func TestHandler_VolumeClaim_NoNodeSecrets(t *testing.T) {
	b := &fakeBackend{replies: map[string]any{"CSIVolume.Claim": &structs.CSIVolumeClaimResponse{
		NodeSecrets: structs.CSISecrets{"token": "s3cret"}, PublishContext: map[string]string{"device": "/dev/x"}}}}
	rec := do(t, b, "POST", "/v1/volume/csi/data/claim", `{"AllocationID":"a1","NodeID":"n1","Mode":"write","State":"taken"}`)
	must.EqOp(t, http.StatusOK, rec.Code, must.Sprint(rec.Body.String()))
	must.StrContains(t, rec.Body.String(), `"NodeSecrets":null`)
	must.StrNotContains(t, rec.Body.String(), "token")
	must.StrContains(t, rec.Body.String(), `"device":"/dev/x"`)
}
