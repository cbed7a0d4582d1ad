package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/shoenig/test/must"
	"github.com/ugorji/go/codec"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/structs"
)

func secretVolume() *structs.CSIVolume {
	return &structs.CSIVolume{ID: "data", Namespace: "default", PluginID: "hp",
		Secrets:      structs.CSISecrets{"token": "volume-secret-XYZ"},
		MountOptions: &structs.CSIMountOptions{FSType: "ext4", MountFlags: []string{"password=flag-secret-XYZ"}},
	}
}

// A caller that asks for msgpack gets it, with nothing the JSON would not
// show; any other caller gets JSON.
func TestHandler_Msgpack_OnlyWhenAsked(t *testing.T) {
	b := &fakeBackend{replies: map[string]any{"CSIVolume.Get": &structs.CSIVolumeGetResponse{
		Volume: secretVolume(), QueryMeta: structs.QueryMeta{Index: 7}}}}
	for _, accept := range []string{"application/msgpack", "application/json;q=0.5, application/msgpack"} {
		req := httptest.NewRequest("GET", "/v1/volume/csi/data", nil)
		req.Header.Set("Accept", accept)
		rec := httptest.NewRecorder()
		New(b, testLogger(t)).ServeHTTP(rec, req)
		must.EqOp(t, http.StatusOK, rec.Code)
		must.EqOp(t, structs.MediaTypeMsgpack, rec.Header().Get("Content-Type"))
		must.False(t, bytes.Contains(rec.Body.Bytes(), []byte("XYZ")), must.Sprintf("a secret leaks: %q", rec.Body.String()))
		var got structs.CSIVolume
		must.NoError(t, codec.NewDecoderBytes(rec.Body.Bytes(), structs.HTTPMsgpackHandle).Decode(&got))
		must.EqOp(t, "data", got.ID)
		must.Eq(t, structs.CSISecrets{"token": structs.Redacted}, got.Secrets)
	}

	rec := do(t, b, "GET", "/v1/volume/csi/data", "")
	must.EqOp(t, "application/json", rec.Header().Get("Content-Type"))
	var js map[string]any
	must.NoError(t, json.Unmarshal(rec.Body.Bytes(), &js))
}

// The Go api client asks for msgpack and reads what JSON would give it,
// lists included.
func TestHandler_Msgpack_APIClientReadsIt(t *testing.T) {
	b := &fakeBackend{replies: map[string]any{
		"CSIVolume.Get": &structs.CSIVolumeGetResponse{Volume: secretVolume(), QueryMeta: structs.QueryMeta{Index: 7}},
		"Node.List": &structs.NodeListResponse{Nodes: []*structs.NodeListStub{{ID: "n1", Status: "ready"}, {ID: "n2"}},
			NextToken: "n3", QueryMeta: structs.QueryMeta{Index: 9}},
	}}
	var sawAccept []string
	h := New(b, testLogger(t))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sawAccept = append(sawAccept, r.Header.Get("Accept"))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	c, err := api.NewClient(api.Config{Address: srv.URL})
	must.NoError(t, err)

	vol, qm, err := c.CSIVolumes().Info("data", nil)
	must.NoError(t, err)
	must.EqOp(t, uint64(7), qm.LastIndex)
	must.Eq(t, structs.CSISecrets{"token": structs.Redacted}, vol.Secrets)
	must.Eq(t, []string{structs.Redacted}, vol.MountOptions.MountFlags)

	nodes, qm, err := c.Nodes().List(&api.QueryOptions{PerPage: 2})
	must.NoError(t, err)
	must.SliceLen(t, 2, nodes)
	must.EqOp(t, "ready", nodes[0].Status)
	must.EqOp(t, "n3", qm.NextToken)
	must.Eq(t, 2, b.last(t).args.(*structs.NodeListRequest).PerPage)
	must.Eq(t, []string{structs.MediaTypeMsgpack, structs.MediaTypeMsgpack}, sawAccept)
}
