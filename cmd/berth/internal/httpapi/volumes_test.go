package httpapi

import (
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

func TestHandler_VolumeRegister_Body(t *testing.T) {
	cases := []struct {
		name       string
		target     string
		body       string
		wantStatus int
		wantMsg    string
		check      func(t *testing.T, args *structs.CSIVolumeRegisterRequest)
	}{
		{
			name:       "id defaults to the URL's",
			target:     "/v1/volume/csi/data",
			body:       `{"Volumes":[{"PluginID":"hp","ExternalID":"x"}]}`,
			wantStatus: http.StatusOK,
			check: func(t *testing.T, args *structs.CSIVolumeRegisterRequest) {
				must.EqOp(t, "data", args.Volumes[0].ID)
			},
		},
		{
			name:       "secrets and mount flags reach the RPC unredacted",
			target:     "/v1/volume/csi/data?namespace=prod",
			body:       `{"Volumes":[{"ID":"data","Secrets":{"token":"s3cret"},"MountOptions":{"FSType":"ext4","MountFlags":["uid=1000"]}}]}`,
			wantStatus: http.StatusOK,
			check: func(t *testing.T, args *structs.CSIVolumeRegisterRequest) {
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
			check: func(t *testing.T, args *structs.CSIVolumeRegisterRequest) {
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
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &fakeBackend{}
			rec := do(t, b, "PUT", tc.target, tc.body)
			must.EqOp(t, tc.wantStatus, rec.Code, must.Sprint(rec.Body.String()))
			if tc.wantStatus != http.StatusOK {
				e := decodeError(t, rec)
				must.EqOp(t, structs.CodeBadRequest, e.Code)
				must.StrContains(t, e.Message, tc.wantMsg)
				must.Zero(t, b.count())
				return
			}
			must.EqOp(t, "CSIVolume.Register", b.last(t).method)
			tc.check(t, b.last(t).args.(*structs.CSIVolumeRegisterRequest))
		})
	}
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
				must.StrContains(t, decodeError(t, rec).Message, tc.wantMsg)
				return
			}
			args := b.last(t).args.(*structs.CSIVolumeClaimRequest)
			must.EqOp(t, "data", args.VolumeID)
			must.EqOp(t, "a1", args.AllocationID)
			must.EqOp(t, structs.CSIVolumeClaimWrite, args.Mode)
		})
	}
}
