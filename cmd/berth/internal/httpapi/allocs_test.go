package httpapi

import (
	"net/http"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

func TestHandler_AllocLogs_PlainBytes(t *testing.T) {
	log := "line one\n\x00binary\n"
	b := &fakeBackend{replies: map[string]any{
		"ClientAllocations.Logs": &structs.ClientAllocLogsResponse{Data: []byte(log), Size: 4096},
	}}
	rec := do(t, b, "GET", "/v1/client/fs/logs/a1?task=server&type=stderr&offset=10&limit=20&stale", "")
	must.EqOp(t, http.StatusOK, rec.Code, must.Sprint(rec.Body.String()))
	must.EqOp(t, log, rec.Body.String())
	must.EqOp(t, "text/plain; charset=utf-8", rec.Header().Get("Content-Type"))
	must.EqOp(t, "4096", rec.Header().Get(headerLogSize))
	args := b.last(t).args.(*structs.ClientAllocLogsRequest)
	must.Eq(t, &structs.ClientAllocLogsRequest{AllocID: "a1", Task: "server", Kind: "stderr", Offset: 10, Limit: 20,
		QueryOptions: structs.QueryOptions{AllowStale: true}}, args)
}

func TestHandler_AllocLogs_DefaultsToStdout(t *testing.T) {
	b := &fakeBackend{}
	rec := do(t, b, "GET", "/v1/client/fs/logs/a1?task=server", "")
	must.EqOp(t, http.StatusOK, rec.Code)
	must.EqOp(t, "", rec.Body.String())
	args := b.last(t).args.(*structs.ClientAllocLogsRequest)
	must.EqOp(t, "stdout", args.Kind)
	must.EqOp(t, int64(0), args.Offset)
	must.EqOp(t, int64(0), args.Limit)
}

func TestHandler_AllocLogs_BadParameters(t *testing.T) {
	cases := []struct {
		name, target, wantMsg string
	}{
		{"no task", "/v1/client/fs/logs/a1?type=stdout", "query parameter task is required"},
		{"bad type", "/v1/client/fs/logs/a1?task=t&type=stdin", `type="stdin" must be stdout or stderr`},
		{"bad offset", "/v1/client/fs/logs/a1?task=t&offset=-3", `offset="-3" must be a non-negative number of bytes`},
		{"bad limit", "/v1/client/fs/logs/a1?task=t&limit=lots", `limit="lots" must be a non-negative number of bytes`},
		{"bad wait", "/v1/client/fs/logs/a1?task=t&wait=soon", `wait="soon"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &fakeBackend{}
			mustBadRequest(t, do(t, b, "GET", tc.target, ""), b, tc.wantMsg)
		})
	}
}

func TestHandler_AllocLogs_ErrorsAreJSON(t *testing.T) {
	b := &fakeBackend{err: structs.NewError(structs.CodeNotFound, `allocation "a1" has no task "web"`)}
	rec := do(t, b, "GET", "/v1/client/fs/logs/a1?task=web", "")
	must.EqOp(t, http.StatusNotFound, rec.Code)
	must.EqOp(t, "application/json", rec.Header().Get("Content-Type"))
	must.EqOp(t, `allocation "a1" has no task "web"`, decodeError(t, rec).Message)
}

func TestHandler_VolumeDetach(t *testing.T) {
	t.Run("args", func(t *testing.T) {
		b := &fakeBackend{}
		rec := do(t, b, "DELETE", "/v1/volume/csi/data/detach?node=n1&namespace=prod", "")
		must.EqOp(t, http.StatusOK, rec.Code)
		args := b.last(t).args.(*structs.CSIVolumeDetachRequest)
		must.Eq(t, &structs.CSIVolumeDetachRequest{VolumeID: "data", NodeID: "n1",
			WriteRequest: structs.WriteRequest{Namespace: "prod"}}, args)
	})
	t.Run("node required", func(t *testing.T) {
		b := &fakeBackend{}
		mustBadRequest(t, do(t, b, "DELETE", "/v1/volume/csi/data/detach", ""), b, `volume "data": query parameter node is required`)
	})
	t.Run("server error", func(t *testing.T) {
		b := &fakeBackend{err: structs.NewError(structs.CodeNotFound, `volume "data" has no claims on node "n1"`)}
		rec := do(t, b, "DELETE", "/v1/volume/csi/data/detach?node=n1", "")
		must.EqOp(t, http.StatusNotFound, rec.Code)
		must.EqOp(t, `volume "data" has no claims on node "n1"`, decodeError(t, rec).Message)
	})
}
