package api

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

func TestAllocations_Reads(t *testing.T) {
	cs, c := newCannedServer(t, map[string]canned{
		"GET /v1/allocations": {index: "95", body: `[{"ID":"a1","JobID":"db","ClientStatus":"running"}]`},
		"GET /v1/allocation/a1": {index: "96", body: `{"ID":"a1","Name":"db.db[0]","JobID":"db","TaskGroup":"db",` +
			`"Job":{"ID":"db","TaskGroups":[{"Name":"db","Count":1}]},` +
			`"TaskStates":{"server":{"State":"dead","Failed":true,"Restarts":2,` +
			`"Events":[{"Type":"Terminated","Message":"exit code 1","Time":"2026-03-01T12:00:00Z"}]}}}`},
		"GET /v1/allocation/gone": {status: 404, body: `{"Code":"NotFound","Message":"allocation \"gone\" not found"}`},
	})
	t.Run("list", func(t *testing.T) {
		allocs, qm, err := c.Allocations().List(&QueryOptions{Prefix: "a", WaitIndex: 3})
		must.NoError(t, err)
		must.EqOp(t, uint64(95), qm.LastIndex)
		must.Eq(t, []*structs.AllocListStub{{ID: "a1", JobID: "db", ClientStatus: "running"}}, allocs)
		must.EqOp(t, "index=3&prefix=a", cs.last(t).query)
	})
	t.Run("info", func(t *testing.T) {
		a, qm, err := c.Allocations().Info("a1", nil)
		must.NoError(t, err)
		must.EqOp(t, uint64(96), qm.LastIndex)
		must.EqOp(t, "db", a.LookupTaskGroup().Name)
		ts := a.TaskStates["server"]
		must.True(t, ts.Failed)
		must.EqOp(t, 2, ts.Restarts)
		must.Eq(t, []*structs.TaskEvent{{Type: "Terminated", Message: "exit code 1",
			Time: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}}, ts.Events)
	})
	t.Run("missing", func(t *testing.T) {
		_, _, err := c.Allocations().Info("gone", nil)
		must.ErrorIs(t, err, structs.ErrNotFound)
		must.EqError(t, err, `allocation "gone" not found`)
	})
}

func TestAllocations_Logs(t *testing.T) {
	cs, c := newCannedServer(t, map[string]canned{
		"GET /v1/client/fs/logs/a1": {body: "line one\nline two\n"},
		"GET /v1/client/fs/logs/a2": {status: 404, body: `{"Code":"NotFound","Message":"allocation \"a2\" has no task \"web\"; its tasks are \"server\""}`},
	})
	t.Run("reads the bytes", func(t *testing.T) {
		data, size, err := c.Allocations().Logs("a1", "server", LogStderr, 0, 0)
		must.NoError(t, err)
		must.EqOp(t, "line one\nline two\n", string(data))
		must.EqOp(t, int64(-1), size)
		last := cs.last(t)
		must.EqOp(t, "/v1/client/fs/logs/a1", last.path)
		must.EqOp(t, "task=server&type=stderr", last.query)
	})
	t.Run("offset and limit", func(t *testing.T) {
		_, _, err := c.Allocations().Logs("a1", "server", LogStdout, 10, 20)
		must.NoError(t, err)
		must.EqOp(t, "limit=20&offset=10&task=server&type=stdout", cs.last(t).query)
	})
	t.Run("server error", func(t *testing.T) {
		_, _, err := c.Allocations().Logs("a2", "web", LogStdout, 0, 0)
		must.ErrorIs(t, err, structs.ErrNotFound)
		must.ErrorContains(t, err, `its tasks are "server"`)
	})
	t.Run("bad arguments", func(t *testing.T) {
		before := cs.count()
		cases := []struct {
			alloc, task, kind string
			offset            int64
			want              string
		}{
			{"", "t", LogStdout, 0, "no allocation ID given"},
			{"a1", "", LogStdout, 0, `allocation "a1": no task given`},
			{"a1", "t", "both", 0, `log kind "both" is not "stdout" or "stderr"`},
			{"a1", "t", LogStdout, -1, "must not be negative"},
		}
		for _, tc := range cases {
			_, _, err := c.Allocations().Logs(tc.alloc, tc.task, tc.kind, tc.offset, 0)
			must.ErrorContains(t, err, tc.want)
		}
		must.EqOp(t, before, cs.count())
	})
}

func TestAllocations_Logs_Size(t *testing.T) {
	srv := newHeaderServer(t, HeaderLogSize, "4096", "tail\n")
	c, err := NewClient(Config{Address: srv})
	must.NoError(t, err)
	data, size, err := c.Allocations().Logs("a1", "server", LogStdout, 4091, 0)
	must.NoError(t, err)
	must.EqOp(t, "tail\n", string(data))
	must.EqOp(t, int64(4096), size)
}

func TestCSIVolumes_Detach(t *testing.T) {
	cs, c := newCannedServer(t, map[string]canned{
		"DELETE /v1/volume/csi/data/detach": {index: "97", body: `{"Released":["a1","a2"],"Index":97}`},
		"DELETE /v1/volume/csi/none/detach": {status: 404, body: `{"Code":"NotFound","Message":"volume \"none\" not found"}`},
	})
	released, wm, err := c.CSIVolumes().Detach("data", "node-1")
	must.NoError(t, err)
	must.Eq(t, []string{"a1", "a2"}, released)
	must.EqOp(t, uint64(97), wm.LastIndex)
	last := cs.last(t)
	must.EqOp(t, "DELETE", last.method)
	must.EqOp(t, "node=node-1", last.query)

	_, _, err = c.CSIVolumes().Detach("none", "node-1")
	must.ErrorIs(t, err, structs.ErrNotFound)

	before := cs.count()
	_, _, err = c.CSIVolumes().Detach("data", "")
	must.ErrorContains(t, err, `detach volume "data": no node ID given`)
	_, _, err = c.CSIVolumes().Detach("", "n")
	must.ErrorContains(t, err, "no volume ID given")
	must.EqOp(t, before, cs.count())
}

// newHeaderServer answers every request with one header and body.
func newHeaderServer(t *testing.T, header, value, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(header, value)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
