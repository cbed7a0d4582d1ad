package rpc

import (
	"time"

	"github.com/berth-csi/berth/internal/telemetry"
	"github.com/berth-csi/berth/structs"
)

// observe records one method call that began at start and ended with
// *err: its count and duration by method and code (telemetry.CodeOK, or
// the code the error crosses the wire with). Only registered methods
// reach it, so the method label is bounded.
func observe(method string, start time.Time, err *error) {
	code := telemetry.CodeOK
	if *err != nil {
		code = string(structs.ErrorCodeOf(*err))
	}
	telemetry.RPCRequests.WithLabelValues(method, code).Inc()
	telemetry.RPCRequestDuration.WithLabelValues(method, code).Observe(time.Since(start).Seconds())
}
