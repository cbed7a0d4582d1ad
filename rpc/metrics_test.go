package rpc

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/internal/telemetry"
	"github.com/berth-csi/berth/internal/telemetry/telemetrytest"
	"github.com/berth-csi/berth/internal/testlog"
	"github.com/berth-csi/berth/structs"
)

// TestServer_Metrics_InProcess: each dispatched call counts once, and is
// timed once, by method and code: OK, the method's code, Internal for an
// uncoded error or a panic. An unknown method is refused before dispatch
// and counted nowhere. (The metrics are process-global: the service's
// name is this test's own, and the counts are differences.)
func TestServer_Metrics_InProcess(t *testing.T) {
	srv := NewServer(testlog.Logger(t, "test"))
	t.Cleanup(srv.Shutdown)
	must.NoError(t, srv.Register("MetricsInProcess", &testService{}))
	ctx := testCtx(t)
	cases := []struct {
		method, code string
		want         int
	}{
		{"MetricsInProcess.Echo", telemetry.CodeOK, 2},
		{"MetricsInProcess.Echo", string(structs.CodeInternal), 0},
		{"MetricsInProcess.Fail", string(structs.CodeConflict), 1},
		{"MetricsInProcess.Fail", string(structs.CodeInternal), 1},
		{"MetricsInProcess.Panic", string(structs.CodeInternal), 1},
		{"MetricsInProcess.Nope", string(structs.CodeBadRequest), 0},
	}
	counts, samples := make([]float64, len(cases)), make([]uint64, len(cases)) // before: -count=N runs again
	for i, tc := range cases {
		counts[i] = telemetrytest.Counter(t, telemetry.RPCRequests, tc.method, tc.code)
		samples[i] = telemetrytest.Samples(t, telemetry.RPCRequestDuration, tc.method, tc.code, telemetry.NotBlocking)
	}

	must.NoError(t, srv.Call(ctx, "MetricsInProcess.Echo", &EchoArgs{Name: "a"}, &EchoReply{}))
	must.NoError(t, srv.Call(ctx, "MetricsInProcess.Echo", &EchoArgs{Name: "b"}, &EchoReply{}))
	must.Error(t, srv.Call(ctx, "MetricsInProcess.Fail", &FailArgs{Code: structs.CodeConflict, Message: "claimed", Wrap: true}, &struct{}{}))
	must.Error(t, srv.Call(ctx, "MetricsInProcess.Fail", &FailArgs{Message: "oops", Plain: true}, &struct{}{}))
	must.Error(t, srv.Call(ctx, "MetricsInProcess.Panic", &EchoArgs{Name: "p"}, &EchoReply{}))
	must.Error(t, srv.Call(ctx, "MetricsInProcess.Nope", &EchoArgs{}, &EchoReply{}))

	for i, tc := range cases {
		t.Run(tc.method+" "+tc.code, func(t *testing.T) {
			must.Eq(t, counts[i]+float64(tc.want), telemetrytest.Counter(t, telemetry.RPCRequests, tc.method, tc.code))
			must.Eq(t, samples[i]+uint64(tc.want), telemetrytest.Samples(t, telemetry.RPCRequestDuration, tc.method, tc.code, telemetry.NotBlocking))
		})
	}
}

// TestServer_Metrics_OverTheWire: a call over a connection counts on the
// server's side with the code its caller sees.
func TestServer_Metrics_OverTheWire(t *testing.T) {
	ts := startServer(t, "127.0.0.1:0")
	must.NoError(t, ts.srv.Register("MetricsWire", ts.svc))
	pool := newPool(t)
	echo := telemetrytest.Counter(t, telemetry.RPCRequests, "MetricsWire.Echo", telemetry.CodeOK)
	fail := telemetrytest.Counter(t, telemetry.RPCRequests, "MetricsWire.Fail", string(structs.CodeNotFound))
	failTimed := telemetrytest.Samples(t, telemetry.RPCRequestDuration, "MetricsWire.Fail", string(structs.CodeNotFound), telemetry.NotBlocking)

	must.NoError(t, pool.Call(testCtx(t), ts.addr, "MetricsWire.Echo", &EchoArgs{Name: "w"}, &EchoReply{}))
	err := pool.Call(testCtx(t), ts.addr, "MetricsWire.Fail", &FailArgs{Code: structs.CodeNotFound, Message: "gone"}, &struct{}{})
	assertCoded(t, err, structs.CodeNotFound, "gone")

	must.Eq(t, echo+1, telemetrytest.Counter(t, telemetry.RPCRequests, "MetricsWire.Echo", telemetry.CodeOK))
	must.Eq(t, fail+1, telemetrytest.Counter(t, telemetry.RPCRequests, "MetricsWire.Fail", string(structs.CodeNotFound)))
	must.Eq(t, failTimed+1, telemetrytest.Samples(t, telemetry.RPCRequestDuration, "MetricsWire.Fail", string(structs.CodeNotFound), telemetry.NotBlocking))
}

// blockingService has a method whose args are a blocking query's.
type blockingService struct{}

type blockingArgs struct{ structs.QueryOptions }

func (blockingService) List(args *blockingArgs, reply *EchoReply) error { return nil }

// TestServer_Metrics_BlockingAndUnknownCodes: a long poll (a query with
// MinQueryIndex) is timed under blocking="true", apart from the others,
// so that its wait does not pass for latency; an error code this version
// does not know (one a peer's answer relayed) is counted as "other", never
// as sent, so that no peer can grow the label without bound.
func TestServer_Metrics_BlockingAndUnknownCodes(t *testing.T) {
	srv := NewServer(testlog.Logger(t, "test"))
	t.Cleanup(srv.Shutdown)
	must.NoError(t, srv.Register("MetricsBlocking", blockingService{}))
	must.NoError(t, srv.Register("MetricsCodes", &testService{}))
	ctx := testCtx(t)
	const list = "MetricsBlocking.List"
	blocked := telemetrytest.Samples(t, telemetry.RPCRequestDuration, list, telemetry.CodeOK, telemetry.Blocking)
	direct := telemetrytest.Samples(t, telemetry.RPCRequestDuration, list, telemetry.CodeOK, telemetry.NotBlocking)
	other := telemetrytest.Counter(t, telemetry.RPCRequests, "MetricsCodes.Fail", telemetry.Other)

	must.NoError(t, srv.Call(ctx, list, &blockingArgs{QueryOptions: structs.QueryOptions{MinQueryIndex: 7}}, &EchoReply{}))
	must.NoError(t, srv.Call(ctx, list, &blockingArgs{}, &EchoReply{}))
	must.NoError(t, srv.Call(ctx, list, nil, &EchoReply{}))
	for _, code := range []string{"FromANewerPeer", "FromAnotherOne"} {
		must.Error(t, srv.Call(ctx, "MetricsCodes.Fail", &FailArgs{Code: structs.ErrorCode(code), Message: "x"}, &struct{}{}))
	}

	must.Eq(t, blocked+1, telemetrytest.Samples(t, telemetry.RPCRequestDuration, list, telemetry.CodeOK, telemetry.Blocking))
	must.Eq(t, direct+2, telemetrytest.Samples(t, telemetry.RPCRequestDuration, list, telemetry.CodeOK, telemetry.NotBlocking))
	must.Eq(t, other+2, telemetrytest.Counter(t, telemetry.RPCRequests, "MetricsCodes.Fail", telemetry.Other))
	tel, err := telemetry.New("berth")
	must.NoError(t, err)
	must.StrNotContains(t, telemetrytest.Scrape(t, tel.Handler()), "FromA")
}
