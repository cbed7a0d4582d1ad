package httpapi

import (
	"net/http"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

func TestHandler_Keyring(t *testing.T) {
	created := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	key := &structs.RootKeyMeta{KeyID: "k-2", State: structs.RootKeyStateActive, CreateTime: created, CreateIndex: 51, ModifyIndex: 51}
	replies := map[string]any{
		"Keyring.List": &structs.KeyringListResponse{Keys: []*structs.RootKeyMeta{
			{KeyID: "k-1", State: structs.RootKeyStateInactive, CreateTime: created}, key}, QueryMeta: structs.QueryMeta{Index: 51}},
		"Keyring.Rotate": &structs.KeyringRotateResponse{Key: key, Reencrypted: 3, WriteMeta: structs.WriteMeta{Index: 52}},
	}
	testRoutes(t, replies, []routeCase{
		{"list", "GET", "/v1/operator/keyring/keys", "", "Keyring.List", "51", `[{"KeyID":"k-1","CreateTime":"2026-11-21T12:00:00Z","State":"inactive"`},
		{"rotate put", "PUT", "/v1/operator/keyring/rotate", "", "Keyring.Rotate", "52", `{"Key":{"KeyID":"k-2"`},
		{"rotate post", "POST", "/v1/operator/keyring/rotate?full=true", "", "Keyring.Rotate", "52", `"Reencrypted":3`},
	})

	t.Run("full flag", func(t *testing.T) {
		for target, want := range map[string]bool{
			"/v1/operator/keyring/rotate":            false,
			"/v1/operator/keyring/rotate?full":       true,
			"/v1/operator/keyring/rotate?full=false": false,
		} {
			b := &fakeBackend{replies: replies}
			rec := do(t, b, "PUT", target, "")
			must.EqOp(t, http.StatusOK, rec.Code)
			must.EqOp(t, want, b.last(t).args.(*structs.KeyringRotateRequest).Full, must.Sprint(target))
		}
		b := &fakeBackend{}
		mustBadRequest(t, do(t, b, "PUT", "/v1/operator/keyring/rotate?full=maybe", ""), b, "full")
	})
	t.Run("empty list", func(t *testing.T) {
		rec := do(t, &fakeBackend{}, "GET", "/v1/operator/keyring/keys", "")
		must.EqOp(t, "[]\n", rec.Body.String())
	})
	mustNotAllowed(t, "DELETE", "/v1/operator/keyring/keys", "GET")
	mustNotAllowed(t, "GET", "/v1/operator/keyring/rotate", "POST, PUT")
}
