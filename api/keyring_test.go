package api

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

const rotatedJSON = `{"Key":{"KeyID":"k-2","CreateTime":"2026-03-01T12:00:00Z","State":"active","CreateIndex":31,"ModifyIndex":31},` +
	`"Reencrypted":2,"Index":32}`

func TestKeyring_List(t *testing.T) {
	cs, c := newCannedServer(t, map[string]canned{
		"GET /v1/operator/keyring/keys": {index: "31", body: `[{"KeyID":"k-1","CreateTime":"2026-02-01T12:00:00Z","State":"inactive"},` +
			`{"KeyID":"k-2","CreateTime":"2026-03-01T12:00:00Z","State":"active"}]`},
	})
	keys, qm, err := c.Keyring().List(&QueryOptions{AllowStale: true})
	must.NoError(t, err)
	must.EqOp(t, uint64(31), qm.LastIndex)
	must.SliceLen(t, 2, keys)
	must.EqOp(t, "k-1", keys[0].KeyID)
	must.EqOp(t, structs.RootKeyStateInactive, keys[0].State)
	must.True(t, keys[1].Active())
	must.EqOp(t, time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), keys[1].CreateTime)
	must.StrContains(t, cs.last(t).query, "stale")
}

func TestKeyring_Rotate(t *testing.T) {
	for _, full := range []bool{false, true} {
		cs, c := newCannedServer(t, map[string]canned{
			"PUT /v1/operator/keyring/rotate": {index: "32", body: rotatedJSON},
		})
		resp, wm, err := c.Keyring().Rotate(full)
		must.NoError(t, err)
		must.EqOp(t, uint64(32), wm.LastIndex)
		must.EqOp(t, "k-2", resp.Key.KeyID)
		must.EqOp(t, 2, resp.Reencrypted)
		last := cs.last(t)
		must.EqOp(t, "", last.body)
		if full {
			must.EqOp(t, "full=true", last.query)
		} else {
			must.EqOp(t, "", last.query)
		}
	}
}

func TestKeyring_Rotate_Refused(t *testing.T) {
	_, c := newCannedServer(t, map[string]canned{
		"PUT /v1/operator/keyring/rotate": {status: 403, body: `{"Code":"PermissionDenied","Message":"operator write needed"}`},
	})
	resp, _, err := c.Keyring().Rotate(false)
	must.Nil(t, resp)
	must.ErrorIs(t, err, structs.ErrPermissionDenied)
}
