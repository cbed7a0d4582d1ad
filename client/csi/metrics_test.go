package csi

import (
	"context"
	"testing"

	"github.com/shoenig/test/must"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/berth-csi/berth/client/csitest"
	"github.com/berth-csi/berth/internal/telemetry"
	"github.com/berth-csi/berth/internal/telemetry/telemetrytest"
	"github.com/berth-csi/berth/internal/testlog"
)

// TestClient_Metrics_MockDriver: the interceptor counts and times every
// call that reaches the plugin by plugin ID, CSI method and gRPC code; a
// request refused before gRPC is not counted. (The metrics are
// process-global: the plugin ID is this test's own, and the counts are
// differences.)
func TestClient_Metrics_MockDriver(t *testing.T) {
	const plugin = "metrics-mock"
	p := csitest.StartMockDriver(t, csitest.MockOptions{})
	c, err := Dial(context.Background(), p.Socket, testlog.Logger(t, "test"), WithPluginID(plugin))
	must.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	cases := []struct {
		method, code string
		want         int
	}{
		{"Probe", telemetry.CodeOK, 2},
		{"ValidateVolumeCapabilities", "NotFound", 1},
		{"ValidateVolumeCapabilities", telemetry.CodeOK, 0},
	}
	counts, samples := make([]float64, len(cases)), make([]uint64, len(cases)) // before: -count=N runs again
	for i, tc := range cases {
		counts[i] = telemetrytest.Counter(t, telemetry.CSICalls, plugin, tc.method, tc.code)
		samples[i] = telemetrytest.Samples(t, telemetry.CSICallDuration, plugin, tc.method, tc.code)
	}

	for range 2 {
		_, err := c.Probe(ctx)
		must.NoError(t, err)
	}
	_, err = c.ValidateVolumeCapabilities(ctx, &ValidateRequest{ExternalVolumeID: "99", Capabilities: writer})
	must.Eq(t, CodeNotFound, CodeOf(err))
	_, err = c.ValidateVolumeCapabilities(ctx, &ValidateRequest{ExternalVolumeID: "1"}) // no capability: refused here
	must.ErrorIs(t, err, ErrInvalidRequest)

	for i, tc := range cases {
		t.Run(tc.method+" "+tc.code, func(t *testing.T) {
			must.Eq(t, counts[i]+float64(tc.want), telemetrytest.Counter(t, telemetry.CSICalls, plugin, tc.method, tc.code))
			must.Eq(t, samples[i]+uint64(tc.want), telemetrytest.Samples(t, telemetry.CSICallDuration, plugin, tc.method, tc.code))
		})
	}
}

// TestClient_Metrics_UnknownCode: a code outside gRPC's (a plugin may send
// any number) is counted as "other", never as the number, so that a
// plugin cannot grow the label without bound; gRPC's own codes are kept.
func TestClient_Metrics_UnknownCode(t *testing.T) {
	const plugin, method = "metrics-codes", "/csi.v1.Node/NodeGetInfo"
	c := &Client{plugin: plugin}
	other := telemetrytest.Counter(t, telemetry.CSICalls, plugin, "NodeGetInfo", telemetry.Other)
	unauth := telemetrytest.Counter(t, telemetry.CSICalls, plugin, "NodeGetInfo", "Unauthenticated")
	for _, code := range []codes.Code{999, 1 << 20, codes.Unauthenticated} {
		invoke := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error {
			return status.Error(code, "refused")
		}
		must.Error(t, c.observeCall(context.Background(), method, nil, nil, nil, invoke))
	}
	must.Eq(t, other+2, telemetrytest.Counter(t, telemetry.CSICalls, plugin, "NodeGetInfo", telemetry.Other))
	must.Eq(t, unauth+1, telemetrytest.Counter(t, telemetry.CSICalls, plugin, "NodeGetInfo", "Unauthenticated"))
}
