package csi

import (
	"context"
	"path"
	"time"

	"google.golang.org/grpc"

	"github.com/berth-csi/berth/internal/telemetry"
)

// observeCall is the unary client interceptor that records every call to
// the plugin: its count and duration by plugin ID, method (the last
// element of the gRPC method, "CreateVolume") and gRPC code ("OK" on
// success; "other" for a number outside gRPC's codes, which a plugin may
// send: the label stays bounded). Calls that never reach gRPC (refused
// before, a closed client) are not counted.
func (c *Client) observeCall(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	start := time.Now()
	err := invoker(ctx, method, req, reply, cc, opts...)
	code := telemetry.Other
	if got := CodeOf(err); got <= CodeUnauthenticated {
		code = got.String()
	}
	name := path.Base(method)
	telemetry.CSICalls.WithLabelValues(c.plugin, name, code).Inc()
	telemetry.CSICallDuration.WithLabelValues(c.plugin, name, code).Observe(time.Since(start).Seconds())
	return err
}
