package api

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

func TestCSIVolumes_Create_SendsSpecAndReturnsVolumes(t *testing.T) {
	cs, c := newCannedServer(t, map[string]canned{
		"PUT /v1/volume/csi/data/create": {index: "31", body: `[{"ID":"data","ExternalID":"vol-7","PluginID":"hp","Capacity":1073741824}]`},
	})
	vols, wm, err := c.CSIVolumes().Create(&VolumeSpec{
		ID: "data", PluginID: "hp",
		Secrets:              map[string]string{"token": "s3cret"},
		MountOptions:         &MountOptions{FSType: "ext4", MountFlags: []string{"uid=1000"}},
		RequestedCapacityMin: 1 << 30, RequestedCapacityMax: 2 << 30,
		SnapshotID: "snap-1",
		Topologies: []*structs.CSITopology{{Segments: map[string]string{"zone": "a"}}},
		RequestedCapabilities: []*structs.CSIVolumeCapability{{
			AccessMode: structs.CSIVolumeAccessModeSingleNodeWriter, AttachmentMode: structs.CSIVolumeAttachmentModeFilesystem}},
	})
	must.NoError(t, err)
	must.EqOp(t, uint64(31), wm.LastIndex)
	must.Len(t, 1, vols)
	must.EqOp(t, "vol-7", vols[0].ExternalID)
	must.EqOp(t, int64(1<<30), vols[0].Capacity)

	last := cs.last(t)
	must.EqOp(t, "PUT", last.method)
	must.EqOp(t, "/v1/volume/csi/data/create", last.path)
	must.EqOp(t, "application/json", last.header.Get("Content-Type"))
	// The server decodes the body into structs types: check it reads back intact.
	var req structs.CSIVolumeCreateRequest
	must.NoError(t, json.Unmarshal([]byte(last.body), &req))
	must.Len(t, 1, req.Volumes)
	v := req.Volumes[0]
	must.EqOp(t, "s3cret", v.Secrets["token"])
	must.Eq(t, []string{"uid=1000"}, v.MountOptions.MountFlags)
	must.EqOp(t, int64(1<<30), v.RequestedCapacityMin)
	must.EqOp(t, int64(2<<30), v.RequestedCapacityMax)
	must.EqOp(t, "snap-1", v.SnapshotID)
	must.EqOp(t, "a", v.Topologies[0].Segments["zone"])
	must.EqOp(t, "", v.ExternalID)
	// Secrets travel in the body only.
	must.EqOp(t, "", last.header.Get(HeaderCSISecrets))
}

func TestCSIVolumes_Create_Errors(t *testing.T) {
	msg := `volume "data": plugin "hp" has no healthy controller; check "berth plugin status hp"`
	cs, c := newCannedServer(t, map[string]canned{
		"PUT /v1/volume/csi/data/create": {status: 503, body: `{"Code":"Unavailable","Message":` + quote(msg) + `}`},
	})
	t.Run("no ID", func(t *testing.T) {
		_, _, err := c.CSIVolumes().Create(&VolumeSpec{PluginID: "hp"})
		must.ErrorContains(t, err, "create volume: the volume spec has no ID")
		_, _, err = c.CSIVolumes().Create(nil)
		must.ErrorContains(t, err, "has no ID")
		must.Zero(t, cs.count())
	})
	t.Run("server refuses", func(t *testing.T) {
		vols, wm, err := c.CSIVolumes().Create(&VolumeSpec{ID: "data", PluginID: "hp"})
		must.Nil(t, vols)
		must.Nil(t, wm)
		must.EqError(t, err, msg)
		must.ErrorIs(t, err, structs.ErrUnavailable)
	})
}

