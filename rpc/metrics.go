package rpc

import (
	"reflect"
	"time"

	"github.com/berth-csi/berth/internal/telemetry"
	"github.com/berth-csi/berth/structs"
)

// blocker is a request that may wait for a change before it is answered
// (structs.QueryOptions with MinQueryIndex, EventNextRequest with a wait).
type blocker interface{ BlockingQuery() bool }

// observe records one method call with args arg that began at start and
// ended with *err: its count by method and code (telemetry.CodeOK, or the
// code the error crosses the wire with; telemetry.Other for a code this
// version does not know, which a peer's answer relayed may carry), and
// its duration by method, code and whether it was a long poll. Only
// registered methods reach it, so the method label is bounded.
func observe(method string, arg reflect.Value, start time.Time, err *error) {
	code := telemetry.CodeOK
	if *err != nil {
		code = string(structs.ErrorCodeOf(*err))
		if !structs.KnownErrorCode(structs.ErrorCode(code)) {
			code = telemetry.Other
		}
	}
	telemetry.RPCRequests.WithLabelValues(method, code).Inc()
	telemetry.RPCRequestDuration.WithLabelValues(method, code, telemetry.BlockingLabel(blocking(arg))).
		Observe(time.Since(start).Seconds())
}

// blocking reports whether arg, a method's args, asks to wait for a change.
func blocking(arg reflect.Value) bool {
	if !arg.IsValid() {
		return false
	}
	if arg.Kind() != reflect.Pointer && arg.CanAddr() {
		arg = arg.Addr()
	}
	if arg.Kind() == reflect.Pointer && arg.IsNil() {
		return false
	}
	b, ok := arg.Interface().(blocker)
	return ok && b.BlockingQuery()
}
