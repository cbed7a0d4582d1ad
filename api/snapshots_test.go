package api

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

func TestCSIVolumes_CreateSnapshot_SendsBodyAndHeader(t *testing.T) {
	cs, c := newCannedServer(t, map[string]canned{
		"POST /v1/volumes/snapshot": {index: "41", body: `{"Snapshot":{"ID":"snap-1","PluginID":"hp","SourceVolumeID":"data",` +
			`"ExternalSourceVolumeID":"vol-1","SizeBytes":1073741824,"CreateTime":"2026-03-01T12:00:00Z","IsReady":true},"Index":41}`},
	})
	snap, wm, err := c.CSIVolumes().CreateSnapshot("data", "nightly",
		map[string]string{"tier": "cold"}, map[string]string{"token": "s3cret"})
	must.NoError(t, err)
	must.EqOp(t, uint64(41), wm.LastIndex)
	must.Eq(t, &structs.CSISnapshot{ID: "snap-1", PluginID: "hp", SourceVolumeID: "data", ExternalSourceVolumeID: "vol-1",
		SizeBytes: 1 << 30, CreateTime: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), IsReady: true}, snap)

	last := cs.last(t)
	must.EqOp(t, "POST", last.method)
	must.EqOp(t, "/v1/volumes/snapshot", last.path)
	must.EqOp(t, "", last.query)
	must.Eq(t, []string{"token=s3cret"}, last.header.Values(HeaderCSISecrets))
	// The server decodes the body into structs fields: check it reads back intact.
	var req structs.CSISnapshotCreateRequest
	must.NoError(t, json.Unmarshal([]byte(last.body), &req))
	must.EqOp(t, "data", req.VolumeID)
	must.EqOp(t, "nightly", req.Name)
	must.Eq(t, map[string]string{"tier": "cold"}, req.Parameters)
	// Secrets travel in the header only.
	must.StrNotContains(t, last.body, "s3cret")
	must.StrNotContains(t, last.body, "Secrets")
}

func TestCSIVolumes_CreateSnapshot_MinimalBody(t *testing.T) {
	cs, c := newCannedServer(t, map[string]canned{
		"POST /v1/volumes/snapshot": {index: "42", body: `{"Snapshot":{"ID":"snap-2"},"Index":42}`},
	})
	snap, _, err := c.CSIVolumes().CreateSnapshot("data", "", nil, nil)
	must.NoError(t, err)
	must.EqOp(t, "snap-2", snap.ID)
	must.EqOp(t, `{"VolumeID":"data"}`, cs.last(t).body)
	must.Nil(t, cs.last(t).header.Values(HeaderCSISecrets))
}

func TestCSIVolumes_CreateSnapshot_Errors(t *testing.T) {
	msg := `volume "data": plugin "hp" cannot make snapshots`
	cs, c := newCannedServer(t, map[string]canned{})
	t.Run("no volume ID", func(t *testing.T) {
		_, _, err := c.CSIVolumes().CreateSnapshot("", "n", nil, nil)
		must.ErrorContains(t, err, "create snapshot: no volume ID given")
		must.Zero(t, cs.count())
	})
	t.Run("unsendable secret", func(t *testing.T) {
		_, _, err := c.CSIVolumes().CreateSnapshot("data", "n", nil, map[string]string{"token": "hun,ter2"})
		must.ErrorContains(t, err, `api: create snapshot of volume "data": the value of secret "token" holds ','`)
		must.StrNotContains(t, err.Error(), "hunter2")
		must.Zero(t, cs.count())
	})

	cs, c = newCannedServer(t, map[string]canned{
		"POST /v1/volumes/snapshot": {status: 400, body: `{"Code":"BadRequest","Message":` + quote(msg) + `}`},
	})
	t.Run("server refuses", func(t *testing.T) {
		snap, wm, err := c.CSIVolumes().CreateSnapshot("data", "", nil, nil)
		must.Nil(t, snap)
		must.Nil(t, wm)
		must.EqError(t, err, msg)
		must.ErrorIs(t, err, structs.ErrBadRequest)
		must.EqOp(t, 1, cs.count())
	})

	_, c = newCannedServer(t, map[string]canned{
		"POST /v1/volumes/snapshot": {index: "43", body: `{"Index":43}`},
	})
	t.Run("answer without snapshot", func(t *testing.T) {
		_, _, err := c.CSIVolumes().CreateSnapshot("data", "", nil, nil)
		must.ErrorContains(t, err, "the answer carries no snapshot")
	})
}