func TestCSIVolumes_Delete_SecretsInHeader(t *testing.T) {
	cs, c := newCannedServer(t, map[string]canned{
		"DELETE /v1/volume/csi/data/delete":    {index: "32", body: `{"Index":32}`},
		"DELETE /v1/volume/csi/a b/c/delete":   {index: "33", body: `{"Index":33}`},
		"DELETE /v1/volume/csi/claimed/delete": {status: 409, body: `{"Code":"Conflict","Message":"volume \"claimed\" is claimed by alloc a1"}`},
	})
	cases := []struct {
		name       string
		id         string
		secrets    map[string]string
		wantHeader []string // nil: no header
		wantPath   string
	}{
		{"no secrets", "data", nil, nil, "/v1/volume/csi/data/delete"},
		{"empty secrets", "data", map[string]string{}, nil, "/v1/volume/csi/data/delete"},
		{"one", "data", map[string]string{"token": "s3cret"}, []string{"token=s3cret"}, "/v1/volume/csi/data/delete"},
		{"sorted, values with '='", "data", map[string]string{"user": "admin", "dsn": "a=b=c", "token": "YWJj=="},
			[]string{"dsn=a=b=c,token=YWJj==,user=admin"}, "/v1/volume/csi/data/delete"},
		{"escaped ID", "a b/c", map[string]string{"token": "s3cret"}, []string{"token=s3cret"}, "/v1/volume/csi/a%20b%2Fc/delete"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wm, err := c.CSIVolumes().Delete(tc.id, tc.secrets)
			must.NoError(t, err)
			must.Positive(t, wm.LastIndex)
			last := cs.last(t)
			must.EqOp(t, "DELETE", last.method)
			must.EqOp(t, tc.wantPath, last.rawPath)
			must.EqOp(t, "", last.body)
			must.EqOp(t, "", last.query)
			must.Eq(t, tc.wantHeader, last.header.Values(HeaderCSISecrets))
		})
	}
	t.Run("server refuses", func(t *testing.T) {
		_, err := c.CSIVolumes().Delete("claimed", map[string]string{"token": "s3cret"})
		must.ErrorIs(t, err, structs.ErrConflict)
		must.EqError(t, err, `volume "claimed" is claimed by alloc a1`)
	})
}

func TestCSIVolumes_Delete_UnsendableSecrets(t *testing.T) {
	cs, c := newCannedServer(t, map[string]canned{})
	cases := []struct {
		name    string
		secrets map[string]string
		wantMsg string
	}{
		{"comma in value", map[string]string{"token": "hun,ter2"}, `the value of secret "token" holds ','`},
		{"equals in key", map[string]string{"to=ken": "hunter2"}, `secret key "to=ken" holds '=' or ','`},
		{"comma in key", map[string]string{"a,b": "hunter2"}, `secret key "a,b" holds '=' or ','`},
		{"empty key", map[string]string{"": "hunter2"}, "a secret has an empty key"},
		{"spaces around key", map[string]string{" token": "hunter2"}, `secret key " token" has spaces around it`},
		{"newline in value", map[string]string{"token": "hunter2\nX-Evil: 1"}, `secret "token" holds a control character`},
		{"trailing space in value", map[string]string{"token": "hunter2 "}, `the value of secret "token" ends in a space`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.CSIVolumes().Delete("data", tc.secrets)
			must.ErrorContains(t, err, `api: delete volume "data": `+tc.wantMsg)
			must.StrNotContains(t, err.Error(), "hunter2")
			must.Zero(t, cs.count())
		})
	}
	t.Run("no ID", func(t *testing.T) {
		_, err := c.CSIVolumes().Delete("", nil)
		must.ErrorContains(t, err, "no volume ID given")
	})
}

func TestCSIVolumes_Delete_Unreachable(t *testing.T) {
	c, err := NewClient(Config{Address: "http://127.0.0.1:1", Retry: Retry{Disabled: true}})
	must.NoError(t, err)
	_, err = c.CSIVolumes().Delete("data", map[string]string{"token": "s3cret"})
	var ue *UnreachableError
	must.True(t, errors.As(err, &ue))
	must.StrNotContains(t, err.Error(), "s3cret")
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func (cs *cannedServer) count() int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return len(cs.requests)
}