func TestCSIVolumes_DeleteSnapshot(t *testing.T) {
	cs, c := newCannedServer(t, map[string]canned{
		"DELETE /v1/volumes/snapshot": {index: "44", body: `{"Index":44}`},
	})
	t.Run("params and secrets", func(t *testing.T) {
		wm, err := c.CSIVolumes().DeleteSnapshot("hp", "snap/1 a", map[string]string{"token": "s3cret"})
		must.NoError(t, err)
		must.EqOp(t, uint64(44), wm.LastIndex)
		last := cs.last(t)
		must.EqOp(t, "DELETE", last.method)
		must.EqOp(t, "plugin_id=hp&snapshot_id=snap%2F1+a", last.query)
		must.EqOp(t, "", last.body)
		must.Eq(t, []string{"token=s3cret"}, last.header.Values(HeaderCSISecrets))
	})
	t.Run("missing IDs", func(t *testing.T) {
		before := cs.count()
		_, err := c.CSIVolumes().DeleteSnapshot("", "snap-1", nil)
		must.ErrorContains(t, err, `delete snapshot "snap-1": no plugin ID given`)
		_, err = c.CSIVolumes().DeleteSnapshot("hp", "", nil)
		must.ErrorContains(t, err, "delete snapshot: no snapshot ID given")
		must.EqOp(t, before, cs.count())
	})
}

func TestCSIVolumes_ListSnapshots(t *testing.T) {
	cs, c := newCannedServer(t, map[string]canned{
		"GET /v1/volumes/snapshot": {index: "45", body: `{"Snapshots":[{"ID":"snap-1","PluginID":"hp","IsReady":true}],"NextToken":"t2"}`},
	})
	cases := []struct {
		name        string
		pluginID    string
		perPage     int32
		nextToken   string
		secrets     map[string]string
		q           *QueryOptions
		wantQuery   string
		wantSecrets []string
	}{
		{name: "every plugin, first page", wantQuery: ""},
		{name: "one plugin, paged", pluginID: "hp", perPage: 2, nextToken: "t/1",
			wantQuery: "next_token=t%2F1&per_page=2&plugin_id=hp"},
		{name: "secrets", pluginID: "hp", secrets: map[string]string{"token": "s3cret"},
			wantQuery: "plugin_id=hp", wantSecrets: []string{"token=s3cret"}},
		{name: "argument beats the query options' plugin", pluginID: "hp", q: &QueryOptions{PluginID: "other", AllowStale: true},
			wantQuery: "plugin_id=hp&stale="},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			page, qm, err := c.CSIVolumes().ListSnapshots(tc.pluginID, tc.perPage, tc.nextToken, tc.secrets, tc.q)
			must.NoError(t, err)
			must.EqOp(t, uint64(45), qm.LastIndex)
			must.Len(t, 1, page.Snapshots)
			must.True(t, page.Snapshots[0].IsReady)
			must.EqOp(t, "t2", page.NextToken)
			last := cs.last(t)
			must.EqOp(t, tc.wantQuery, last.query)
			must.Eq(t, tc.wantSecrets, last.header.Values(HeaderCSISecrets))
			if tc.q != nil {
				must.EqOp(t, "other", tc.q.PluginID)
			}
		})
	}
	t.Run("negative per page", func(t *testing.T) {
		before := cs.count()
		_, _, err := c.CSIVolumes().ListSnapshots("hp", -1, "", nil, nil)
		must.ErrorContains(t, err, "list snapshots: per page -1 is negative")
		must.EqOp(t, before, cs.count())
	})
}

func TestCSIVolumes_ListExternal(t *testing.T) {
	msg := `plugin "nolist" cannot list its volumes`
	cs, c := newCannedServer(t, map[string]canned{
		"GET /v1/volumes/external": {index: "46", body: `{"Volumes":[{"ExternalID":"vol-1","VolumeID":"data","CapacityBytes":5},` +
			`{"ExternalID":"vol-x","IsAbnormal":true,"Status":"gone"}],"NextToken":""}`},
	})
	page, qm, err := c.CSIVolumes().ListExternal("hp", 10, "t1", nil)
	must.NoError(t, err)
	must.EqOp(t, uint64(46), qm.LastIndex)
	must.Eq(t, []*structs.CSIExternalVolume{
		{ExternalID: "vol-1", VolumeID: "data", CapacityBytes: 5},
		{ExternalID: "vol-x", IsAbnormal: true, Status: "gone"},
	}, page.Volumes)
	must.EqOp(t, "", page.NextToken)
	must.EqOp(t, "next_token=t1&per_page=10&plugin_id=hp", cs.last(t).query)

	t.Run("no plugin", func(t *testing.T) {
		before := cs.count()
		_, _, err := c.CSIVolumes().ListExternal("", 0, "", nil)
		must.ErrorContains(t, err, "list external volumes: no plugin ID given")
		must.EqOp(t, before, cs.count())
	})

	_, c = newCannedServer(t, map[string]canned{
		"GET /v1/volumes/external": {status: 400, body: `{"Code":"BadRequest","Message":` + quote(msg) + `}`},
	})
	t.Run("plugin cannot list", func(t *testing.T) {
		_, _, err := c.CSIVolumes().ListExternal("nolist", 0, "", nil)
		must.EqError(t, err, msg)
		must.ErrorIs(t, err, structs.ErrBadRequest)
	})
}
